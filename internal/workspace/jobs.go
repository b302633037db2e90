package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/ask/backend"
	"github.com/relaydev/relay/internal/atomicfile"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/relayhome"
	"github.com/relaydev/relay/internal/run"
	"github.com/relaydev/relay/internal/safeopen"
)

// Background asks (relay ask --background, the ask tool's "background"): the ask runs as
// a detached relay process, so it outlives the command or MCP session that started it.
// Both front doors start, list and read jobs here; the job itself runs RunJob.

// JobCommand is the hidden relay command that runs a job: relay JobCommand... ID.
var JobCommand = []string{"ask", "run-job"}

// MaxAgentJobWait bounds how long a tool call waits for a job: a host times a call out.
const MaxAgentJobWait = 30 * time.Second

// maxJobFile bounds what relay reads back of a job's request and result.
const maxJobFile = 64 << 20

// jobSpec is what a job runs, written 0600 in its directory before it starts: the
// principal that asked (an agent's job keeps an agent's limits), where, and the request
// without the environment (the job inherits it; secrets never go to disk).
type jobSpec struct {
	Principal    string          `json:"principal"`
	WorkDir      string          `json:"workdir"`
	Thread       string          `json:"thread,omitempty"`
	HasMCP       bool            `json:"has_mcp,omitempty"`
	TimeoutGiven bool            `json:"timeout_given,omitempty"`
	To           []string        `json:"to"`
	Prompt       string          `json:"prompt"`
	Repo         string          `json:"repo,omitempty"`
	ContextFile  string          `json:"context_file,omitempty"`
	ContextText  string          `json:"context_text,omitempty"`
	IncludeDiff  bool            `json:"include_diff,omitempty"`
	DiffBase     string          `json:"diff_base,omitempty"`
	Sandbox      string          `json:"sandbox,omitempty"`
	Model        string          `json:"model,omitempty"`
	Timeout      int             `json:"timeout_seconds"`
	MaxDepth     int             `json:"max_depth"`
	Session      string          `json:"session,omitempty"`
	Schema       json.RawMessage `json:"schema,omitempty"`
	Verdict      bool            `json:"verdict,omitempty"`
	Review       bool            `json:"review,omitempty"`
}

// JobOutcome is a job as a front door shows it: its record and, once it ended, what it
// answered (Answers) or why it answered nothing (Err).
type JobOutcome struct {
	Job     *ask.Job
	Answers []AnswerJSON
	Err     *AnswerErr
	// Log is the tail of the job's stderr when it ended without a result.
	Log string
}

// jobResult is result.json: the answers, or the error that stopped the ask.
type jobResult struct {
	Answers []AnswerJSON `json:"answers"`
	Error   *AnswerErr   `json:"error,omitempty"`
}

// JobStore is where this workspace's jobs are kept ($RELAY_HOME/ask/jobs).
func (w *Workspace) JobStore() (*ask.JobStore, error) {
	h, err := w.home()
	if err != nil {
		return nil, WithHint(err, "set RELAY_HOME to a writable directory")
	}
	return &ask.JobStore{Dir: filepath.Join(h, relayhome.AskDir, "jobs")}, nil
}

// StartAsk checks the ask as Ask would for this principal, then starts it as a detached
// relay process and returns at once with the job. The job's thread is resolved here when
// memory is reachable, so the caller can tell where its events go.
func (w *Workspace) StartAsk(ctx context.Context, req AskRequest) (*ask.Job, error) {
	if err := w.AskDefaults(&req); err != nil {
		return nil, err
	}
	if err := w.checkAsk(&req); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Prompt) == "" && !req.Review && !req.Verdict {
		return nil, &ask.Error{Usage: true, Message: "Prompt is required", Hint: w.promptHint()}
	}
	if len(req.Prompt) > ask.MaxPromptBytes {
		return nil, &ask.Error{Usage: true, Message: fmt.Sprintf("the prompt is %d bytes; max %d bytes", len(req.Prompt), ask.MaxPromptBytes), Hint: "shorten it, or put the long part in a context file"}
	}
	to := Friends(req.To)
	for _, n := range to {
		if _, ok := backend.Get(n); !ok {
			return nil, &ask.Error{Usage: true, Message: fmt.Sprintf("Unsupported relay backend: %s. Supported: %s", n, strings.Join(backend.Names(), ", ")),
				Hint: "see which friends are installed: relay backends"}
		}
	}
	if len(req.Schema) > 0 && !json.Valid(req.Schema) {
		return nil, &ask.Error{Usage: true, Message: "the schema is not valid JSON", Hint: "pass a JSON Schema object"}
	}
	thread := w.Thread
	if w.Memory != nil && w.Principal == Agent {
		// an agent's job records where its session does, made now if need be
		id, err := w.Memory.DefaultThread(ctx, w.Thread, true)
		if err != nil && w.Thread != "" {
			return nil, err
		}
		if err == nil {
			thread = id
		}
	}
	if thread == "" {
		thread = strings.TrimSpace(w.getenv("RELAY_THREAD"))
	}
	store, err := w.JobStore()
	if err != nil {
		return nil, err
	}
	job, err := store.NewJob(to, req.Prompt, thread, time.Now())
	if err != nil {
		return nil, WithHint(fmt.Errorf("cannot create the job: %w", err), "check that "+store.Dir+" is writable")
	}
	r := req.Request
	spec := jobSpec{Principal: w.Principal.String(), WorkDir: w.WorkDir, Thread: thread, HasMCP: req.HasMCP, TimeoutGiven: true,
		To: to, Prompt: r.Prompt, Repo: r.Repo, ContextFile: r.ContextFile, ContextText: r.ContextText, IncludeDiff: r.IncludeDiff,
		DiffBase: r.DiffBase, Sandbox: r.Sandbox, Model: r.Model, Timeout: r.TimeoutSeconds, MaxDepth: r.MaxDepth,
		Session: r.Session, Schema: r.Schema, Verdict: r.Verdict, Review: r.Review}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(store.SpecPath(job.ID), b, 0o600); err != nil {
		return nil, err
	}
	if err := w.spawnJob(store, job); err != nil {
		_ = store.Finish(job.ID, 1)
		return nil, WithHint(fmt.Errorf("cannot start the background job: %w", err), "ask without background")
	}
	return job, nil
}

func (w *Workspace) promptHint() string {
	if w.Principal == Agent {
		return `pass "prompt"`
	}
	return "pass the question with --prompt TEXT"
}

// spawnJob starts relay JobCommand ID in a session of its own: it outlives this process
// and its terminal; its stdout and stderr go to the job's log.
func (w *Workspace) spawnJob(store *ask.JobStore, job *ask.Job) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(store.StderrPath(job.ID), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	c := exec.Command(self, append(slices.Clone(JobCommand), job.ID)...)
	c.Env = w.environ()
	c.Dir = w.WorkDir
	c.Stdout, c.Stderr = logf, logf
	c.SysProcAttr = run.Detached()
	if err := c.Start(); err != nil {
		return err
	}
	_ = store.SetPID(job, c.Process.Pid)
	return c.Process.Release()
}

// RunJob runs job id (in the process StartAsk started): as the principal that asked, in
// its directory and thread, and writes result.json and the exit code whatever happens.
func (w *Workspace) RunJob(ctx context.Context, id string) (err error) {
	store, err := w.JobStore()
	if err != nil {
		return err
	}
	job, err := store.Get(id)
	if err != nil {
		return err
	}
	var res jobResult
	defer func() {
		if err != nil && res.Error == nil {
			msg, hint := Explain(err, w.Principal)
			res.Error = &AnswerErr{Message: msg, Hint: hint}
		}
		code := 0
		if res.Error != nil {
			code = 1
		}
		for _, a := range res.Answers {
			if a.Error != nil {
				code = 1
			}
		}
		b, _ := json.MarshalIndent(res, "", "  ")
		if werr := atomicfile.WriteFile(store.ResultPath(job.ID), append(b, '\n'), 0o600); werr != nil && err == nil {
			err = werr
		}
		_ = store.Finish(job.ID, code)
	}()
	raw, err := safeopen.ReadFile(store.SpecPath(job.ID), false, maxJobFile)
	if err != nil {
		return fmt.Errorf("job %s has no request: %w", job.ID, err)
	}
	var spec jobSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("job %s's request is unreadable: %w", job.ID, err)
	}
	w.Principal = Person
	if spec.Principal != Person.String() {
		w.Principal = Agent // anything but a person's own job keeps an agent's limits
	}
	w.WorkDir, w.Thread = spec.WorkDir, spec.Thread
	if w.Config == nil {
		if cfg, _, err := config.Load(w.WorkDir); err == nil {
			w.Config = cfg // the project a context file must be inside (CheckAsk)
		}
	}
	req := AskRequest{HasMCP: spec.HasMCP, TimeoutGiven: spec.TimeoutGiven, Job: job.ID, Request: ask.Request{
		To: spec.To, Prompt: spec.Prompt, Repo: spec.Repo, ContextFile: spec.ContextFile, ContextText: spec.ContextText,
		IncludeDiff: spec.IncludeDiff, DiffBase: spec.DiffBase, Sandbox: spec.Sandbox, Model: spec.Model,
		TimeoutSeconds: spec.Timeout, MaxDepth: spec.MaxDepth, Session: spec.Session, Schema: spec.Schema,
		Verdict: spec.Verdict, Review: spec.Review}}
	out, err := w.Ask(ctx, req)
	if err != nil {
		return err
	}
	res.Answers = AnswersJSON(out)
	return nil
}

// Jobs lists the jobs, newest first.
func (w *Workspace) Jobs() ([]*ask.Job, error) {
	store, err := w.JobStore()
	if err != nil {
		return nil, err
	}
	jobs, err := store.List()
	if err != nil {
		return nil, WithHint(fmt.Errorf("cannot read jobs: %w", err), "check the permissions of "+store.Dir)
	}
	if jobs == nil {
		jobs = []*ask.Job{}
	}
	return jobs, nil
}

// Job reads job id, waiting up to wait (an agent's at most MaxAgentJobWait) while it
// runs; a job still running then is returned as it is.
func (w *Workspace) Job(ctx context.Context, id string, wait time.Duration) (*JobOutcome, error) {
	if w.Principal == Agent && wait > MaxAgentJobWait {
		wait = MaxAgentJobWait
	}
	store, err := w.JobStore()
	if err != nil {
		return nil, err
	}
	j, err := store.Get(id)
	if err != nil {
		return nil, WithHint(err, w.jobsHint())
	}
	if j.Status == "running" && wait > 0 {
		deadline := time.NewTimer(wait)
		defer deadline.Stop()
		tick := time.NewTicker(200 * time.Millisecond) // a job's end is a file written by another process
		defer tick.Stop()
	poll:
		for j.Status == "running" {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-deadline.C:
				break poll
			case <-tick.C:
			}
			if j, err = store.Get(id); err != nil {
				return nil, err
			}
		}
	}
	out := &JobOutcome{Job: j}
	if j.Status == "running" {
		return out, nil
	}
	raw, err := safeopen.ReadFile(store.ResultPath(j.ID), false, maxJobFile)
	var res jobResult
	if err == nil {
		err = json.Unmarshal(raw, &res)
	}
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && j.Status != "lost" {
			return nil, fmt.Errorf("cannot read job %s's result: %w", j.ID, err)
		}
		tail, _ := safeopen.ReadFile(store.StderrPath(j.ID), false, 1<<20)
		out.Log = lastLines(string(tail), 5)
		out.Err = &AnswerErr{Message: "the job ended without a result", Hint: "ask again; its log is " + store.StderrPath(j.ID)}
		if out.Log != "" {
			out.Err.Message += ": " + out.Log
		}
		return out, nil
	}
	out.Answers, out.Err = res.Answers, res.Error
	return out, nil
}

func (w *Workspace) jobsHint() string {
	if w.Principal == Agent {
		return `pass the "job" id the ask with "background" returned`
	}
	return "relay ask jobs"
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// Friends is the list of friends as ask will ask them (aliases resolved, repeats dropped).
func Friends(to []string) []string {
	var out []string
	for _, n := range to {
		n = backend.Canonical(strings.TrimSpace(n))
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
