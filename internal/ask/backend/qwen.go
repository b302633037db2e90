package backend

import (
	"encoding/json"
	"strings"
)

// qwenSpec drives Qwen Code (0.15): a positional prompt runs once (stdin
// instead above ArgvPromptMax); --approval-mode maps the sandbox; a client
// UUID pinned with --session-id is resumed with -r.
type qwenSpec struct{}

func (qwenSpec) name() string         { return "qwen" }
func (qwenSpec) exe() string          { return "qwen" }
func (qwenSpec) label() string        { return "qwen" }
func (qwenSpec) installHint() string  { return "npm install -g @qwen-code/qwen-code" }
func (qwenSpec) sandboxes() []string  { return AllSandboxes }
func (qwenSpec) sessions() bool       { return true }
func (qwenSpec) emptyMessage() string { return "qwen completed without producing output" }

func (qwenSpec) plan(req Request, exe, _ string) (Invocation, error) {
	mode := "plan"
	switch req.Sandbox {
	case WorkspaceWrite:
		mode = "auto-edit" // qwen spells it with a hyphen, gemini with an underscore
	case DangerFullAccess:
		mode = "yolo"
	}
	args := []string{"--approval-mode", mode, "--output-format", "json"}
	if req.Model != "" {
		args = append(args, "-m", req.Model)
	}
	if req.Session.ID != "" {
		if req.Session.Resume {
			args = append(args, "-r", req.Session.ID)
		} else {
			args = append(args, "--session-id", req.Session.ID)
		}
	}
	if len(req.Prompt) <= ArgvPromptMax {
		return Invocation{Path: exe, Args: append(args, req.Prompt), Dir: req.Repo, Env: req.Env}, nil
	}
	return Invocation{Path: exe, Args: args, Dir: req.Repo, Env: req.Env, Stdin: req.Prompt}, nil
}

// qwenEvents reads `-o json`: one array of Claude-style events.
func qwenEvents(stdout []byte) ([]map[string]any, bool) {
	var evs []map[string]any
	s := strings.TrimSpace(string(stdout))
	if i := strings.Index(s, "["); i > 0 {
		s = s[i:]
	}
	if json.Unmarshal([]byte(s), &evs) != nil {
		return nil, false
	}
	return evs, true
}

func usageOf(m map[string]any) (in, out *int64) {
	u, _ := m["usage"].(map[string]any)
	if u == nil {
		return nil, nil
	}
	if v, ok := jsonInt(u["input_tokens"]); ok {
		in = ptr(v)
	}
	if v, ok := jsonInt(u["output_tokens"]); ok {
		out = ptr(v)
	}
	return in, out
}

func (qwenSpec) parse(_ Invocation, out Output) (Result, error) {
	evs, ok := qwenEvents(out.Stdout)
	if !ok {
		return Result{Answer: strings.TrimSpace(string(out.Stdout))}, nil
	}
	var res Result
	var lastAssistant string
	var sumIn, sumOut int64
	var haveIn, haveOut bool
	for _, ev := range evs {
		switch ev["type"] {
		case "system":
			if m, ok := ev["model"].(string); ok {
				res.Model = m
			}
			if s, ok := ev["session_id"].(string); ok {
				res.SessionID = s
			}
		case "assistant":
			msg, _ := ev["message"].(map[string]any)
			if msg == nil {
				continue
			}
			var text []string
			content, _ := msg["content"].([]any)
			for _, c := range content {
				if cm, ok := c.(map[string]any); ok && cm["type"] == "text" {
					if t, ok := cm["text"].(string); ok {
						text = append(text, t)
					}
				}
			}
			if len(text) > 0 {
				lastAssistant = strings.Join(text, "")
			}
			if in, o := usageOf(msg); in != nil || o != nil {
				if in != nil {
					sumIn += *in
					haveIn = true
				}
				if o != nil {
					sumOut += *o
					haveOut = true
				}
			}
		case "result":
			if isErr, _ := ev["is_error"].(bool); isErr {
				msg, _ := ev["result"].(string)
				if msg == "" {
					if e, ok := ev["error"].(map[string]any); ok {
						msg, _ = e["message"].(string)
					}
				}
				if msg == "" {
					msg = "qwen reported an error"
				}
				e := &Error{Backend: "qwen", Message: msg, Hint: "run `qwen` by hand in the repository to see more"}
				if notLoggedIn(strings.ToLower(msg)) {
					e.Kind, e.Hint = KindNotLoggedIn, loginHint("qwen")
				}
				return Result{}, e
			}
			if r, ok := ev["result"].(string); ok {
				res.Answer = r
			}
			if in, o := usageOf(ev); in != nil || o != nil {
				res.InputTokens, res.OutputTokens = in, o
			}
			if c, ok := ev["total_cost_usd"].(float64); ok {
				res.CostUSD = ptr(c)
			}
		}
	}
	if res.Answer == "" {
		res.Answer = lastAssistant
	}
	if res.InputTokens == nil && haveIn {
		res.InputTokens = ptr(sumIn)
	}
	if res.OutputTokens == nil && haveOut {
		res.OutputTokens = ptr(sumOut)
	}
	return res, nil
}

func (qwenSpec) detail(_ Invocation, out Output) string {
	if evs, ok := qwenEvents(out.Stdout); ok {
		for _, ev := range evs {
			if ev["type"] == "result" {
				if r, ok := ev["result"].(string); ok && strings.TrimSpace(r) != "" {
					return strings.TrimSpace(r)
				}
			}
		}
	}
	return defaultDetail(out)
}
