package backend

import (
	"encoding/json"
	"strings"
)

// opencodeSpec drives `opencode run --format json`: the prompt on stdin
// (opencode appends piped stdin to the message), NDJSON events on stdout, and
// the sandbox as a permission block in OPENCODE_CONFIG_CONTENT, because
// opencode has no sandbox flag.
type opencodeSpec struct{}

func (opencodeSpec) name() string         { return "opencode" }
func (opencodeSpec) exe() string          { return "opencode" }
func (opencodeSpec) label() string        { return "opencode" }
func (opencodeSpec) installHint() string  { return "npm install -g opencode-ai" }
func (opencodeSpec) sandboxes() []string  { return AllSandboxes }
func (opencodeSpec) sessions() bool       { return false }
func (opencodeSpec) emptyMessage() string { return "opencode completed without producing output" }
func (opencodeSpec) parser() outputParser { return &opencodeParser{} }

// opencodePermissions maps a sandbox mode to opencode's permission config.
func opencodePermissions(sandbox string) string {
	switch sandbox {
	case DangerFullAccess:
		return `{"permission":"allow"}`
	case WorkspaceWrite:
		return `{"permission":{"edit":"allow","bash":"deny","webfetch":"deny","external_directory":"deny"}}`
	}
	return `{"permission":{"edit":"deny","bash":"deny","webfetch":"deny","external_directory":"deny"}}`
}

func (opencodeSpec) plan(req Request, exe, _ string) (Invocation, error) {
	args := []string{"run", "--format", "json", "--dir", req.Repo}
	if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	env := setEnv(req.Env, "OPENCODE_CONFIG_CONTENT", opencodePermissions(req.Sandbox))
	return Invocation{Path: exe, Args: args, Dir: req.Repo, Env: env, Stdin: req.Prompt}, nil
}

type opencodeEvent struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      *struct {
		Type   string   `json:"type"`
		Text   string   `json:"text"`
		Tool   string   `json:"tool"`
		Cost   *float64 `json:"cost"`
		Tokens *struct {
			Input  *int64 `json:"input"`
			Output *int64 `json:"output"`
		} `json:"tokens"`
	} `json:"part"`
	Error *struct {
		Name string `json:"name"`
		Data *struct {
			Message string `json:"message"`
		} `json:"data"`
	} `json:"error"`
}

// opencodeParser reads opencode's NDJSON events as they arrive.
type opencodeParser struct {
	texts                   []string
	errs                    []string
	sawJSON                 bool
	res                     Result
	in, out                 int64
	cost                    float64
	haveIn, haveOut, haveCo bool
}

func (o *opencodeParser) line(s *stream, stderr bool, raw []byte) {
	if stderr {
		stderrProblem(s, string(raw))
		return
	}
	var ev opencodeEvent
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &ev) != nil || ev.Type == "" {
		return
	}
	o.sawJSON = true
	if ev.SessionID != "" {
		o.res.SessionID = ev.SessionID
	}
	switch ev.Type {
	case "step_start":
		s.status("waiting for the model")
	case "text":
		if ev.Part != nil && ev.Part.Text != "" {
			o.texts = append(o.texts, ev.Part.Text)
			s.text(ev.Part.Text)
		}
	case "tool_use":
		s.progress()
		if ev.Part != nil {
			s.status("using " + ev.Part.Tool)
		}
	case "step_finish":
		s.progress()
		if p := ev.Part; p != nil {
			if p.Tokens != nil && p.Tokens.Input != nil {
				o.in += *p.Tokens.Input
				o.haveIn = true
			}
			if p.Tokens != nil && p.Tokens.Output != nil {
				o.out += *p.Tokens.Output
				o.haveOut = true
			}
			if p.Cost != nil {
				o.cost += *p.Cost
				o.haveCo = true
			}
		}
	case "error":
		msg := "opencode reported an error"
		if ev.Error != nil {
			if ev.Error.Data != nil && ev.Error.Data.Message != "" {
				msg = ev.Error.Data.Message
			} else if ev.Error.Name != "" {
				msg = ev.Error.Name
			}
		}
		o.errs = append(o.errs, msg)
		s.problem(msg)
	}
}

func (o *opencodeParser) result(_ *stream, _ Invocation, out Output) (Result, error) {
	if !o.sawJSON {
		return Result{Answer: strings.TrimSpace(string(out.Stdout))}, nil
	}
	if len(o.errs) > 0 && len(o.texts) == 0 {
		msg := strings.Join(o.errs, "\n")
		e := &Error{Backend: "opencode", Message: msg, Hint: "run `opencode run` by hand in the repository to see more"}
		if k := diagnose(strings.ToLower(msg)); k != KindFailed {
			e.Kind, e.Hint = k, hintFor("opencode", k)
		}
		return Result{}, e
	}
	res := o.res
	res.Answer = strings.Join(o.texts, "\n")
	if o.haveIn {
		res.InputTokens = ptr(o.in)
	}
	if o.haveOut {
		res.OutputTokens = ptr(o.out)
	}
	if o.haveCo {
		res.CostUSD = ptr(o.cost)
	}
	return res, nil
}

func (o *opencodeParser) detail(_ *stream, _ Invocation, out Output) string {
	if len(o.errs) > 0 {
		return strings.Join(o.errs, "\n")
	}
	return defaultDetail(out)
}
