package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/apply/patch"
	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/ask/backend"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/mcp"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/workspace"
)

// `relay mcp` is the only place the three jobs meet for an agent host: the
// protocol lives in internal/mcp, and this file hands it ask, apply and
// memory as plain functions.

func newCmdMCP(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve relay's tools to an agent host over MCP (stdio)",
		Long: `Run relay as a Model Context Protocol server on stdin/stdout, for agent hosts
(Claude Code, Codex, Gemini CLI, Qwen Code; register it with relay install).

Tools: ask (other agent CLIs), apply (file changes as revertable transactions),
memory (the daemon's threads, state and artifacts). Artifacts are resources
relay://<thread>/artifacts/<ref>. The memory daemon is started when it is not
running, as relay up does. The thread defaults to $RELAY_THREAD, else one
thread per project, remembered in .relaycode/thread.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// the host logs stderr: the person can see which directory the agent's calls act on
			fmt.Fprintf(f.IO.ErrOut, "relay mcp: %s\n", mcpServes(f))
			s := mcp.New(mcpJobs(f))
			in, out := f.IO.In, f.IO.Out
			err := s.Run(cmd.Context(), &mcp.Stdio{In: in, Out: out})
			if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
				return nil
			}
			return fmt.Errorf("mcp session ended: %w", err)
		},
	}
}

func mcpJobs(f *Factory) mcp.Jobs {
	mem := &mcpMemory{f: f}
	return mcp.Jobs{
		Ask:           func(ctx context.Context, a mcp.AskArgs) ([]mcp.Answer, error) { return mcpAsk(ctx, f, a) },
		Apply:         func(ctx context.Context, a mcp.ApplyArgs) (any, error) { return mcpApply(ctx, f, a) },
		Memory:        mem,
		Backends:      backend.Names(),
		DefaultThread: func(ctx context.Context, create bool) (string, error) { return mem.defaultThread(ctx, create) },
		Explain:       explainErr,
		Version:       f.Version,
	}
}

// explainErr splits an error into relay's message and its "Try:" hint.
func explainErr(err error) (string, string) {
	var he *hintError
	var ae *ask.Error
	var arg *mcp.ArgError
	switch {
	case errors.As(err, &arg):
		return arg.Msg, arg.Hint
	case errors.As(err, &he):
		return err.Error(), he.hint
	case errors.As(err, &ae):
		return ae.Message, ae.Hint
	}
	return err.Error(), ""
}

// quietFactory is f with stdout sent to stderr: in an MCP session stdout
// belongs to the protocol, and relay up prints the daemon's URL there.
func quietFactory(f *Factory) *Factory {
	q := *f
	ios := *f.IO
	ios.Out = f.IO.ErrOut // stdout carries the protocol: nothing else may write there
	ios.In = strings.NewReader("")
	ios.SetTTY(false, false, false)
	q.IO = &ios
	return &q
}

// mcpMemory is the memory daemon as the MCP server sees it: connected on
// first use, started when it is not running, restarted once if it died.
type mcpMemory struct {
	f  *Factory
	mu sync.Mutex
	c  *client.Client

	threadMu sync.Mutex
	thread   string // the default thread, once known
	warned   sync.Once
}

// warnOnce tells the person (stderr, which hosts log) once per session.
func (m *mcpMemory) warnOnce(msg string) {
	m.warned.Do(func() { fmt.Fprintf(m.f.IO.ErrOut, "relay mcp: Warning: %s\n", msg) })
}

func (m *mcpMemory) client(ctx context.Context, restart bool) (*client.Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c != nil && !restart {
		return m.c, nil
	}
	c, err := memoryClient(m.f)
	if err != nil {
		return nil, err
	}
	if c.Health(ctx) != nil {
		if m.f.Getenv("RELAY_URL") != "" {
			return nil, WithHint(fmt.Errorf("no relay daemon answers at RELAY_URL %s", m.f.Getenv("RELAY_URL")), "start that daemon, or unset RELAY_URL to use a local one")
		}
		if err := upRun(ctx, &UpOptions{F: quietFactory(m.f), Host: "127.0.0.1", Wait: 15 * time.Second}); err != nil {
			return nil, err
		}
		if c, err = memoryClient(m.f); err != nil {
			return nil, err
		}
	}
	m.c = c
	return c, nil
}

// do runs fn against the daemon; when the daemon went away mid-session it is
// started again and fn retried once.
func (m *mcpMemory) do(ctx context.Context, thread string, fn func(*client.Client) error) error {
	c, err := m.client(ctx, false)
	if err != nil {
		return err
	}
	err = fn(c)
	var ue *client.UnreachableError
	if errors.As(err, &ue) && ctx.Err() == nil {
		if c, err = m.client(ctx, true); err != nil {
			return err
		}
		err = fn(c)
	}
	return mcpAPIErr(err, thread)
}

// mcpAPIErr gives daemon errors a next step a model can take with the tools.
func mcpAPIErr(err error, thread string) error {
	var ae *client.APIError
	if errors.As(err, &ae) {
		switch {
		case ae.Code == "version_conflict":
			return &mcp.ArgError{Msg: fmt.Sprintf("%s (current version: %d)", ae.Message, ae.CurrentVersion),
				Hint: fmt.Sprintf(`re-read with read {"op":"header"}, then send the patch again with "version":%d`, ae.CurrentVersion)}
		case ae.Code == "invalid_patch" || ae.Code == "test_failed":
			return &mcp.ArgError{Msg: ae.Message, Hint: "fix that operation (RFC 6902: op, path, value/from) and send the patch again"}
		case ae.Status == 404 && strings.HasPrefix(ae.Message, "thread "):
			return &mcp.ArgError{Msg: ae.Message, Hint: `omit thread to use this project's thread, or make one with write_memory {"op":"new_thread"}`}
		case ae.Status == 404 && thread != "":
			return &mcp.ArgError{Msg: ae.Message, Hint: `find refs with read {"op":"search","query":"…"} or {"op":"events"}`}
		case ae.Code == "name_taken":
			return &mcp.ArgError{Msg: ae.Message, Hint: `use that thread (pass its id as "thread"), or choose another name`}
		case ae.Code == "invalid_args" || ae.Code == "blocked_address":
			return &mcp.ArgError{Msg: ae.Message, Hint: "check the arguments; fetch reaches public http(s) URLs only"}
		}
	}
	return apiErr(err, thread)
}

func (m *mcpMemory) NewThread(ctx context.Context, name string) (json.RawMessage, error) {
	var t memory.Thread
	err := m.do(ctx, "", func(c *client.Client) (err error) { t, err = c.CreateThread(ctx, name); return err })
	if err != nil {
		return nil, err
	}
	return json.Marshal(t)
}

func (m *mcpMemory) Resolve(ctx context.Context, thread string) (string, error) {
	var id string
	err := m.do(ctx, "", func(c *client.Client) (err error) {
		if _, perr := uuid.Parse(thread); perr == nil && len(thread) == 36 {
			_, err = c.GetThread(ctx, strings.ToLower(thread))
			id = strings.ToLower(thread)
			return err
		}
		id, err = resolveThread(ctx, c, thread)
		return err
	})
	return id, err
}

func (m *mcpMemory) Header(ctx context.Context, thread string, since int) (json.RawMessage, error) {
	var raw json.RawMessage
	err := m.do(ctx, thread, func(c *client.Client) (err error) {
		if since > 0 {
			raw, err = headerSince(ctx, c, thread, since)
			return err
		}
		raw, _, err = c.Header(ctx, thread)
		return err
	})
	return raw, err
}

// headerSince returns the header delta (an RFC 6902 patch from the header at
// version since), or the full header when the daemon finds that smaller.
func headerSince(ctx context.Context, c *client.Client, thread string, since int) (json.RawMessage, error) {
	d, err := c.HeaderSince(ctx, thread, since)
	if err != nil {
		return nil, err
	}
	if d.Full != nil {
		return d.Full, nil
	}
	return json.Marshal(d)
}

func (m *mcpMemory) State(ctx context.Context, thread string, version int) (json.RawMessage, error) {
	var raw json.RawMessage
	err := m.do(ctx, thread, func(c *client.Client) (err error) { raw, err = c.State(ctx, thread, version); return err })
	return raw, err
}

func (m *mcpMemory) Patch(ctx context.Context, thread string, p json.RawMessage, version int) (json.RawMessage, error) {
	var res memory.PatchResult
	err := m.do(ctx, thread, func(c *client.Client) (err error) {
		res, err = c.Patch(ctx, thread, p, version, "relay-mcp")
		return err
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (m *mcpMemory) Put(ctx context.Context, thread string, a mcp.NewArtifact) (json.RawMessage, error) {
	var art memory.Artifact
	err := m.do(ctx, thread, func(c *client.Client) (err error) {
		art, err = c.PutArtifact(ctx, thread, client.PutArtifactParams{Name: a.Name, Type: a.Type, CreatedBy: a.CreatedBy, Content: strings.NewReader(a.Content)})
		return err
	})
	if err != nil {
		return nil, err
	}
	// the preview is what the model just sent; echoing it back costs tokens for nothing
	return json.Marshal(map[string]any{"ref": art.Ref, "name": art.Name, "type": art.Type, "size": art.Size, "deduplicated": art.Deduplicated,
		"uri": mcp.ArtifactURI(thread, art.Ref)})
}

func (m *mcpMemory) Artifact(ctx context.Context, thread, ref string) (mcp.Artifact, error) {
	var a memory.Artifact
	// A ref names one artifact store-wide: one passed on from another thread resolves too.
	err := m.do(ctx, thread, func(c *client.Client) (err error) { a, err = c.Artifact(ctx, thread, ref); return err })
	return mcp.Artifact{Ref: a.Ref, Name: a.Name, Type: a.Type, Mime: a.Mime, Size: a.Size}, err
}

func (m *mcpMemory) Content(ctx context.Context, thread, ref string, offset, length int64) ([]byte, error) {
	var b []byte
	err := m.do(ctx, thread, func(c *client.Client) error {
		rc, err := c.ArtifactRaw(ctx, thread, ref)
		if client.IsCode(err, "not_found") {
			// Another thread's artifact, named by its ref: read it where it is.
			a, ferr := c.Artifact(ctx, "", ref)
			if ferr != nil {
				return err
			}
			rc, err = c.ArtifactRaw(ctx, a.ThreadID, a.Ref)
		}
		if err != nil {
			return err
		}
		defer rc.Close()
		if _, err := io.CopyN(io.Discard, rc, offset); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		b, err = io.ReadAll(io.LimitReader(rc, length))
		return err
	})
	return b, err
}

func (m *mcpMemory) Artifacts(ctx context.Context, thread string, limit int) ([]mcp.Artifact, error) {
	var list []memory.Artifact
	err := m.do(ctx, thread, func(c *client.Client) (err error) { list, err = c.ListArtifacts(ctx, thread, "", limit); return err })
	out := make([]mcp.Artifact, len(list))
	for i, a := range list {
		out[i] = mcp.Artifact{Ref: a.Ref, Name: a.Name, Type: a.Type, Mime: a.Mime, Size: a.Size}
	}
	return out, err
}

func (m *mcpMemory) Invoke(ctx context.Context, thread, capability string, args json.RawMessage) (json.RawMessage, error) {
	var out client.Invocation
	err := m.do(ctx, thread, func(c *client.Client) (err error) {
		out, err = c.Invoke(ctx, client.InvokeRequest{ThreadID: thread, Capability: capability, Args: args})
		return err
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func (m *mcpMemory) Events(ctx context.Context, thread string, after int64, limit int) (json.RawMessage, error) {
	var evs []memory.Event
	err := m.do(ctx, thread, func(c *client.Client) (err error) { evs, err = c.Events(ctx, thread, after, limit); return err })
	if err != nil {
		return nil, err
	}
	if evs == nil {
		evs = []memory.Event{}
	}
	return json.Marshal(map[string]any{"events": evs})
}

func (m *mcpMemory) Watch(ctx context.Context, thread string, after int64, fn func(mcp.Event)) error {
	c, err := m.client(ctx, false)
	if err != nil {
		return err
	}
	return c.Stream(ctx, thread, after, func(e memory.Event) error {
		fn(mcp.Event{ID: e.ID, Type: e.Type, Data: e.Data})
		return nil
	})
}

// defaultThread is $RELAY_THREAD, else the project's thread (.relaycode/thread,
// the file relay thread use writes), made on first use.
func (m *mcpMemory) defaultThread(ctx context.Context, create bool) (string, error) {
	if t := strings.TrimSpace(m.f.Getenv("RELAY_THREAD")); t != "" {
		return m.Resolve(ctx, t)
	}
	m.threadMu.Lock()
	defer m.threadMu.Unlock()
	if m.thread != "" {
		return m.thread, nil
	}
	dir, err := mcpProjectDir(m.f)
	if err != nil {
		return "", err
	}
	id, err := ReadProjectThread(dir)
	var tracked *TrackedThreadError
	persist := true
	if errors.As(err, &tracked) {
		// a thread a clone names is not this project's memory; one of its own is made for
		// this session and not written over the tracked file
		m.warnOnce(err.Error() + "; Try: " + trackedThreadHint)
		id, err, persist = "", nil, false
	}
	if err != nil {
		return "", WithHint(err, `remove .relaycode/thread (relay mcp makes a new thread), or pass "thread" to the tool`)
	}
	if id != "" {
		// a thread id from a clone or another machine may not exist here
		err := m.do(ctx, "", func(c *client.Client) error { _, err := c.GetThread(ctx, id); return err })
		if err == nil {
			m.thread = id
			return id, nil
		}
		var arg *mcp.ArgError
		if !errors.As(err, &arg) { // a missing thread is made again below
			return "", err
		}
	}
	if !create {
		return "", nil
	}
	var t memory.Thread
	// the project's name may already name a thread (made by hand): take the next free one
	if err := m.do(ctx, "", func(c *client.Client) (err error) {
		t, err = c.CreateThreadIf(ctx, filepath.Base(dir), memory.NameTakenNext)
		return err
	}); err != nil {
		return "", err
	}
	if persist {
		if err := WriteProjectThread(dir, t.ID); err != nil {
			return "", fmt.Errorf("remember the project's thread: %w", err)
		}
	}
	m.thread = t.ID
	return t.ID, nil
}

// mcpProjectDir is the directory of the project config, else the working
// directory: an agent may work in a directory relay was never initialised in.
func mcpProjectDir(f *Factory) (string, error) {
	wd, err := f.WorkDir()
	if err != nil {
		return "", err
	}
	if file, err := config.Find(wd); err == nil {
		return filepath.Dir(file), nil
	}
	return wd, nil
}

// mcpServes says which project relay mcp started in the working directory
// serves: its root and config, or why there is none.
func mcpServes(f *Factory) string {
	wd, err := f.WorkDir()
	if err != nil {
		return "no working directory: " + err.Error()
	}
	file, err := config.Find(wd)
	switch {
	case err == nil:
		return fmt.Sprintf("serving project %s (config %s)", filepath.Dir(file), file)
	case config.IsNotOwned(err):
		return fmt.Sprintf("serving %s without a project config: %v", wd, err)
	}
	return fmt.Sprintf("serving %s (no relaycode.config.json here or up to the git work tree's root: apply needs relay init)", wd)
}

// mcpAsk runs ask for a tool call: no terminal, the session's environment.
func mcpAsk(ctx context.Context, f *Factory, a mcp.AskArgs) ([]mcp.Answer, error) {
	wd, err := f.WorkDir()
	if err != nil {
		return nil, err
	}
	var store *ask.SessionStore
	if home, err := f.Home(); err == nil && home != "" {
		store = &ask.SessionStore{Dir: filepath.Join(home, "ask")}
	}
	to := a.To
	if len(to) == 0 {
		to = []string{"codex"}
		if b := f.Getenv("PHONE_A_FRIEND_BACKEND"); b != "" {
			to = strings.Split(b, ",")
		}
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = ask.DefaultTimeout
	}
	req := ask.Request{To: to, Prompt: a.Prompt, ContextFile: a.ContextFile, ContextText: a.Context,
		IncludeDiff: a.Diff, DiffBase: a.DiffBase, Sandbox: a.Sandbox, Model: a.Model, TimeoutSeconds: timeout,
		MaxDepth: ask.DefaultMaxDepth, Session: a.Session, Env: os.Environ(), WorkDir: wd}
	// a tool call gets what the policy gives an agent, never more (workspace.CheckAsk)
	agent := &workspace.Workspace{Principal: workspace.Agent, WorkDir: wd, Home: f.Home}
	if cfg, _, err := config.Load(wd); err == nil {
		agent.Config = cfg
	}
	if err := agent.CheckAsk(&req); err != nil {
		return nil, err
	}
	if a.Diff && a.DiffBase != "" {
		return nil, &mcp.ArgError{Msg: "use diff or diff_base, not both", Hint: "drop one of them"}
	}
	asker := ask.New(store)
	p, err := asker.Prepare(ctx, req)
	if err != nil {
		return nil, askError(err)
	}
	answers := asker.Run(ctx, p)
	out := make([]mcp.Answer, len(answers))
	for i, x := range answers {
		o := mcp.Answer{Backend: x.Backend, Model: x.Model, Answer: x.Text, DurationMS: x.Duration.Milliseconds(), Session: x.Session}
		if x.InputTokens != nil || x.OutputTokens != nil {
			o.Tokens = map[string]any{}
			if x.InputTokens != nil {
				o.Tokens["input"] = *x.InputTokens
			}
			if x.OutputTokens != nil {
				o.Tokens["output"] = *x.OutputTokens
			}
		}
		if x.Err != nil {
			o.Error, o.Hint = x.Err.Message, x.Err.Hint
		}
		out[i] = o
	}
	return out, nil
}

// mcpApply runs one apply op. Approval follows the project config: with no
// terminal to ask on, a change that needs a person is rolled back and the
// model is told so.
func mcpApply(ctx context.Context, f *Factory, a mcp.ApplyArgs) (any, error) {
	cfg, err := f.ProjectConfig()
	if err != nil {
		return nil, err
	}
	var log []string
	eng, note, err := newEngine(ctx, f.IO, cfg, f.Home, true) // an agent: never asked, never trusts a config
	if err != nil {
		return nil, err
	}
	eng.Ask = nil // no terminal: a change that needs a person is refused and the model told so
	eng.Logf = func(format string, args ...any) {
		if len(log) < 50 {
			log = append(log, fmt.Sprintf(format, args...))
		}
	}
	switch a.Op {
	case "log":
		return mcpLog(cfg.Dir, eng.RecordKey, a.Limit)
	case "revert":
		return mcpRevert(ctx, eng, cfg.Dir, a)
	}
	var req txn.Request
	var format patch.Format
	if a.Op == "answer" {
		f, err := answerFormat(a.Format)
		if err != nil {
			return nil, err
		}
		resp, err := patch.ParseAnswer(a.Answer, f)
		if err != nil {
			return nil, answerError(err, "")
		}
		req, format = txn.Request{Response: resp}, resp.Format
	} else {
		req = txn.Request{Response: editRequest(cfg, a)}
	}
	if a.DryRun {
		eng.Logf = nil
		plan, err := eng.DryRun(req)
		if err != nil {
			return nil, mcpTxnErr(err)
		}
		return map[string]any{"dry_run": true, "format": format, "plan": plan}, nil
	}
	res, err := eng.Run(ctx, req)
	if err != nil {
		return nil, mcpTxnErr(err)
	}
	st := res.State
	out := map[string]any{"uuid": st.UUID, "summary": txnSummary(st), "files": nonNilFiles(st.Files), "revert": `edit_files {"op":"revert","ref":"` + st.UUID + `"}`}
	if format != "" {
		out["format"] = format
	}
	if res.Baseline >= 0 { // -1: no linter configured
		out["linter_errors_before"], out["linter_errors_after"] = res.Baseline, res.Final
	}
	if note != "" {
		out["note"] = note + "; only the user can trust it: ask them to read it and run relay trust"
	}
	return out, nil
}

// txnSummary is the one line relay apply prints for a committed transaction.
func txnSummary(st *txn.State) string {
	added, removed := 0, 0
	for _, f := range st.Files {
		added += f.Added
		removed += f.Removed
	}
	s := fmt.Sprintf("committed: %d file(s) changed, +%d -%d", len(st.Files), added, removed)
	if st.PromptSummary != "" {
		s = st.PromptSummary + "; " + s
	}
	return s
}

func mcpTxnErr(err error) error {
	var need *txn.NeedsApprovalError
	if errors.As(err, &need) && need.ConfigChange {
		return WithHint(err, "a config change needs the user: ask them to read it and run relay apply FILE --allow-config-change")
	}
	if errors.As(err, &need) {
		return WithHint(err, `the project's approvalMode is manual: ask the user to apply it (relay apply FILE -y), or set "approvalMode": "auto" in relaycode.config.json`)
	}
	var fail *txn.Failure
	if errors.As(err, &fail) && fail.Step == txn.StepPatch {
		return WithHint(err, `re-read the file and send old_string exactly as it is now (op=edit), or resend that block (op=answer); dry_run shows where blocks land`)
	}
	return txnError(err, "")
}

// editRequest makes one old_string/new_string edit a transaction of its own
// through the patch engine's edit strategy: the replacement runs against the
// file as the transaction snapshotted it, so it is logged, linted and
// revertable like any pasted answer.
func editRequest(cfg *config.Config, a mcp.ApplyArgs) *patch.Response {
	summary := "Edit " + a.Path
	body, _ := json.Marshal(patch.Edit{OldString: a.OldString, NewString: a.NewString, ReplaceAll: a.ReplaceAll})
	return &patch.Response{
		Control: patch.Control{ProjectID: cfg.ProjectID, UUID: uuid.NewString(), PromptSummary: summary, GitCommitMsg: summary,
			ChangeSummary: []patch.ChangeSummaryItem{{Action: "edit", Path: a.Path}}},
		Operations: []patch.Operation{{Kind: patch.OpWrite, Path: a.Path, Strategy: patch.EditStrategy, Content: string(body)}},
		Reasoning:  []string{"Edit made through relay mcp (old_string/new_string)."},
	}
}

func mcpLog(dir string, key []byte, limit int) (any, error) {
	all, ignored, err := txn.List(dir, key)
	if err != nil {
		return nil, WithHint(err, "fix or move the broken file in .relaycode/")
	}
	if limit <= 0 {
		limit = 20
	}
	reverted := txn.RevertedByMap(all)
	entries := []logEntry{}
	for i, s := range all {
		if i == limit {
			break
		}
		entries = append(entries, logEntry{Index: i + 1, UUID: s.UUID, CreatedAt: s.CreatedAt, PromptSummary: s.PromptSummary, GitCommitMsg: s.GitCommitMsg,
			Files: nonNilFiles(s.Files), RevertOf: s.RevertOf, RevertedBy: reverted[s.UUID]})
	}
	out := map[string]any{"transactions": entries, "total": len(all)}
	if len(ignored) > 0 {
		var why []string
		for _, ig := range ignored {
			why = append(why, ig.Record+": "+ig.Why)
		}
		out["ignored_records"] = why
	}
	return out, nil
}

func mcpRevert(ctx context.Context, eng *txn.Engine, dir string, a mcp.ApplyArgs) (any, error) {
	ref := a.Ref
	if ref == "" {
		ref = "1"
	}
	st, err := txn.Find(dir, ref, eng.RecordKey)
	if err != nil {
		var nf *txn.NotFoundError
		if errors.As(err, &nf) {
			return nil, WithHint(err, `list transactions with read {"op":"log"}`)
		}
		return nil, err
	}
	if by, err := txn.RevertedBy(dir, st, eng.RecordKey); err == nil && by != "" && !a.Force {
		return nil, WithHint(fmt.Errorf("transaction %s was already reverted by %s", st.UUID, by), `revert the revert to bring it back: edit_files {"op":"revert","ref":"`+by+`"}`)
	}
	changed, err := txn.Changed(dir, st)
	if err != nil {
		return nil, err
	}
	if len(changed) > 0 && !a.Force {
		return nil, WithHint(fmt.Errorf("the files of transaction %s changed since it was applied: %s; reverting would lose those edits", st.UUID, strings.Join(changed, ", ")),
			`set "force":true to discard the later edits`)
	}
	req, err := txn.RevertRequest(st)
	if err != nil {
		return nil, err
	}
	req.Yes = true // the tool call is the request to revert
	if a.DryRun {
		plan, err := eng.DryRun(req)
		if err != nil {
			return nil, mcpTxnErr(err)
		}
		return map[string]any{"dry_run": true, "reverts": st.UUID, "plan": plan}, nil
	}
	res, err := eng.Run(ctx, req)
	if err != nil {
		return nil, mcpTxnErr(err)
	}
	return map[string]any{"uuid": res.State.UUID, "reverted": st.UUID, "summary": txnSummary(res.State), "files": nonNilFiles(res.State.Files)}, nil
}
