// Package txn applies a parsed LLM response to a project as one transaction:
// snapshot, a fsynced pending record, apply, checks, then commit or a byte-
// for-byte rollback. It also recovers transactions orphaned by a crash, lists
// committed ones, reverts them and commits them to git. It never prints; the
// caller gets progress through Engine.Logf.
package txn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/relaydev/relay/internal/apply/lint"
	"github.com/relaydev/relay/internal/apply/patch"
	"github.com/relaydev/relay/internal/run"
)

// Options are the project settings a transaction follows (config "patch"
// and "git" sections).
type Options struct {
	ProjectID            string
	ApprovalMode         string // "auto" or "manual"
	ApprovalOnErrorCount int
	Linter               string
	PreCommand           string
	PostCommand          string
	MinFileChanges       int
	MaxFileChanges       int // 0: no limit
	AutoGitBranch        bool
	GitBranchPrefix      string
	GitBranchTemplate    string // "uuid" or "gitCommitMsg"
	FuzzyThreshold       float64
}

// Patcher applies one code block body to a file's content (patch.Apply).
type Patcher func(original string, exists bool, strategy patch.Strategy, body string, opts patch.Options) (patch.Result, error)

// CommandResult is a finished shell command.
type CommandResult struct {
	Stdout, Stderr string
	ExitCode       int
}

// Runner runs a user shell command in dir. It returns an error only when the
// command could not run to completion (not found, cancelled); a non-zero exit
// is reported in ExitCode.
type Runner func(ctx context.Context, dir, script string) (CommandResult, error)

// Engine runs transactions in one project directory.
type Engine struct {
	Dir  string
	Opts Options
	// Patch applies code blocks; nil uses patch.Apply.
	Patch Patcher
	// Shell runs preCommand, postCommand and the linter; nil uses sh -c.
	Shell Runner
	// Git runs git in the project; nil uses the git binary.
	Git func(ctx context.Context, dir string, args ...string) (string, error)
	// Logf receives progress lines; nil drops them.
	Logf func(format string, args ...any)
	// Ask asks the user to approve applied changes; nil means nobody can be
	// asked, so changes that need approval are rolled back.
	Ask func(ctx context.Context, reason string) (bool, error)
	// Now is the clock; nil uses time.Now.
	Now func() time.Time
	// RecordKey seals the pending records this engine writes (LoadRecordKey);
	// recovery only acts on records sealed with the same key.
	RecordKey []byte
	// NoSync skips fsync of project files at commit (benchmarks only; the
	// pending record is always fsynced).
	NoSync bool
	// Lock is the project lock when the caller holds it and has recovered under
	// it (LockProject); Run then neither locks nor recovers again.
	Lock *Lock
}

// Request is one response to apply.
type Request struct {
	Response *patch.Response
	// Yes approves without asking (-y).
	Yes bool
	// RevertOf marks a revert transaction with the uuid it reverts.
	RevertOf string
	// Modes sets the permission bits of files the operations write (used by
	// revert to bring back a file's old mode).
	Modes map[string]fs.FileMode
	// PruneDirs are removed after applying when empty (revert: the
	// directories the reverted transaction created).
	PruneDirs []string
	// AllowConfigChange lets -y or automatic approval cover changes to a
	// config file (--allow-config-change); otherwise a person must approve them.
	AllowConfigChange bool
}

// Result is a committed transaction.
type Result struct {
	State    *State
	Baseline int // linter errors before, -1 when no linter is configured
	Final    int
	Branch   string // git branch created, if any
	// BranchErr is why the auto branch could not be created (the transaction
	// is committed regardless).
	BranchErr error
	Duration  time.Duration
	// Contents is what each touched path holds at commit (after the
	// post-command), keyed like State.Snapshot; nil means the file is gone.
	Contents map[string]*string
}

// SkipError is a response that is not applied at all: nothing was run or
// touched. Kind says why, for callers that advise on it.
type SkipError struct {
	Kind   SkipKind
	Reason string
}

// SkipKind classifies a SkipError.
type SkipKind int

// Why a response is skipped.
const (
	SkipInvalid      SkipKind = iota // the response does not parse as operations
	SkipDuplicate                    // its uuid was applied before
	SkipWrongProject                 // its projectId names another project
	SkipEmpty                        // it has no file operations
	SkipFileCount                    // too few or too many file changes for the config
)

// The steps of a transaction, in order: Failure.Step is one of them.
const (
	StepPreCommand  = "pre-command"
	StepSnapshot    = "snapshot"
	StepPathCheck   = "path check"
	StepPatch       = "patch"
	StepWrite       = "write"
	StepPostCommand = "post-command"
	StepLinter      = "linter"
	StepApproval    = "approval"
	StepInterrupted = "interrupted"
	StepCommit      = "commit"
)

func (e *SkipError) Error() string { return "skipping patch: " + e.Reason }

// NeedsApprovalError is a transaction that needed a person's approval when
// nobody could be asked.
type NeedsApprovalError struct {
	Reason string
	// ConfigChange: the answer changes a config file, which neither -y nor
	// automatic approval covers.
	ConfigChange bool
	// LintErrors are the first new linter errors (file:line: message) that asked for
	// approval; a person reads them before deciding.
	LintErrors []string
}

func (e *NeedsApprovalError) Error() string {
	// Reason is a progress line ("Manual approval required…."); errors are lowercase.
	r := strings.TrimSuffix(e.Reason, ".")
	if r != "" {
		r = strings.ToLower(r[:1]) + r[1:]
	}
	r += ", and there is no terminal to ask on"
	if len(e.LintErrors) > 0 {
		r += "; the new errors:\n  " + strings.Join(e.LintErrors, "\n  ")
	}
	return r
}

// maxShownLintErrors is how many new linter errors are shown before the approval question.
const maxShownLintErrors = 5

// newLintErrors returns the diagnostics of final that baseline did not have (the errors the
// answer introduced), at most maxShownLintErrors, and how many there were.
func newLintErrors(baseline, final []string) ([]string, int) {
	had := make(map[string]bool, len(baseline))
	for _, l := range baseline {
		had[l] = true
	}
	var fresh []string
	for _, l := range final {
		if !had[l] {
			fresh = append(fresh, l)
		}
	}
	return fresh[:min(len(fresh), maxShownLintErrors)], len(fresh)
}

// ErrRejected is the user answering no at the approval prompt.
var ErrRejected = errors.New("changes rejected by the user")

// Failure is a transaction that failed or was rejected at Step. Whatever it
// had changed was restored (Restored) unless RollbackErr says otherwise.
type Failure struct {
	UUID        string
	Step        string // one of the Step constants
	Err         error
	Touched     bool // whether project files had been changed before the rollback
	Restored    []string
	RollbackErr error
}

func (f *Failure) Error() string {
	var status string
	switch {
	case f.RollbackErr != nil:
		status = "and " + f.RollbackErr.Error()
	case f.Touched:
		status = fmt.Sprintf("so the transaction was rolled back (%d file(s) restored; the project is as it was)", len(f.Restored))
	default:
		status = "nothing was changed"
	}
	if f.Step == StepApproval || f.Step == StepInterrupted {
		return fmt.Sprintf("%v; %s", f.Err, status)
	}
	return fmt.Sprintf("%s failed, %s: %v", f.Step, status, f.Err)
}

func (f *Failure) Unwrap() error { return f.Err }

func (e *Engine) logf(format string, args ...any) {
	if e.Logf != nil {
		e.Logf(format, args...)
	}
}

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Run applies one response as a transaction. It returns a *SkipError, a
// *Failure (after rolling back) or a *BusyError, or the committed Result.
func (e *Engine) Run(ctx context.Context, req Request) (*Result, error) {
	start := time.Now()
	resp := req.Response
	if resp == nil {
		return nil, errors.New("no response to apply")
	}
	c := resp.Control
	if err := e.validate(resp); err != nil {
		return nil, err
	}
	if resp.Bare {
		c.ProjectID = e.Opts.ProjectID // the record says which project it was applied to
	}

	if e.Lock == nil {
		lk, err := tryLock(e.Dir)
		if err != nil {
			return nil, err
		}
		defer lk.unlock()
		rec, err := recoverLocked(e.Dir, e.RecordKey)
		if err != nil {
			return nil, err
		}
		for _, r := range rec {
			if r.Refused != "" {
				e.logf("Left %s alone: %s.", r.Record, r.Refused)
				continue
			}
			e.logf("Recovered interrupted transaction %s: restored %d file(s).", r.UUID, len(r.Restored))
		}
	}
	if Committed(e.Dir, c.UUID, e.RecordKey) {
		return nil, &SkipError{Kind: SkipDuplicate, Reason: fmt.Sprintf("uuid '%s' has already been processed", c.UUID)}
	}

	e.logf("Starting transaction %s (%d operation(s)).", c.UUID, len(resp.Operations))
	if len(resp.Reasoning) > 0 {
		e.logf("Reasoning:")
		for _, line := range resp.Reasoning {
			e.logf("  %s", line)
		}
	}
	fail := func(step string, err error) *Failure {
		return &Failure{UUID: c.UUID, Step: step, Err: err}
	}

	if cmd := strings.TrimSpace(e.Opts.PreCommand); cmd != "" {
		e.logf("  - Running pre-command: %s", cmd)
		res, err := e.shell(ctx, cmd)
		if err != nil {
			return nil, fail("pre-command", err)
		}
		if res.ExitCode != 0 {
			return nil, fail("pre-command", commandFailed(cmd, res))
		}
	}
	baseline := -1
	var baseDiags []string
	if cmd := strings.TrimSpace(e.Opts.Linter); cmd != "" {
		n, diags, err := e.lint(ctx, cmd, e.shell)
		if err != nil {
			return nil, fail("linter", err)
		}
		baseline, baseDiags = n, diags
		e.logf("  - Baseline linter error count: %d", n)
	}
	if ctx.Err() != nil {
		return nil, fail("interrupted", errors.New("interrupted before any change"))
	}

	proj, err := openProject(e.Dir)
	if err != nil {
		return nil, fail("snapshot", err)
	}
	defer proj.close()
	pl, err := e.plan(proj, req)
	if err != nil {
		step := StepSnapshot
		var (
			pe   *patchError
			path *PathError
		)
		if errors.As(err, &pe) {
			step = StepPatch
		} else if errors.As(err, &path) {
			step = StepPathCheck
		}
		return nil, fail(step, err)
	}

	st := &State{
		UUID:          c.UUID,
		ProjectID:     c.ProjectID,
		CreatedAt:     e.now().UTC(),
		GitCommitMsg:  c.GitCommitMsg,
		PromptSummary: c.PromptSummary,
		Reasoning:     nonNil(resp.Reasoning),
		Operations:    resp.Operations,
		Snapshot:      make(map[string]*string, len(pl.order)),
		Modes:         map[string]string{},
		CreatedDirs:   pl.createdDirs,
		RevertOf:      req.RevertOf,
		PID:           os.Getpid(),
	}
	for _, name := range pl.order {
		orig := pl.orig[name]
		if orig.exists {
			content := orig.content
			st.Snapshot[name] = &content
			st.Modes[name] = fmt.Sprintf("%04o", orig.mode.Perm())
		} else {
			st.Snapshot[name] = nil
		}
	}
	data, err := st.marshal()
	if err != nil {
		return nil, fail("snapshot", fmt.Errorf("encode pending record: %w", err))
	}
	pl.pendingYAML = data
	pending := pendingPath(e.Dir, c.UUID)
	if err := writeFileSync(pending, seal(e.RecordKey, data)); err != nil {
		return nil, fail("snapshot", fmt.Errorf("write %s: %w", pending, err))
	}
	e.logf("  - Staged changes to %s/%s%s", StateDir, c.UUID, pendingSuffix)

	// From here on project files change: every failure rolls back.
	rollback := func(step string, cause error) *Failure {
		f := fail(step, cause)
		f.Touched = true
		e.logf("Rolling back changes: %v", cause)
		f.Restored, f.RollbackErr = proj.restore(st)
		if f.RollbackErr == nil {
			if err := os.Remove(pending); err != nil && !errors.Is(err, fs.ErrNotExist) {
				f.RollbackErr = fmt.Errorf("remove pending record: %w", err)
			} else {
				_ = syncDir(stateDir(e.Dir))
				e.logf("Transaction %s rolled back; %d file(s) restored.", c.UUID, len(f.Restored))
			}
		}
		return f
	}

	e.logf("  - Applying file operations...")
	if err := pl.materialize(proj); err != nil {
		return nil, rollback("write", err)
	}
	proj.pruneDirs(req.PruneDirs)
	for _, line := range pl.opLines {
		e.logf("    %s", line)
	}
	if ctx.Err() != nil {
		return nil, rollback("interrupted", errors.New("interrupted (Ctrl-C) while applying"))
	}

	if cmd := strings.TrimSpace(e.Opts.PostCommand); cmd != "" {
		e.logf("  - Running post-command: %s", cmd)
		res, err := e.hook(ctx, cmd, c.UUID)
		if ctx.Err() != nil {
			return nil, rollback("interrupted", errors.New("interrupted (Ctrl-C) during the post-command"))
		}
		if err != nil {
			return nil, rollback("post-command", err)
		}
		if res.ExitCode != 0 {
			return nil, rollback("post-command", commandFailed(cmd, res))
		}
	}
	final := 0
	var finalDiags []string
	if cmd := strings.TrimSpace(e.Opts.Linter); cmd != "" {
		n, diags, err := e.lint(ctx, cmd, func(ctx context.Context, cmd string) (CommandResult, error) { return e.hook(ctx, cmd, c.UUID) })
		finalDiags = diags
		if ctx.Err() != nil {
			return nil, rollback("interrupted", errors.New("interrupted (Ctrl-C) during the linter"))
		}
		if err != nil {
			return nil, rollback("linter", err)
		}
		final = n
		e.logf("  - Final linter error count: %d (baseline %d)", n, baseline)
	}

	if err := e.approve(ctx, req, pl, baseline, final, baseDiags, finalDiags); err != nil {
		if ctx.Err() != nil {
			return nil, rollback("interrupted", errors.New("interrupted (Ctrl-C) before approval"))
		}
		return nil, rollback("approval", err)
	}
	if ctx.Err() != nil {
		return nil, rollback("interrupted", errors.New("interrupted (Ctrl-C) before commit"))
	}

	contents, err := e.commit(proj, st, pl)
	if err != nil {
		return nil, rollback("commit", err)
	}
	res := &Result{State: st, Baseline: baseline, Final: final, Contents: contents}
	if e.Opts.AutoGitBranch {
		res.Branch, res.BranchErr = e.autoBranch(ctx, st)
	}
	res.Duration = time.Since(start)
	return res, nil
}

func (e *Engine) validate(resp *patch.Response) error {
	c := resp.Control
	if err := validUUID(c.UUID); err != nil {
		return &SkipError{Kind: SkipInvalid, Reason: err.Error()}
	}
	// An answer without a control block (any other format) names no project to check.
	if !resp.Bare && c.ProjectID != e.Opts.ProjectID {
		return &SkipError{Kind: SkipWrongProject, Reason: fmt.Sprintf("projectId mismatch (expected '%s', got '%s')", e.Opts.ProjectID, c.ProjectID)}
	}
	n := len(resp.Operations)
	if n == 0 {
		return &SkipError{Kind: SkipEmpty, Reason: "the response has no file operations"}
	}
	if e.Opts.MinFileChanges > 0 && n < e.Opts.MinFileChanges {
		return &SkipError{Kind: SkipFileCount, Reason: fmt.Sprintf("not enough file changes (expected at least %d, got %d)", e.Opts.MinFileChanges, n)}
	}
	if e.Opts.MaxFileChanges > 0 && n > e.Opts.MaxFileChanges {
		return &SkipError{Kind: SkipFileCount, Reason: fmt.Sprintf("too many file changes (expected at most %d, got %d)", e.Opts.MaxFileChanges, n)}
	}
	return nil
}

func commandFailed(cmd string, res CommandResult) error {
	msg := fmt.Sprintf("%q exited with code %d", cmd, res.ExitCode)
	if s := strings.TrimSpace(res.Stderr); s != "" {
		msg += "\nStderr: " + lastLines(s, 20)
	} else if s := strings.TrimSpace(res.Stdout); s != "" {
		msg += "\nOutput: " + lastLines(s, 20)
	}
	return errors.New(msg)
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (e *Engine) shell(ctx context.Context, cmd string) (CommandResult, error) {
	if e.Shell != nil {
		return e.Shell(ctx, e.Dir, cmd)
	}
	return ShellRunner(ctx, e.Dir, cmd)
}

// hook runs a command while the transaction is pending (post-command, final
// linter) in its own process group, recorded in .relaycode/<uuid>.hook before
// the command starts so crash recovery can kill the whole group. When the
// command ends, whatever it left running in its group is killed too: nothing
// may write into the project after the transaction is decided.
func (e *Engine) hook(ctx context.Context, cmd, id string) (CommandResult, error) {
	if e.Shell != nil {
		return e.Shell(ctx, e.Dir, cmd)
	}
	var group *run.Group
	hookFile := hookPath(e.Dir, id)
	res, err := shellRun(ctx, e.Dir, cmd, func(g run.Group) error {
		group = &g
		return writeFileSync(hookFile, seal(e.RecordKey, []byte("group: "+g.String()+"\n")))
	})
	if group != nil {
		kerr := run.KillGroup(*group)
		if kerr == nil {
			_ = os.Remove(hookFile)
		} else if err == nil {
			err = kerr
		}
	}
	return res, err
}

func (e *Engine) lint(ctx context.Context, cmd string, shell func(context.Context, string) (CommandResult, error)) (int, []string, error) {
	res, err := shell(ctx, cmd)
	if err != nil {
		return 0, nil, fmt.Errorf("linter %q: %w", cmd, err)
	}
	if res.ExitCode == 126 || res.ExitCode == 127 {
		// The shell could not start it: the count means nothing, say so.
		e.logf("  ! The linter did not run (exit %d: %s); fix patch.linter in the config.", res.ExitCode, firstLine(strings.TrimSpace(res.Stderr)))
	}
	return lint.Count(res.Stdout, res.Stderr, res.ExitCode), lint.Diagnostics(res.Stdout, res.Stderr, res.ExitCode), nil
}

func (e *Engine) approve(ctx context.Context, req Request, pl *plan, baseline, final int, baseDiags, finalDiags []string) error {
	if cfg := pl.configChanges(); len(cfg) > 0 && !req.AllowConfigChange {
		// A config names the commands relay runs: an answer that changes it
		// would choose what runs on the next apply. Only a person may approve.
		reason := fmt.Sprintf("Manual approval required: the answer changes %s, which names the commands relay runs (preCommand, postCommand, linter); -y and automatic approval do not cover that.", strings.Join(cfg, ", "))
		return e.askApproval(ctx, &NeedsApprovalError{Reason: reason, ConfigChange: true}, nil)
	}
	if req.Yes {
		e.logf("  - Changes approved via -y/--yes.")
		return nil
	}
	introduced := final - max(baseline, 0)
	var reason string
	if e.Opts.ApprovalMode == "manual" {
		reason = `Manual approval required because "approvalMode" is "manual".`
	} else if introduced <= e.Opts.ApprovalOnErrorCount {
		e.logf("  - Changes automatically approved based on your configuration.")
		return nil
	} else {
		reason = fmt.Sprintf("Manual approval required: the linter found %d new error(s) (threshold is %d).", introduced, e.Opts.ApprovalOnErrorCount)
		// Show what the linter said before anyone approves (or is told how to).
		shown, n := newLintErrors(baseDiags, finalDiags)
		return e.askApproval(ctx, &NeedsApprovalError{Reason: reason, LintErrors: shown}, func() {
			if len(shown) > 0 {
				e.logf("  New linter errors (%d shown of %d):", len(shown), n)
				for _, l := range shown {
					e.logf("    %s", l)
				}
			}
		})
	}
	return e.askApproval(ctx, &NeedsApprovalError{Reason: reason}, nil)
}

// askApproval asks the person (after showing what explain prints); without
// anyone to ask, need is the error that says what approval was needed.
func (e *Engine) askApproval(ctx context.Context, need *NeedsApprovalError, explain func()) error {
	if e.Ask == nil {
		return need
	}
	e.logf("%s", need.Reason)
	if explain != nil {
		explain()
	}
	ok, err := e.Ask(ctx, need.Reason)
	if err != nil {
		return err
	}
	if !ok {
		return ErrRejected
	}
	return nil
}

// commit records the transaction as approved: fingerprints and stats, the
// committed record written and fsynced, then the pending record removed.
// It returns what each touched path holds as committed (nil: absent).
func (e *Engine) commit(proj *project, st *State, pl *plan) (map[string]*string, error) {
	if !e.NoSync {
		if err := pl.syncWritten(proj); err != nil {
			return nil, fmt.Errorf("flush written files: %w", err)
		}
	}
	st.After = make(map[string]string, len(pl.order))
	contents := make(map[string]*string, len(pl.order))
	for _, name := range pl.order {
		cur, err := proj.read(name)
		if err != nil {
			return nil, err
		}
		st.After[name] = fingerprint(cur.content, cur.exists, cur.mode)
		if cur.exists {
			contents[name] = &cur.content
		} else {
			contents[name] = nil
		}
	}
	st.Files = pl.fileChanges()
	st.Approved = true
	data, err := committedYAML(st, pl.pendingYAML)
	if err != nil {
		return nil, err
	}
	if err := writeFileSync(committedPath(e.Dir, st.UUID), seal(e.RecordKey, data)); err != nil {
		return nil, fmt.Errorf("write committed record: %w", err)
	}
	// A crash here leaves both files; recovery keeps the committed one.
	if err := os.Remove(pendingPath(e.Dir, st.UUID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove pending record: %w", err)
	}
	return contents, syncDir(stateDir(e.Dir))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// parallel runs fn over items with a few goroutines, returning the first error.
func parallel(items []string, fn func(string) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	ch := make(chan string)
	for range min(8, len(items)) {
		wg.Go(func() {
			for it := range ch {
				if err := fn(it); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
	return first
}

// committedYAML is the pending record with the commit fields in place of its
// final "approved: false" line, so the snapshot is not encoded twice (the
// biggest CPU cost of a large transaction).
func committedYAML(st *State, pending []byte) ([]byte, error) {
	const tail = "approved: false\n"
	if !bytes.HasSuffix(pending, []byte(tail)) {
		return st.marshal()
	}
	extra, err := yaml.Marshal(struct {
		After    map[string]string `yaml:"after,omitempty"`
		Files    []FileChange      `yaml:"files,omitempty"`
		Approved bool              `yaml:"approved"`
	}{st.After, st.Files, st.Approved})
	if err != nil {
		return nil, err
	}
	out := append(bytes.Clone(pending[:len(pending)-len(tail)]), extra...)
	return out, nil
}
