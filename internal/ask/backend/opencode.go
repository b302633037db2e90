package backend

import (
	"bufio"
	"bytes"
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

type opencodeStream struct {
	texts   []string
	errs    []string
	sawJSON bool
	res     Result
}

func readOpencode(stdout []byte) opencodeStream {
	var s opencodeStream
	var in, out int64
	var haveIn, haveOut bool
	var cost float64
	var haveCost bool
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		var ev opencodeEvent
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil || ev.Type == "" {
			continue
		}
		s.sawJSON = true
		if ev.SessionID != "" {
			s.res.SessionID = ev.SessionID
		}
		switch ev.Type {
		case "text":
			if ev.Part != nil && ev.Part.Text != "" {
				s.texts = append(s.texts, ev.Part.Text)
			}
		case "step_finish":
			if p := ev.Part; p != nil {
				if p.Tokens != nil && p.Tokens.Input != nil {
					in += *p.Tokens.Input
					haveIn = true
				}
				if p.Tokens != nil && p.Tokens.Output != nil {
					out += *p.Tokens.Output
					haveOut = true
				}
				if p.Cost != nil {
					cost += *p.Cost
					haveCost = true
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
			s.errs = append(s.errs, msg)
		}
	}
	if haveIn {
		s.res.InputTokens = ptr(in)
	}
	if haveOut {
		s.res.OutputTokens = ptr(out)
	}
	if haveCost {
		s.res.CostUSD = ptr(cost)
	}
	return s
}

func (opencodeSpec) parse(_ Invocation, out Output) (Result, error) {
	s := readOpencode(out.Stdout)
	if !s.sawJSON {
		return Result{Answer: strings.TrimSpace(string(out.Stdout))}, nil
	}
	if len(s.errs) > 0 && len(s.texts) == 0 {
		msg := strings.Join(s.errs, "\n")
		e := &Error{Backend: "opencode", Message: msg, Hint: "run `opencode run` by hand in the repository to see more"}
		if notLoggedIn(strings.ToLower(msg)) {
			e.Kind, e.Hint = KindNotLoggedIn, loginHint("opencode")
		}
		return Result{}, e
	}
	res := s.res
	res.Answer = strings.Join(s.texts, "\n")
	return res, nil
}

func (opencodeSpec) detail(_ Invocation, out Output) string {
	if s := readOpencode(out.Stdout); len(s.errs) > 0 {
		return strings.Join(s.errs, "\n")
	}
	return defaultDetail(out)
}
