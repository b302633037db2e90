package backend

import (
	"encoding/json"
	"sort"
	"strings"
)

// geminiSpec drives the Gemini CLI (0.61): the prompt on stdin with a short
// -p (gemini appends its text after stdin and needs it to run headless),
// stream-json output, --skip-trust so an untrusted folder does not exit 55,
// and --approval-mode for the sandbox because --sandbox needs Docker or
// Podman on Linux.
type geminiSpec struct{}

// geminiPromptSuffix is the -p text; gemini appends it after the stdin prompt.
const geminiPromptSuffix = "(end of request)"

func (geminiSpec) name() string         { return "gemini" }
func (geminiSpec) exe() string          { return "gemini" }
func (geminiSpec) label() string        { return "gemini" }
func (geminiSpec) installHint() string  { return "npm install -g @google/gemini-cli" }
func (geminiSpec) sandboxes() []string  { return AllSandboxes }
func (geminiSpec) sessions() bool       { return true }
func (geminiSpec) emptyMessage() string { return "gemini completed without producing output" }
func (geminiSpec) parser() outputParser { return &geminiParser{} }

func geminiApproval(sandbox string) []string {
	switch sandbox {
	case WorkspaceWrite:
		return []string{"--approval-mode", "auto_edit"}
	case DangerFullAccess:
		return []string{"--yolo"}
	}
	return []string{"--approval-mode", "plan"}
}

func (geminiSpec) plan(req Request, exe, _ string) (Invocation, error) {
	args := []string{"--skip-trust"}
	args = append(args, geminiApproval(req.Sandbox)...)
	args = append(args, "--include-directories", req.Repo, "--output-format", "stream-json")
	if req.Model != "" {
		args = append(args, "-m", req.Model)
	}
	if req.Session.ID != "" {
		if req.Session.Resume {
			args = append(args, "--resume", req.Session.ID)
		} else {
			args = append(args, "--session-id", req.Session.ID)
		}
	}
	args = append(args, "--prompt", geminiPromptSuffix)
	return Invocation{Path: exe, Args: args, Dir: req.Repo, Env: req.Env, Stdin: req.Prompt, CheckPromptRead: true}, nil
}

// geminiLine is one event of `gemini -o stream-json`.
type geminiLine struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"`
	Role      string `json:"role"`
	Content   string `json:"content"`
	Delta     bool   `json:"delta"`
	ToolName  string `json:"tool_name"`
	Name      string `json:"name"`
	Status    string `json:"status"`
	Severity  string `json:"severity"`
	Message   string `json:"message"`
	Error     *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Stats *struct {
		InputTokens  *int64 `json:"input_tokens"`
		OutputTokens *int64 `json:"output_tokens"`
		Models       map[string]struct {
			OutputTokens int64 `json:"output_tokens"`
		} `json:"models"`
	} `json:"stats"`
}

// geminiParser reads gemini's stream-json as it arrives; gemini logs its
// retries and sign-in failures on stderr, so that is read too.
type geminiParser struct {
	session string
	model   string
	answer  strings.Builder
	result_ *geminiLine
	errs    []string
	sawJSON bool
}

func (g *geminiParser) line(s *stream, stderr bool, raw []byte) {
	if stderr {
		stderrProblem(s, string(raw))
		return
	}
	var ev geminiLine
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &ev) != nil || ev.Type == "" {
		return
	}
	g.sawJSON = true
	switch ev.Type {
	case "init":
		g.session, g.model = ev.SessionID, ev.Model
		s.status("started (model " + ev.Model + ")")
		s.status("waiting for the model")
	case "message":
		if ev.Role == "assistant" {
			g.answer.WriteString(ev.Content)
			s.text(ev.Content)
		}
	case "tool_use":
		s.progress()
		s.status("using " + firstNonEmpty(ev.ToolName, ev.Name))
	case "tool_result":
		s.progress()
		s.status("read a tool's result")
	case "error":
		msg := ev.Message
		if ev.Error != nil && ev.Error.Message != "" {
			msg = ev.Error.Message
		}
		g.errs = append(g.errs, msg)
		s.problem(msg)
	case "result":
		r := ev
		g.result_ = &r
		if r.Error != nil && r.Error.Message != "" {
			g.errs = append(g.errs, r.Error.Message)
			s.problem(r.Error.Message)
		}
	}
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func (g *geminiParser) result(_ *stream, _ Invocation, out Output) (Result, error) {
	if !g.sawJSON {
		return Result{Answer: strings.TrimSpace(string(out.Stdout))}, nil
	}
	if r := g.result_; r != nil && r.Status != "" && r.Status != "success" && g.answer.Len() == 0 {
		msg := "gemini reported an error"
		if len(g.errs) > 0 {
			msg = strings.Join(g.errs, "\n")
		}
		e := &Error{Backend: "gemini", Message: msg, Hint: "run `gemini` by hand in the repository to see more"}
		if k := diagnose(strings.ToLower(msg)); k != KindFailed {
			e.Kind, e.Hint = k, hintFor("gemini", k)
		}
		return Result{}, e
	}
	res := Result{Answer: g.answer.String(), SessionID: g.session, Model: g.model}
	if r := g.result_; r != nil && r.Stats != nil {
		res.InputTokens, res.OutputTokens = r.Stats.InputTokens, r.Stats.OutputTokens
		if len(r.Stats.Models) > 0 { // the model that wrote the answer, not the router
			names := make([]string, 0, len(r.Stats.Models))
			for n := range r.Stats.Models {
				names = append(names, n)
			}
			sort.Strings(names)
			best := names[0]
			for _, n := range names[1:] {
				if r.Stats.Models[n].OutputTokens > r.Stats.Models[best].OutputTokens {
					best = n
				}
			}
			res.Model = best
		}
	}
	return res, nil
}

func (g *geminiParser) detail(_ *stream, _ Invocation, out Output) string {
	if len(g.errs) > 0 {
		return strings.Join(g.errs, "\n")
	}
	return defaultDetail(out)
}
