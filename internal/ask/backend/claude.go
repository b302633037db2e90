package backend

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// claudeSpec drives Claude Code (2.1): `claude -p` with the prompt on stdin,
// stream-json output (events as it works, then a result with session id,
// usage and cost), and tool lists for the sandbox.
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
func (claudeSpec) parser() outputParser { return &claudeParser{backend: "claude"} }

// streamJSON is the output mode both claude and qwen use: events as they happen.
var streamJSON = []string{"--output-format", "stream-json", "--verbose", "--include-partial-messages"}

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
	args := append([]string{"-p"}, streamJSON...)
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
	if len(req.Schema) > 0 {
		args = append(args, "--json-schema", string(req.Schema))
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

// claudeLine is one stream-json event of claude (and of qwen, which copies it).
type claudeLine struct {
	Type         string          `json:"type"`
	Subtype      string          `json:"subtype"`
	Status       string          `json:"status"`
	Model        string          `json:"model"`
	SessionID    string          `json:"session_id"`
	Attempt      int             `json:"attempt"`
	MaxRetries   int             `json:"max_retries"`
	ErrorStatus  *int            `json:"error_status"`
	ErrorText    json.RawMessage `json:"error"`
	IsError      bool            `json:"is_error"`
	Result       *string         `json:"result"`
	TotalCostUSD *float64        `json:"total_cost_usd"`
	Usage        *claudeUsage    `json:"usage"`
	ModelUsage   map[string]struct {
		CostUSD      float64 `json:"costUSD"`
		OutputTokens int64   `json:"outputTokens"`
	} `json:"modelUsage"`
	Structured json.RawMessage `json:"structured_output"`
	Event      *struct {
		Type         string `json:"type"`
		ContentBlock *struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"content_block"`
		Delta *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"delta"`
	} `json:"event"`
	Message *struct {
		Model   string `json:"model"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
			Name string `json:"name"`
		} `json:"content"`
		Usage *claudeUsage `json:"usage"`
	} `json:"message"`
}

type claudeUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

// claudeParser reads claude's (or qwen's) stream-json as it arrives.
type claudeParser struct {
	backend   string
	model     string
	session   string
	lastText  string // the last assistant message's text: the answer when no result comes
	result_   *claudeLine
	sawJSON   bool
	assistIn  int64 // qwen: usage summed over assistant messages
	assistOut int64
	haveUsage bool
	// block holds the start of a text block until it is clearly not one of
	// qwen's "[API Error: …]" texts, which it prints as if the model said them.
	block    strings.Builder
	blockOut bool
}

const apiErrorPrefix = "[API Error"

func (c *claudeParser) line(s *stream, stderr bool, raw []byte) {
	if stderr {
		if c.backend == "qwen" { // qwen logs its retries and failures there
			stderrProblem(s, string(raw))
		}
		return
	}
	var ev claudeLine
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &ev) != nil || ev.Type == "" {
		return
	}
	c.sawJSON = true
	if ev.SessionID != "" {
		c.session = ev.SessionID
	}
	switch ev.Type {
	case "system":
		switch ev.Subtype {
		case "init":
			c.model = ev.Model
			s.status("started (model " + ev.Model + ")")
		case "status":
			if ev.Status == "requesting" {
				s.status("waiting for the model")
			}
		case "api_retry":
			c.retry(s, ev)
		}
	case "stream_event":
		if ev.Event != nil {
			c.streamEvent(s, ev)
		}
	case "assistant":
		if ev.Message == nil || ev.Message.Model == "<synthetic>" {
			return // claude's own error text dressed as a message; the result says it too
		}
		var text []string
		for _, part := range ev.Message.Content {
			switch part.Type {
			case "text":
				text = append(text, part.Text)
			case "tool_use":
				s.progress()
			}
		}
		if len(text) > 0 {
			c.lastText = strings.Join(text, "")
			if t := strings.TrimSpace(c.lastText); strings.HasPrefix(t, apiErrorPrefix) {
				// qwen's failed request, worded as the model's answer: never an answer
				s.fail(diagnose(strings.ToLower(t)), t)
				return
			}
			s.progress()
		}
		if u := ev.Message.Usage; u != nil {
			if u.InputTokens != nil {
				c.assistIn += *u.InputTokens
				c.haveUsage = true
			}
			if u.OutputTokens != nil {
				c.assistOut += *u.OutputTokens
				c.haveUsage = true
			}
		}
	case "user":
		s.status("read a tool's result")
	case "result":
		r := ev
		c.result_ = &r
		if r.IsError {
			if r.Result != nil {
				s.problem(*r.Result)
			}
		} else {
			s.status("done")
		}
	}
}

// retry reads claude's api_retry: no HTTP status means the request never
// reached a server.
func (c *claudeParser) retry(s *stream, ev claudeLine) {
	var detail string
	_ = json.Unmarshal(ev.ErrorText, &detail)
	msg := fmt.Sprintf("API request failed (attempt %d of %d)", ev.Attempt, ev.MaxRetries)
	switch {
	case ev.ErrorStatus == nil:
		msg += ": no response from " + c.backend + "'s API (connection failed)"
		if ev.Attempt >= 2 || s.progressed {
			s.network(msg)
		} else {
			s.send(EventWarning, msg)
		}
	case *ev.ErrorStatus == 401 || *ev.ErrorStatus == 403:
		s.fail(KindNotLoggedIn, fmt.Sprintf("%s: HTTP %d %s", msg, *ev.ErrorStatus, detail))
	default:
		s.send(EventWarning, fmt.Sprintf("%s: HTTP %d %s", msg, *ev.ErrorStatus, detail))
	}
}

func (c *claudeParser) streamEvent(s *stream, ev claudeLine) {
	e := ev.Event
	switch e.Type {
	case "content_block_start":
		if e.ContentBlock == nil {
			return
		}
		switch e.ContentBlock.Type {
		case "tool_use":
			s.progress()
			s.status("using " + e.ContentBlock.Name)
		case "thinking":
			s.progress()
			s.status("thinking")
		case "text":
			c.block.Reset()
			c.blockOut = false
			s.status("writing")
		}
	case "content_block_delta":
		if e.Delta != nil && e.Delta.Type == "text_delta" {
			c.textDelta(s, e.Delta.Text)
		}
	case "content_block_stop":
		if !c.blockOut && c.block.Len() > 0 && !strings.HasPrefix(c.block.String(), apiErrorPrefix) {
			s.text(c.block.String())
		}
		c.block.Reset()
		c.blockOut = false
	}
}

// textDelta passes text on, holding a block's first characters until they
// cannot be the start of an "[API Error" text.
func (c *claudeParser) textDelta(s *stream, t string) {
	if c.blockOut {
		s.text(t)
		return
	}
	c.block.WriteString(t)
	held := c.block.String()
	if strings.HasPrefix(apiErrorPrefix, held) || strings.HasPrefix(held, apiErrorPrefix) {
		return // not decided yet, or an error the assistant/result event reports
	}
	c.blockOut = true
	s.text(held)
}

func (c *claudeParser) result(s *stream, _ Invocation, out Output) (Result, error) {
	r := c.result_
	if r == nil {
		if !c.sawJSON {
			return Result{Answer: strings.TrimSpace(string(out.Stdout))}, nil
		}
		return Result{Answer: c.lastText, SessionID: c.session, Model: c.model}, nil
	}
	if r.IsError || r.Result != nil && strings.HasPrefix(strings.TrimSpace(*r.Result), apiErrorPrefix) {
		msg := c.backend + " reported an error"
		if r.Result != nil && strings.TrimSpace(*r.Result) != "" {
			msg = strings.TrimSpace(*r.Result)
		} else if r.Subtype != "" {
			msg += ": " + r.Subtype
		}
		e := &Error{Backend: c.backend, Message: msg, Hint: "run `" + c.backend + " -p` by hand in the repository to see more"}
		if k := diagnose(strings.ToLower(msg)); k != KindFailed {
			e.Kind, e.Hint = k, hintFor(c.backend, k)
		} else if r.Subtype == "error_max_turns" {
			e.Hint = c.backend + " ran out of turns: raise CLAUDE_MAX_TURNS or ask a narrower question"
		}
		return Result{}, e
	}
	res := Result{SessionID: r.SessionID, CostUSD: r.TotalCostUSD, Model: c.model}
	if res.SessionID == "" {
		res.SessionID = c.session
	}
	if r.Result != nil {
		res.Answer = *r.Result
	}
	if len(r.Structured) > 0 && string(r.Structured) != "null" {
		res.Structured = r.Structured
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
	} else if c.haveUsage {
		res.InputTokens, res.OutputTokens = ptr(c.assistIn), ptr(c.assistOut)
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
	if res.Answer == "" {
		res.Answer = c.lastText
	}
	return res, nil
}

func (c *claudeParser) detail(_ *stream, _ Invocation, out Output) string {
	if r := c.result_; r != nil && r.Result != nil && strings.TrimSpace(*r.Result) != "" {
		if s := strings.TrimSpace(string(out.Stderr)); s != "" {
			return s + "\n" + strings.TrimSpace(*r.Result)
		}
		return strings.TrimSpace(*r.Result)
	}
	return defaultDetail(out)
}
