package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/apply/patch"
	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/ask/backend"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/workspace"
)

// Options are what relay mcp hands the server: its streams and the outside world.
type Options struct {
	// In and Out carry the protocol; ErrOut is the host's log (notes, warnings).
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// WorkDir is where the agent works; Home returns $RELAY_HOME; Getenv and Environ read
	// the session's environment.
	WorkDir func() (string, error)
	Home    func() (string, error)
	Getenv  func(string) string
	Environ func() []string
	// StartDaemon starts the memory daemon when it does not answer (relay up).
	StartDaemon func(ctx context.Context) error
	Version     string
}

// Serve runs relay's MCP server over In and Out until the client goes away or ctx ends:
// every tool call is an agent working in the project through a workspace.
func Serve(ctx context.Context, o Options) error {
	err := New(Wire(o)).Run(ctx, &Stdio{In: o.In, Out: o.Out})
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return fmt.Errorf("mcp session ended: %w", err)
}

// Wire gives the protocol layer relay's jobs: each call runs as the Agent principal in a
// workspace of the project, and one memory connection serves the whole session.
func Wire(o Options) Jobs {
	mem := &workspace.Memory{Home: o.Home, Getenv: o.Getenv, Start: o.StartDaemon, CreateThread: true,
		Warn: func(err error, hint string) { fmt.Fprintf(o.ErrOut, "relay mcp: Warning: %v; Try: %s\n", err, hint) }}
	if wd, err := o.WorkDir(); err == nil {
		mem.ProjectDir = workspace.ProjectDir(wd)
	}
	r := &relay{o: o, mem: mem}
	return Jobs{
		Ask:           r.ask,
		StartAsk:      r.startAsk,
		Job:           r.job,
		Apply:         r.apply,
		Memory:        &daemon{mem: mem},
		Backends:      backend.Names(),
		DefaultThread: func(ctx context.Context, create bool) (string, error) { return mem.DefaultThread(ctx, "", create) },
		Explain:       explain,
		Version:       o.Version,
	}
}

// explain is workspace.Explain for an agent; a tool's own argument errors come as they are.
func explain(err error) (string, string) {
	var arg *ArgError
	if errors.As(err, &arg) {
		return arg.Msg, arg.Hint
	}
	return workspace.Explain(err, workspace.Agent)
}

type relay struct {
	o   Options
	mem *workspace.Memory
}

// workspace is the project as an agent works in it for one call.
func (r *relay) workspace(thread string) (*workspace.Workspace, error) {
	wd, err := r.o.WorkDir()
	if err != nil {
		return nil, err
	}
	return &workspace.Workspace{Principal: workspace.Agent, WorkDir: wd, Home: r.o.Home, Getenv: r.o.Getenv, Environ: r.o.Environ,
		Notes: r.o.ErrOut, Memory: r.mem, Thread: thread}, nil
}

// askRequest is a tool call's ask in the workspace's terms, checked like relay ask checks
// its flags.
func (r *relay) askRequest(a AskArgs) (*workspace.Workspace, workspace.AskRequest, error) {
	var wreq workspace.AskRequest
	if a.Diff && a.DiffBase != "" {
		return nil, wreq, &ArgError{Msg: "use diff or diff_base, not both", Hint: "drop one of them"}
	}
	if a.Base != "" && a.DiffBase != "" && a.DiffBase != a.Base {
		return nil, wreq, &ArgError{Msg: "base and diff_base name different refs", Hint: "pass one of them"}
	}
	req := ask.Request{To: a.To, Prompt: a.Prompt, ContextFile: a.ContextFile, ContextText: a.Context, IncludeDiff: a.Diff, DiffBase: a.DiffBase,
		Sandbox: a.Sandbox, Model: a.Model, TimeoutSeconds: a.Timeout, MaxDepth: ask.DefaultMaxDepth, Session: a.Session,
		Schema: a.Schema, Verdict: a.Verdict, Review: a.Review}
	req.ReviewScope(a.Base)
	if req.Review && req.IncludeDiff {
		return nil, wreq, &ArgError{Msg: "review sends every uncommitted change already", Hint: "drop diff"}
	}
	ws, err := r.workspace(a.Thread)
	if err != nil {
		return nil, wreq, err
	}
	if cfg, _, err := config.Load(ws.WorkDir); err == nil {
		ws.Config = cfg // the project a context_file must be inside (workspace.CheckAsk)
	}
	return ws, workspace.AskRequest{HasMCP: true, TimeoutGiven: a.Timeout > 0, Request: req}, nil
}

// ask runs ask for a tool call: no terminal, the session's environment, recorded in the
// thread like relay ask.
func (r *relay) ask(ctx context.Context, a AskArgs) ([]Answer, error) {
	ws, req, err := r.askRequest(a)
	if err != nil {
		return nil, err
	}
	res, err := ws.Ask(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make([]Answer, len(res.Answers))
	for i, x := range workspace.AnswersJSON(res) {
		out[i] = toAnswer(x)
	}
	return out, nil
}

// toAnswer is an answer as the tool returns it.
func toAnswer(x workspace.AnswerJSON) Answer {
	o := Answer{Backend: x.Backend, Model: x.Model, Answer: x.Answer, DurationMS: x.DurationMS, Session: x.Session,
		JSON: x.JSON, Verdict: x.Verdict, Ref: x.Ref}
	if t := x.Tokens; t != nil {
		o.Tokens = map[string]any{}
		if t.Input != nil {
			o.Tokens["input"] = *t.Input
		}
		if t.Output != nil {
			o.Tokens["output"] = *t.Output
		}
	}
	if x.Error != nil {
		o.Error, o.Hint = x.Error.Message, x.Error.Hint
	}
	return o
}

// startAsk starts the tool call's ask as a background job, with an agent's limits.
func (r *relay) startAsk(ctx context.Context, a AskArgs) (JobStatus, error) {
	ws, req, err := r.askRequest(a)
	if err != nil {
		return JobStatus{}, err
	}
	j, err := ws.StartAsk(ctx, req)
	if err != nil {
		return JobStatus{}, err
	}
	return JobStatus{ID: j.ID, Status: j.Status, To: j.To, Thread: j.Thread}, nil
}

// job reads a background job, waiting up to wait seconds (bounded) while it runs.
func (r *relay) job(ctx context.Context, id string, wait int) (JobStatus, error) {
	ws, err := r.workspace("")
	if err != nil {
		return JobStatus{}, err
	}
	o, err := ws.Job(ctx, id, time.Duration(wait)*time.Second)
	if err != nil {
		return JobStatus{}, err
	}
	st := JobStatus{ID: o.Job.ID, Status: o.Job.Status, To: o.Job.To, Thread: o.Job.Thread}
	for _, x := range o.Answers {
		st.Answers = append(st.Answers, toAnswer(x))
	}
	if o.Err != nil {
		st.Error, st.Hint = o.Err.Message, o.Err.Hint
	}
	return st, nil
}

// apply runs one apply op for a tool call. Approval follows the project config: an agent
// never approves, so a change that needs a person is rolled back and the model told so.
func (r *relay) apply(ctx context.Context, a ApplyArgs) (any, error) {
	ws, err := r.workspace("")
	if err != nil {
		return nil, err
	}
	if ws.Config, err = workspace.LoadConfig(ws.WorkDir, r.o.ErrOut); err != nil {
		return nil, err
	}
	var out *workspace.Outcome
	switch a.Op {
	case "log":
		entries, total, err := ws.Log(orDefault(a.Limit, 20))
		if err != nil {
			return nil, err
		}
		return map[string]any{"transactions": entries, "total": total}, nil
	case "revert":
		out, err = ws.Revert(ctx, workspace.RevertRequest{Ref: a.Ref, Force: a.Force, DryRun: a.DryRun})
	case "answer":
		format, ok := patch.ParseFormat(a.Format)
		if a.Format != "" && !ok {
			return nil, &ArgError{Msg: fmt.Sprintf("unknown format %q", a.Format), Hint: "use one of relay, diff, codex, search-replace, edit, whole, or leave format out to detect it"}
		}
		out, err = ws.Apply(ctx, workspace.AnswerRequest{Text: a.Answer, Format: format, DryRun: a.DryRun})
	default: // edit
		out, err = ws.Edit(ctx, workspace.EditRequest{Path: a.Path, DryRun: a.DryRun,
			Edits: []patch.Edit{{OldString: a.OldString, NewString: a.NewString, ReplaceAll: a.ReplaceAll}}})
	}
	if err != nil {
		return nil, err
	}
	res := map[string]any{}
	if out.Answer != nil && out.Answer.Format != "" {
		res["format"] = out.Answer.Format
	}
	if out.CommandsSkipped != "" {
		res["note"] = out.CommandsSkipped
	}
	if out.Plan != nil {
		res["dry_run"], res["plan"] = true, out.Plan
		if out.Reverted != nil {
			res["reverts"] = out.Reverted.UUID
		}
		return res, nil
	}
	st := out.Result.State
	res["uuid"], res["summary"], res["files"] = st.UUID, workspace.Summary(st), workspace.NonNilFiles(st.Files)
	if out.Reverted != nil {
		res["reverted"] = out.Reverted.UUID
		return res, nil
	}
	res["revert"] = `edit_files {"op":"revert","ref":"` + st.UUID + `"}`
	if out.Result.Baseline >= 0 { // -1: no linter configured
		res["linter_errors_before"], res["linter_errors_after"] = out.Result.Baseline, out.Result.Final
	}
	return res, nil
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// daemon is the memory daemon as the protocol layer sees it, through the session's one
// connection: started when it is not running, restarted once if it died.
type daemon struct{ mem *workspace.Memory }

func (d *daemon) NewThread(ctx context.Context, name string) (json.RawMessage, error) {
	var t memory.Thread
	err := d.mem.Do(ctx, "", func(c *client.Client) (err error) { t, err = c.CreateThread(ctx, name); return err })
	if err != nil {
		return nil, err
	}
	return json.Marshal(t)
}

func (d *daemon) Resolve(ctx context.Context, thread string) (string, error) {
	return d.mem.Resolve(ctx, thread)
}

func (d *daemon) Header(ctx context.Context, thread string, since int) (json.RawMessage, error) {
	var raw json.RawMessage
	err := d.mem.Do(ctx, thread, func(c *client.Client) (err error) {
		if since > 0 {
			raw, err = headerSince(ctx, c, thread, since)
			return err
		}
		raw, _, err = c.Header(ctx, thread)
		return err
	})
	return raw, err
}

// headerSince returns what changed in the header after version since, in the API's own
// shape ({"since","v",…}), or the full header when the daemon finds that smaller.
func headerSince(ctx context.Context, c *client.Client, thread string, since int) (json.RawMessage, error) {
	d, err := c.HeaderSince(ctx, thread, since)
	if err != nil {
		return nil, err
	}
	return d.Body(), nil
}

func (d *daemon) State(ctx context.Context, thread string, version int) (json.RawMessage, error) {
	var raw json.RawMessage
	err := d.mem.Do(ctx, thread, func(c *client.Client) (err error) { raw, err = c.State(ctx, thread, version); return err })
	return raw, err
}

func (d *daemon) Patch(ctx context.Context, thread string, p json.RawMessage, version int) (json.RawMessage, error) {
	var res memory.PatchResult
	err := d.mem.Do(ctx, thread, func(c *client.Client) (err error) {
		res, err = c.Patch(ctx, thread, p, version, "relay-mcp")
		return err
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (d *daemon) Put(ctx context.Context, thread string, a NewArtifact) (json.RawMessage, error) {
	var art memory.Artifact
	err := d.mem.Do(ctx, thread, func(c *client.Client) (err error) {
		art, err = c.PutArtifact(ctx, thread, client.PutArtifactParams{Name: a.Name, Type: a.Type, CreatedBy: a.CreatedBy, Content: strings.NewReader(a.Content)})
		return err
	})
	if err != nil {
		return nil, err
	}
	// the preview is what the model just sent; echoing it back costs tokens for nothing
	return json.Marshal(map[string]any{"ref": art.Ref, "name": art.Name, "type": art.Type, "size": art.Size, "deduplicated": art.Deduplicated,
		"uri": ArtifactURI(thread, art.Ref)})
}

func (d *daemon) Artifact(ctx context.Context, thread, ref string) (Artifact, error) {
	var a memory.Artifact
	// A ref names one artifact store-wide: one passed on from another thread resolves too.
	err := d.mem.Do(ctx, thread, func(c *client.Client) (err error) { a, err = c.Artifact(ctx, thread, ref); return err })
	return Artifact{Ref: a.Ref, Name: a.Name, Type: a.Type, Mime: a.Mime, Size: a.Size}, err
}

func (d *daemon) Content(ctx context.Context, thread, ref string, offset, length int64) ([]byte, error) {
	var b []byte
	err := d.mem.Do(ctx, thread, func(c *client.Client) error {
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

func (d *daemon) Artifacts(ctx context.Context, thread string, limit int) ([]Artifact, error) {
	var list []memory.Artifact
	err := d.mem.Do(ctx, thread, func(c *client.Client) (err error) { list, err = c.ListArtifacts(ctx, thread, "", limit); return err })
	out := make([]Artifact, len(list))
	for i, a := range list {
		out[i] = Artifact{Ref: a.Ref, Name: a.Name, Type: a.Type, Mime: a.Mime, Size: a.Size}
	}
	return out, err
}

func (d *daemon) Invoke(ctx context.Context, thread, capability string, args json.RawMessage) (json.RawMessage, error) {
	var out client.Invocation
	err := d.mem.Do(ctx, thread, func(c *client.Client) (err error) {
		out, err = c.Invoke(ctx, client.InvokeRequest{ThreadID: thread, Capability: capability, Args: args})
		return err
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func (d *daemon) Events(ctx context.Context, thread string, after int64, limit int) (json.RawMessage, error) {
	var evs []memory.Event
	err := d.mem.Do(ctx, thread, func(c *client.Client) (err error) { evs, err = c.Events(ctx, thread, after, limit); return err })
	if err != nil {
		return nil, err
	}
	if evs == nil {
		evs = []memory.Event{}
	}
	return json.Marshal(map[string]any{"events": evs})
}

func (d *daemon) Watch(ctx context.Context, thread string, after int64, fn func(Event)) error {
	c, err := d.mem.Client(ctx, false)
	if err != nil {
		return err
	}
	return c.Stream(ctx, thread, after, func(e memory.Event) error {
		fn(Event{ID: e.ID, Type: e.Type, Data: e.Data})
		return nil
	})
}
