// Package mcp is relay's Model Context Protocol server: the three jobs (ask,
// apply, memory) as three tools and the memory's artifacts as resources. It
// owns the protocol layer only; the jobs themselves come in through Jobs,
// which the command tree wires to the real implementations.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/tokens"
)

// Memory is what the server needs from the memory daemon. Results are the
// daemon's own JSON, passed to the model as they are.
type Memory interface {
	NewThread(ctx context.Context, name string) (json.RawMessage, error)
	// Resolve turns a thread id, id prefix or name into an id.
	Resolve(ctx context.Context, thread string) (string, error)
	// Header returns the state header, or only what changed after since (> 0)
	// when the daemon can say so.
	Header(ctx context.Context, thread string, since int) (json.RawMessage, error)
	State(ctx context.Context, thread string, version int) (json.RawMessage, error)
	Patch(ctx context.Context, thread string, patch json.RawMessage, version int) (json.RawMessage, error)
	Put(ctx context.Context, thread string, a NewArtifact) (json.RawMessage, error)
	// Artifact returns an artifact's metadata.
	Artifact(ctx context.Context, thread, ref string) (Artifact, error)
	// Content reads the artifact's bytes from offset, at most length of them.
	Content(ctx context.Context, thread, ref string, offset, length int64) ([]byte, error)
	Artifacts(ctx context.Context, thread string, limit int) ([]Artifact, error)
	// Invoke runs a daemon capability (retrieval.search, http.fetch).
	Invoke(ctx context.Context, thread, capability string, args json.RawMessage) (json.RawMessage, error)
	Events(ctx context.Context, thread string, after int64, limit int) (json.RawMessage, error)
	// Watch calls fn for every event of the thread after the given id until
	// ctx ends.
	Watch(ctx context.Context, thread string, after int64, fn func(Event)) error
}

// NewArtifact is an artifact to store.
type NewArtifact struct {
	Name, Type, Content, CreatedBy string
}

// Artifact is an artifact's metadata.
type Artifact struct {
	Ref  string `json:"ref"`
	Name string `json:"name"`
	Type string `json:"type"`
	Mime string `json:"mime"`
	Size int64  `json:"size"`
}

// Event is one entry of a thread's log.
type Event struct {
	ID   int64
	Type string
	Data json.RawMessage
}

// AskArgs are the ask tool's arguments.
type AskArgs struct {
	Prompt      string   `json:"prompt"`
	To          []string `json:"to"`
	Context     string   `json:"context"`
	ContextFile string   `json:"context_file"`
	Diff        bool     `json:"diff"`
	DiffBase    string   `json:"diff_base"`
	Sandbox     string   `json:"sandbox"`
	Model       string   `json:"model"`
	Session     string   `json:"session"`
	Timeout     int      `json:"timeout"`
	Thread      string   `json:"thread"`
	// Schema, Verdict, Review and Base are relay ask's --schema, --verdict, --review and --base.
	Schema  json.RawMessage `json:"schema"`
	Verdict bool            `json:"verdict"`
	Review  bool            `json:"review"`
	Base    string          `json:"base"`
	// Background returns at once with a job; read op=job fetches its answers.
	Background bool `json:"background"`
}

// JobStatus is a background ask: running, done, failed or lost (its process died
// without a result); once it ended, its answers or why there are none.
type JobStatus struct {
	ID      string   `json:"job"`
	Status  string   `json:"status"`
	To      []string `json:"to"`
	Thread  string   `json:"thread,omitempty"`
	Answers []Answer `json:"answers,omitempty"`
	Error   string   `json:"error,omitempty"`
	Hint    string   `json:"hint,omitempty"`
	// Next is the call that fetches the job while it runs.
	Next string `json:"next,omitempty"`
}

// Answer is one friend's answer.
type Answer struct {
	Backend    string         `json:"backend"`
	Model      string         `json:"model,omitempty"`
	Answer     string         `json:"answer,omitempty"`
	Ref        string         `json:"ref,omitempty"`
	Preview    string         `json:"preview,omitempty"`
	Bytes      int            `json:"bytes,omitempty"`
	DurationMS int64          `json:"duration_ms"`
	Tokens     map[string]any `json:"tokens,omitempty"`
	Session    string         `json:"session,omitempty"`
	Error      string         `json:"error,omitempty"`
	Hint       string         `json:"hint,omitempty"`
	// With schema or verdict: the answer's JSON value, checked against it.
	JSON    json.RawMessage `json:"json,omitempty"`
	Verdict *ask.Verdict    `json:"verdict,omitempty"`
}

// ApplyArgs are what the Apply job takes (from edit_files, and read op=log).
type ApplyArgs struct {
	Op         string `json:"op"`
	Answer     string `json:"answer"`
	Format     string `json:"format"`
	Path       string `json:"path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
	DryRun     bool   `json:"dry_run"`
	Ref        string `json:"ref"`
	Force      bool   `json:"force"`
	Limit      int    `json:"limit"`
}

// MemoryArgs are what the memory ops take (from read, write_memory and fetch).
type MemoryArgs struct {
	Op      string          `json:"op"`
	Thread  string          `json:"thread"`
	Name    string          `json:"name"`
	Since   int             `json:"since"`
	Version int             `json:"version"`
	Patch   json.RawMessage `json:"patch"`
	Content *string         `json:"content"`
	Type    string          `json:"type"`
	Ref     string          `json:"ref"`
	Offset  int64           `json:"offset"`
	Length  int64           `json:"length"`
	Query   string          `json:"query"`
	URL     string          `json:"url"`
	After   int64           `json:"after"`
	Limit   int             `json:"limit"`
}

// Jobs are relay's three jobs as the server calls them.
type Jobs struct {
	// Ask asks the friends; a failed friend is an Answer with Error set.
	Ask func(ctx context.Context, a AskArgs) ([]Answer, error)
	// StartAsk starts the ask as a background job; Job reads one, waiting up to
	// wait seconds while it runs.
	StartAsk func(ctx context.Context, a AskArgs) (JobStatus, error)
	Job      func(ctx context.Context, id string, wait int) (JobStatus, error)
	// Apply runs one apply op and returns what to tell the model.
	Apply  func(ctx context.Context, a ApplyArgs) (any, error)
	Memory Memory
	// Backends are the friend names ask accepts.
	Backends []string
	// DefaultThread is $RELAY_THREAD, else the project's thread; with create
	// false it returns "" rather than making one.
	DefaultThread func(ctx context.Context, create bool) (string, error)
	// Explain splits an error into relay's message and its next step.
	Explain func(error) (message, hint string)
	Version string
}

// Limits on what a tool returns inline, so one call cannot flood a model's context.
const (
	// LongAnswer is the answer size above which ask stores it as an artifact.
	LongAnswer   = 8 << 10
	previewBytes = 1200
	// defaultRead and maxRead bound read op=get: a page stays within the result budget.
	defaultRead = 16 << 10
	maxRead     = 24 << 10
	// ResultBudget is the largest result returned inline: about 8k tokens at
	// tokens.Estimate's 4 bytes a token. Larger ones are stored and paged.
	ResultBudget = 32 << 10
)

// Server is relay's MCP server.
type Server struct {
	jobs Jobs
	srv  *sdk.Server

	mu      sync.Mutex
	ctx     context.Context // the Run context: watches live as long as the session
	watched map[string]bool
	known   map[string]bool     // resource URIs already added
	listed  map[string][]string // per thread, its artifact URIs in resources/list, oldest first (≤ maxListed)
	primed  map[string]bool     // threads whose stored artifacts a resources/list registered
}

// New builds the server.
func New(jobs Jobs) *Server {
	s := &Server{jobs: jobs, watched: map[string]bool{}, known: map[string]bool{}, listed: map[string][]string{}, primed: map[string]bool{}, ctx: context.Background()}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: "relay", Title: "relay", Version: jobs.Version}, &sdk.ServerOptions{
		Instructions:     Instructions,
		SubscribeHandler: s.subscribe,
		UnsubscribeHandler: func(context.Context, *sdk.UnsubscribeRequest) error {
			return nil
		},
		Capabilities: &sdk.ServerCapabilities{},
	})
	s.srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "resources/list" {
				s.listStored(ctx)
			}
			return next(ctx, method, req)
		}
	})
	handlers := map[string]sdk.ToolHandler{ToolRead: s.handleRead, ToolWriteMemory: s.handleWriteMemory,
		ToolEditFiles: s.handleEditFiles, ToolFetch: s.handleFetch, ToolAsk: s.handleAsk}
	for _, t := range tools(jobs.Backends) {
		s.srv.AddTool(t, handlers[t.Name])
	}
	s.addPrompts()
	s.srv.AddResourceTemplate(&sdk.ResourceTemplate{
		Name: "artifact", URITemplate: "relay://{thread}/artifacts/{ref}",
		Description: "an artifact of a relay memory thread",
	}, s.readResource)
	s.srv.AddResourceTemplate(&sdk.ResourceTemplate{
		Name: "state", URITemplate: "relay://{thread}/state", MIMEType: "application/json",
		Description: "the state document of a relay memory thread",
	}, s.readResource)
	return s
}

// SDK returns the underlying server (tests connect clients to it).
func (s *Server) SDK() *sdk.Server { return s.srv }

// Run serves one session on t until the client goes away or ctx ends. The
// default thread's artifacts are listed as resources when it already exists.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	s.watchDefault(ctx)
	return s.srv.Run(ctx, t)
}

// watchDefault watches the default thread when there is one already.
func (s *Server) watchDefault(ctx context.Context) {
	if s.jobs.DefaultThread != nil && s.jobs.Memory != nil {
		// in the background: finding the thread may start the daemon, and a host waits for
		// initialize (Claude Code -p starts the prompt without a server still pending)
		go func() {
			if id, err := s.jobs.DefaultThread(ctx, false); err == nil && id != "" {
				s.watch(id)
			}
		}()
	}
}

// toolError is a tool result the model can act on: relay's message and the
// next step, with isError set. The server itself never fails a call.
func (s *Server) toolError(err error) *sdk.CallToolResult {
	msg, hint := err.Error(), ""
	if s.jobs.Explain != nil {
		msg, hint = s.jobs.Explain(err)
	}
	var b strings.Builder
	b.WriteString("Error: " + strings.TrimRight(msg, "\n"))
	if hint != "" {
		b.WriteString("\nTry: " + hint)
	}
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: b.String()}}}
}

// ArgError is a tool call whose arguments do not fit the schema.
type ArgError struct{ Msg, Hint string }

func (e *ArgError) Error() string { return e.Msg }

func argErr(hint, format string, args ...any) error {
	return &ArgError{Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// decodeArgs reads a call's arguments strictly: an unknown field is an error
// the model can fix, not something silently dropped.
func decodeArgs(raw json.RawMessage, v any, tool string) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return argErr("call "+tool+" with the fields of its input schema", "bad %s arguments: %v", tool, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return argErr("send one JSON object of arguments", "bad %s arguments: trailing data", tool)
	}
	return nil
}

// toJSON is a result as compact JSON; structured content must be an object, so anything
// else (a bare string or list) is wrapped as {"result": …}.
func toJSON(v any) []byte {
	var b []byte
	switch x := v.(type) {
	case json.RawMessage:
		var buf bytes.Buffer
		if json.Compact(&buf, x) == nil {
			b = buf.Bytes()
		}
	default:
		b, _ = json.Marshal(v)
	}
	if len(b) == 0 || b[0] != '{' {
		if len(b) == 0 || !json.Valid(b) {
			b, _ = json.Marshal(fmt.Sprint(v))
		}
		b, _ = json.Marshal(map[string]json.RawMessage{"result": b})
	}
	return b
}

// result is what every tool returns: the JSON as structuredContent (Claude Code gives the
// model only that part) and the same JSON as text (what other hosts read). A result over
// ResultBudget is stored as an artifact and returned as ref + preview + how to page.
func (s *Server) result(ctx context.Context, tool string, v any) *sdk.CallToolResult {
	b := toJSON(v)
	if _, paged := v.(getResult); len(b) > ResultBudget && !paged {
		if stored, ok := s.storeLarge(ctx, tool, b); ok {
			b = stored
		}
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

// storeLarge keeps a large result in the session's thread and returns what replaces it;
// without memory the whole result is returned (never cut silently).
func (s *Server) storeLarge(ctx context.Context, tool string, b []byte) ([]byte, bool) {
	if s.jobs.Memory == nil {
		return nil, false
	}
	id, err := s.thread(ctx, "")
	if err != nil {
		return nil, false
	}
	raw, err := s.jobs.Memory.Put(ctx, id, NewArtifact{Name: "result-" + tool + ".json", Type: "json", Content: string(b), CreatedBy: "relay-mcp/" + tool})
	if err != nil {
		return nil, false
	}
	var stored struct {
		Ref string `json:"ref"`
	}
	if json.Unmarshal(raw, &stored) != nil || stored.Ref == "" {
		return nil, false
	}
	out, _ := json.Marshal(map[string]any{
		"stored":   true,
		"reason":   fmt.Sprintf("the result is %d bytes, over the %d-byte budget (about %d tokens)", len(b), ResultBudget, tokens.Estimate(ResultBudget)),
		"ref":      stored.Ref,
		"thread":   id,
		"bytes":    len(b),
		"preview":  head(string(b), previewBytes),
		"continue": fmt.Sprintf(`read {"op":"get","ref":%q,"offset":0,"length":%d}, then the next offset while "more" is true`, stored.Ref, defaultRead),
	})
	return out, true
}

// guard turns a panic in a job into a tool error: one bad call must never
// take the server (and the host's session) down.
func (s *Server) guard(ctx context.Context, tool string, fn func() (any, error)) (res *sdk.CallToolResult) {
	defer func() {
		if r := recover(); r != nil {
			res = s.toolError(fmt.Errorf("internal error: %v", r))
		}
	}()
	v, err := fn()
	if err != nil {
		return s.toolError(err)
	}
	return s.result(ctx, tool, v)
}

func (s *Server) thread(ctx context.Context, arg string) (string, error) {
	if s.jobs.Memory == nil {
		return "", errors.New("relay memory is not available in this session")
	}
	if arg != "" {
		id, err := s.jobs.Memory.Resolve(ctx, arg)
		if err == nil {
			s.watch(id)
		}
		return id, err
	}
	if s.jobs.DefaultThread == nil {
		return "", argErr("pass thread", "no thread given")
	}
	id, err := s.jobs.DefaultThread(ctx, true)
	if err == nil && id != "" {
		s.watch(id)
	}
	return id, err
}

func (s *Server) handleAsk(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return s.guard(ctx, ToolAsk, func() (any, error) {
		var a AskArgs
		if err := decodeArgs(req.Params.Arguments, &a, "ask"); err != nil {
			return nil, err
		}
		if strings.TrimSpace(a.Prompt) == "" && !a.Review && !a.Verdict && a.Base == "" {
			return nil, argErr(`ask {"prompt":"…","to":["codex"]}`, "prompt is empty")
		}
		if a.Background {
			if s.jobs.StartAsk == nil {
				return nil, errors.New("background asks are not available in this session")
			}
			st, err := s.jobs.StartAsk(ctx, a)
			if err != nil {
				return nil, err
			}
			st.Next = jobCall(st.ID)
			return st, nil
		}
		if s.jobs.Ask == nil {
			return nil, errors.New("ask is not available in this session")
		}
		answers, err := s.jobs.Ask(ctx, a)
		if err != nil {
			return nil, err
		}
		for i := range answers {
			s.shorten(ctx, a.Thread, &answers[i])
		}
		if len(answers) == 1 && answers[0].Error != "" {
			return nil, &ArgError{Msg: answers[0].Error, Hint: answers[0].Hint}
		}
		return map[string]any{"answers": answers}, nil
	}), nil
}

// jobCall is the read call that fetches a job, waiting for it as long as a call may.
func jobCall(id string) string {
	return fmt.Sprintf(`read {"op":"job","id":%q,"wait":%d}`, id, MaxJobWait)
}

// MaxJobWait is the longest read op=job waits, in seconds: a host times a call out.
const MaxJobWait = 30

// job reads a background ask; a long answer comes back as ref + preview.
func (s *Server) job(ctx context.Context, a ReadArgs) (any, error) {
	if s.jobs.Job == nil {
		return nil, errors.New("background asks are not available in this session")
	}
	if a.ID == "" {
		return nil, argErr(`read {"op":"job","id":"<the job ask returned>"}`, "id is empty")
	}
	if a.Wait < 0 || a.Wait > MaxJobWait {
		return nil, argErr(fmt.Sprintf("pass wait from 0 to %d seconds, and call again while it runs", MaxJobWait), "wait %d is out of range", a.Wait)
	}
	st, err := s.jobs.Job(ctx, a.ID, a.Wait)
	if err != nil {
		return nil, err
	}
	for i := range st.Answers {
		s.shorten(ctx, st.Thread, &st.Answers[i])
	}
	if st.Status == "running" {
		st.Next = jobCall(st.ID)
	}
	return st, nil
}

// shorten keeps a preview of a long answer inline, the whole answer one ref away: the
// ref the ask recorded it under, else an artifact stored here.
func (s *Server) shorten(ctx context.Context, thread string, a *Answer) {
	if len(a.Answer) <= LongAnswer {
		return
	}
	if a.Ref != "" {
		a.Bytes = len(a.Answer)
		a.Preview, a.Answer = head(a.Answer, previewBytes), ""
		return
	}
	if s.jobs.Memory == nil {
		return
	}
	id, err := s.thread(ctx, thread)
	if err != nil {
		return // the whole answer is better than none
	}
	raw, err := s.jobs.Memory.Put(ctx, id, NewArtifact{Name: "answer-" + a.Backend + ".md", Type: "markdown", Content: a.Answer, CreatedBy: "relay-mcp/ask"})
	if err != nil {
		return
	}
	var stored struct {
		Ref string `json:"ref"`
	}
	if json.Unmarshal(raw, &stored) != nil || stored.Ref == "" {
		return
	}
	a.Bytes = len(a.Answer)
	a.Ref, a.Preview, a.Answer = stored.Ref, head(a.Answer, previewBytes), ""
}

// head cuts s to at most n bytes on a UTF-8 boundary.
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// ReadArgs are the read tool's arguments.
type ReadArgs struct {
	Op      string `json:"op"`
	Thread  string `json:"thread"`
	Since   int    `json:"since"`
	Version int    `json:"version"`
	Ref     string `json:"ref"`
	Offset  int64  `json:"offset"`
	Length  int64  `json:"length"`
	Query   string `json:"query"`
	Type    string `json:"type"`
	After   int64  `json:"after"`
	Limit   int    `json:"limit"`
	// ID and Wait are op=job's: the background ask, and seconds to wait while it runs.
	ID   string `json:"id"`
	Wait int    `json:"wait"`
}

// WriteArgs are the write_memory tool's arguments.
type WriteArgs struct {
	Op      string          `json:"op"`
	Thread  string          `json:"thread"`
	Name    string          `json:"name"`
	Version int             `json:"version"`
	Patch   json.RawMessage `json:"patch"`
	Content *string         `json:"content"`
	Type    string          `json:"type"`
}

// EditArgs are the edit_files tool's arguments.
type EditArgs struct {
	Op         string `json:"op"`
	Path       string `json:"path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
	Answer     string `json:"answer"`
	Format     string `json:"format"`
	Ref        string `json:"ref"`
	Force      bool   `json:"force"`
	DryRun     bool   `json:"dry_run"`
}

// FetchArgs are the fetch tool's arguments.
type FetchArgs struct {
	URL    string `json:"url"`
	Thread string `json:"thread"`
}

func (s *Server) handleRead(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return s.guard(ctx, ToolRead, func() (any, error) {
		var a ReadArgs
		if err := decodeArgs(req.Params.Arguments, &a, ToolRead); err != nil {
			return nil, err
		}
		switch a.Op {
		case "log":
			if s.jobs.Apply == nil {
				return nil, errors.New("the change log is not available in this session (no project)")
			}
			return s.jobs.Apply(ctx, ApplyArgs{Op: "log", Limit: a.Limit})
		case "job":
			return s.job(ctx, a)
		case "header", "state", "get", "search", "events":
		default:
			return nil, argErr("op is one of: header, state, get, search, events, log, job", "unknown read op %q", a.Op)
		}
		return s.memory(ctx, MemoryArgs{Op: a.Op, Thread: a.Thread, Since: a.Since, Version: a.Version, Ref: a.Ref,
			Offset: a.Offset, Length: a.Length, Query: a.Query, Type: a.Type, After: a.After, Limit: a.Limit})
	}), nil
}

func (s *Server) handleWriteMemory(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return s.guard(ctx, ToolWriteMemory, func() (any, error) {
		var a WriteArgs
		if err := decodeArgs(req.Params.Arguments, &a, ToolWriteMemory); err != nil {
			return nil, err
		}
		switch a.Op {
		case "new_thread", "patch", "put":
		default:
			return nil, argErr("op is one of: new_thread, patch, put", "unknown write_memory op %q", a.Op)
		}
		return s.memory(ctx, MemoryArgs{Op: a.Op, Thread: a.Thread, Name: a.Name, Version: a.Version, Patch: a.Patch, Content: a.Content, Type: a.Type})
	}), nil
}

func (s *Server) handleFetch(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return s.guard(ctx, ToolFetch, func() (any, error) {
		var a FetchArgs
		if err := decodeArgs(req.Params.Arguments, &a, ToolFetch); err != nil {
			return nil, err
		}
		return s.memory(ctx, MemoryArgs{Op: "fetch", URL: a.URL, Thread: a.Thread})
	}), nil
}

func (s *Server) handleEditFiles(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return s.guard(ctx, ToolEditFiles, func() (any, error) {
		var e EditArgs
		if err := decodeArgs(req.Params.Arguments, &e, ToolEditFiles); err != nil {
			return nil, err
		}
		a := ApplyArgs{Op: e.Op, Answer: e.Answer, Format: e.Format, Path: e.Path, OldString: e.OldString, NewString: e.NewString,
			ReplaceAll: e.ReplaceAll, DryRun: e.DryRun, Ref: e.Ref, Force: e.Force}
		switch a.Op {
		case "answer":
			if strings.TrimSpace(a.Answer) == "" {
				return nil, argErr(`edit_files {"op":"answer","answer":"<the whole relay-format answer>","dry_run":true}`, "op=answer needs answer")
			}
		case "edit":
			if a.Path == "" {
				return nil, argErr(`edit_files {"op":"edit","path":"main.go","old_string":"…","new_string":"…"}`, "op=edit needs path")
			}
			if a.OldString == a.NewString {
				return nil, argErr("pass the text to replace and its replacement", "old_string and new_string are the same: nothing would change")
			}
		case "revert":
		default:
			return nil, argErr("op is one of: edit, answer, revert (the log is read op=log)", "unknown edit_files op %q", a.Op)
		}
		if s.jobs.Apply == nil {
			return nil, errors.New("file changes are not available in this session")
		}
		return s.jobs.Apply(ctx, a)
	}), nil
}

func (s *Server) memory(ctx context.Context, a MemoryArgs) (any, error) {
	m := s.jobs.Memory
	if m == nil {
		return nil, errors.New("relay memory is not available in this session")
	}
	if a.Op == "new_thread" {
		raw, err := m.NewThread(ctx, a.Name)
		if err == nil {
			var t struct {
				ID string `json:"thread_id"`
			}
			if json.Unmarshal(raw, &t) == nil && t.ID != "" {
				s.watch(t.ID)
			}
		}
		return raw, err
	}
	known := false
	for _, op := range []string{"header", "state", "patch", "put", "get", "search", "fetch", "events"} {
		known = known || op == a.Op
	}
	if !known {
		return nil, argErr("see the tool's op list", "unknown op %q", a.Op)
	}
	// arguments are checked before a thread is made for them
	switch a.Op {
	case "patch":
		if len(bytes.TrimSpace(a.Patch)) == 0 || a.Patch[0] != '[' {
			return nil, argErr(`write_memory {"op":"patch","patch":[{"op":"add","path":"/todo","value":"…"}],"version":3}`, "op=patch needs patch: an array of RFC 6902 operations")
		}
	case "put":
		if a.Content == nil {
			return nil, argErr(`write_memory {"op":"put","content":"…","name":"notes.md","type":"markdown"}`, "op=put needs content")
		}
	case "get":
		if a.Ref == "" {
			return nil, argErr(`read {"op":"get","ref":"<ref from put, search or header>"}`, "op=get needs ref")
		}
	case "search":
		if strings.TrimSpace(a.Query) == "" {
			return nil, argErr(`read {"op":"search","query":"retry policy"}`, "op=search needs query")
		}
	case "fetch":
		if a.URL == "" {
			return nil, argErr(`fetch {"url":"https://…"}`, "op=fetch needs url")
		}
	}
	// A full thread id goes to the daemon as it is: the call itself answers "thread … not
	// found" for a missing one, so looking the thread up first only cost a round trip. It
	// is watched once a call on it succeeded (a watch on a missing thread would retry forever).
	if id, ok := fullThreadID(a.Thread); ok {
		res, err := s.memoryOp(ctx, id, a)
		if err == nil {
			s.watch(id)
		}
		return res, err
	}
	id, err := s.thread(ctx, a.Thread)
	if err != nil {
		return nil, err
	}
	return s.memoryOp(ctx, id, a)
}

// fullThreadID is arg as a thread id when it is a whole one (any case), the form that
// needs no lookup to know which thread is meant.
func fullThreadID(arg string) (string, bool) {
	if len(arg) != 36 {
		return "", false
	}
	if _, err := uuid.Parse(arg); err != nil {
		return "", false
	}
	return strings.ToLower(arg), true
}

// memoryOp runs a checked read or write_memory op on the thread id.
func (s *Server) memoryOp(ctx context.Context, id string, a MemoryArgs) (any, error) {
	m := s.jobs.Memory
	switch a.Op {
	case "header":
		return m.Header(ctx, id, a.Since)
	case "state":
		return m.State(ctx, id, a.Version)
	case "patch":
		return m.Patch(ctx, id, a.Patch, a.Version)
	case "put":
		typ := a.Type
		if typ == "" {
			typ = "text"
		}
		return m.Put(ctx, id, NewArtifact{Name: a.Name, Type: typ, Content: *a.Content, CreatedBy: "relay-mcp"})
	case "get":
		return s.get(ctx, id, a)
	case "search":
		args := map[string]any{"query": a.Query}
		if a.Type != "" {
			args["type"] = a.Type
		}
		if a.Limit > 0 {
			args["limit"] = min(a.Limit, 50)
		}
		b, _ := json.Marshal(args)
		return m.Invoke(ctx, id, "retrieval.search", b)
	case "fetch":
		b, _ := json.Marshal(map[string]any{"url": a.URL})
		return m.Invoke(ctx, id, "http.fetch", b)
	default: // events
		limit := a.Limit
		if limit <= 0 || limit > 200 {
			limit = 50
		}
		return m.Events(ctx, id, a.After, limit)
	}
}

type getResult struct {
	Ref     string `json:"ref"`
	Name    string `json:"name,omitempty"`
	Type    string `json:"type"`
	Size    int64  `json:"size"`
	Offset  int64  `json:"offset"`
	Length  int    `json:"length"`
	More    bool   `json:"more"`
	Content string `json:"content,omitempty"`
	Base64  []byte `json:"base64,omitempty"`
}

// get returns a byte range of an artifact, bounded so a large artifact is
// read in pieces rather than in one flood.
func (s *Server) get(ctx context.Context, thread string, a MemoryArgs) (any, error) {
	meta, err := s.jobs.Memory.Artifact(ctx, thread, a.Ref)
	if err != nil {
		return nil, err
	}
	length := a.Length
	if length <= 0 {
		length = defaultRead
	}
	length = min(length, maxRead)
	if a.Offset > meta.Size {
		return nil, argErr(fmt.Sprintf("offset is at most %d", meta.Size), "offset %d is past the end of %s (%d bytes)", a.Offset, meta.Ref, meta.Size)
	}
	b, err := s.jobs.Memory.Content(ctx, thread, meta.Ref, a.Offset, length)
	if err != nil {
		return nil, err
	}
	if meta.Type != "binary" && a.Offset+int64(len(b)) < meta.Size {
		b = trimPartialRune(b) // the next read starts on the cut rune
	}
	// escaping can make a page of JSON or control characters several times longer: shrink it
	// until the page, encoded, fits the result budget
	for len(b) > 1024 && encodedLen(b) > ResultBudget-1024 {
		b = trimPartialRune(b[:len(b)*3/4])
	}
	r := getResult{Ref: meta.Ref, Name: meta.Name, Type: meta.Type, Size: meta.Size, Offset: a.Offset, Length: len(b),
		More: a.Offset+int64(len(b)) < meta.Size}
	if meta.Type == "binary" || !utf8.Valid(b) {
		r.Base64 = b
	} else {
		r.Content = string(b)
	}
	return r, nil
}

// encodedLen is how long b is in a result: a JSON string, or base64 when it is not text.
func encodedLen(b []byte) int {
	if !utf8.Valid(b) {
		return (len(b) + 2) / 3 * 4
	}
	e, _ := json.Marshal(string(b))
	return len(e)
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= 3 && i <= len(b); i++ {
		c := b[len(b)-i]
		if !utf8Start(c) {
			continue
		}
		if !utf8.FullRune(b[len(b)-i:]) {
			return b[:len(b)-i]
		}
		break
	}
	return b
}
