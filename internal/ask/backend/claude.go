package backend

import (
	"encoding/json"
	"sort"
	"strings"
)

// claudeSpec drives Claude Code (2.1): `claude -p` with the prompt on stdin,
// JSON output for session id, usage and cost, and tool lists for the sandbox.
type claudeSpec struct{}

// Read-only tools. WebFetch/WebSearch are left out on purpose: a read-only
// reviewer with network tools is an exfiltration path.
const (
	claudeReadTools  = "Read,Grep,Glob,LS"
	claudeWriteTools = "Read,Grep,Glob,LS,Edit,Write"
)

func (claudeSpec) name() string         { return "claude" }
func (claudeSpec) exe() string          { return "claude" }
func (claudeSpec) label() string        { return "claude" }
func (claudeSpec) installHint() string  { return "npm install -g @anthropic-ai/claude-code" }
func (claudeSpec) sandboxes() []string  { return AllSandboxes }
func (claudeSpec) sessions() bool       { return true }
func (claudeSpec) emptyMessage() string { return "claude completed without producing output" }

func (claudeSpec) plan(req Request, exe, _ string) (Invocation, error) {
	if req.Sandbox == DangerFullAccess && req.Euid == 0 {
		if v, _ := lookupEnv(req.Env, "IS_SANDBOX"); v != "1" {
			return Invocation{}, &Error{Backend: "claude", Kind: KindRefused,
				Message: "claude refuses --dangerously-skip-permissions when run as root",
				Hint:    "set IS_SANDBOX=1 if this is a disposable container, or use --sandbox workspace-write"}
		}
	}
	maxTurns := "10"
	if v, ok := lookupEnv(req.Env, "CLAUDE_MAX_TURNS"); ok && strings.TrimSpace(v) != "" {
		maxTurns = strings.TrimSpace(v)
	}
	args := []string{"-p", "--output-format", "json"}
	if req.Session.Resume {
		args = append(args, "-r", req.Session.ID)
	} else {
		args = append(args, "--add-dir", req.Repo)
		if req.Session.ID != "" {
			args = append(args, "--session-id", req.Session.ID)
		}
	}
	if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	args = append(args, "--max-turns", maxTurns)
	switch req.Sandbox {
	case DangerFullAccess:
		args = append(args, "--dangerously-skip-permissions")
	case WorkspaceWrite:
		args = append(args, "--tools", claudeWriteTools, "--allowedTools", claudeWriteTools)
	default:
		args = append(args, "--tools", claudeReadTools, "--allowedTools", claudeReadTools)
	}
	args = append(args, "--disable-slash-commands", "--disallowedTools", "Task")
	if !req.Session.Persist {
		args = append(args, "--no-session-persistence")
	}
	// Claude's nested-session guard would fire when relay runs inside Claude Code.
	env := dropEnv(req.Env, "CLAUDECODE", "CLAUDE_CODE_SESSION")
	return Invocation{Path: exe, Args: args, Dir: req.Repo, Env: env, Stdin: req.Prompt}, nil
}

type claudeResult struct {
	Type         string   `json:"type"`
	Subtype      string   `json:"subtype"`
	IsError      bool     `json:"is_error"`
	Result       *string  `json:"result"`
	SessionID    string   `json:"session_id"`
	TotalCostUSD *float64 `json:"total_cost_usd"`
	Usage        *struct {
		InputTokens              *int64 `json:"input_tokens"`
		OutputTokens             *int64 `json:"output_tokens"`
		CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
	ModelUsage map[string]struct {
		CostUSD      float64 `json:"costUSD"`
		OutputTokens int64   `json:"outputTokens"`
	} `json:"modelUsage"`
}

func (claudeSpec) parse(_ Invocation, out Output) (Result, error) {
	var r claudeResult
	if !decodeTrailingJSON(out.Stdout, &r) || r.Type != "result" {
		return Result{Answer: strings.TrimSpace(string(out.Stdout))}, nil
	}
	if r.IsError {
		msg := "claude reported an error"
		if r.Result != nil && strings.TrimSpace(*r.Result) != "" {
			msg = strings.TrimSpace(*r.Result)
		} else if r.Subtype != "" {
			msg += ": " + r.Subtype
		}
		e := &Error{Backend: "claude", Message: msg, Hint: "run `claude -p` by hand in the repository to see more"}
		if notLoggedIn(strings.ToLower(msg)) {
			e.Kind, e.Hint = KindNotLoggedIn, loginHint("claude")
		} else if r.Subtype == "error_max_turns" {
			e.Hint = "claude ran out of turns: raise CLAUDE_MAX_TURNS or ask a narrower question"
		}
		return Result{}, e
	}
	res := Result{SessionID: r.SessionID, CostUSD: r.TotalCostUSD}
	if r.Result != nil {
		res.Answer = *r.Result
	}
	if u := r.Usage; u != nil {
		if u.InputTokens != nil {
			// the whole prompt: uncached plus cache writes and reads
			in := *u.InputTokens
			for _, p := range []*int64{u.CacheCreationInputTokens, u.CacheReadInputTokens} {
				if p != nil {
					in += *p
				}
			}
			res.InputTokens = ptr(in)
		}
		res.OutputTokens = u.OutputTokens
	}
	if len(r.ModelUsage) > 0 {
		names := make([]string, 0, len(r.ModelUsage))
		for n := range r.ModelUsage {
			names = append(names, n)
		}
		sort.Strings(names)
		best := names[0]
		for _, n := range names[1:] {
			if r.ModelUsage[n].OutputTokens > r.ModelUsage[best].OutputTokens {
				best = n
			}
		}
		res.Model = best
	}
	return res, nil
}

func (claudeSpec) detail(_ Invocation, out Output) string {
	var r claudeResult
	if decodeTrailingJSON(out.Stdout, &r) && r.Type == "result" && r.Result != nil && strings.TrimSpace(*r.Result) != "" {
		if s := strings.TrimSpace(string(out.Stderr)); s != "" {
			return s + "\n" + strings.TrimSpace(*r.Result)
		}
		return strings.TrimSpace(*r.Result)
	}
	return defaultDetail(out)
}

// jsonNumber is used by the qwen/opencode parsers for loosely typed counters.
func jsonInt(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}
