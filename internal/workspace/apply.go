package workspace

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/relaydev/relay/internal/apply/patch"
	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/config"
)

// Events a project's transactions leave in its memory thread.
const (
	EventTxnApplied    = "txn.applied"
	EventTxnRolledBack = "txn.rolled_back"
	EventTxnReverted   = "txn.reverted"
	EventTxnGitCommit  = "txn.git_committed"
)

// AnswerRequest is an LLM answer to apply as one transaction.
type AnswerRequest struct {
	// Text is the answer; Response, when set, is the answer already parsed (relay watch
	// parses the clipboard itself to tell answers from other text).
	Text     string
	Response *patch.Response
	// Source is where the answer came from, for messages and next steps: a file name,
	// "-" for stdin, "" for the clipboard or a tool call.
	Source string
	// Op names the operation in next steps: "apply" (the default) or "watch".
	Op string
	// Yes approves without asking; AllowConfigChange lets that cover a change to a config
	// file (it names the commands relay runs).
	Yes, AllowConfigChange bool
	// DryRun plans the transaction and touches nothing.
	DryRun bool
	// Format reads Text in that format only (relay, diff, codex, search-replace, edit,
	// whole); "" detects it (patch.ParseAnswer).
	Format patch.Format
}

// Outcome is what a transaction operation did.
type Outcome struct {
	// Answer is the answer as read; its Format names the format detected (front doors
	// print "format: git diff, 3 files").
	Answer *patch.Response
	// Result is the committed transaction; nil on a dry run.
	Result *txn.Result
	// Plan is what a dry run would do.
	Plan *txn.Plan
	// Reverted is the transaction a revert undid (or would undo, on a dry run).
	Reverted *txn.State
	// CommandsSkipped says which of the config's commands did not run because the person
	// has not trusted the config, and why ("" when none were skipped).
	CommandsSkipped string
}

// Apply applies an answer as one transaction and records it in the thread.
func (w *Workspace) Apply(ctx context.Context, req AnswerRequest) (*Outcome, error) {
	cfg, err := w.project()
	if err != nil {
		return nil, err
	}
	op := req.Op
	if op == "" {
		op = "apply"
	}
	resp := req.Response
	if resp == nil {
		if resp, err = patch.ParseAnswer(req.Text, req.Format); err != nil {
			if rerr := w.Recover(); rerr != nil {
				return nil, rerr
			}
			return nil, &AnswerError{Source: req.Source, Err: err}
		}
	}
	if resp.Bare && op == "watch" {
		// Nothing names the project: act only on an answer that plainly edits this one
		// (copied code alone never writes a file).
		if err := txn.CheckTargets(cfg.Dir, resp); err != nil {
			return nil, &AnswerError{Source: req.Source, Err: err}
		}
	}
	for _, b := range resp.Ignored {
		w.notef("Ignored the code block at line %d (```%s): %s", b.Line, b.Header, b.Reason)
	}
	out, err := w.run(ctx, cfg, &OpError{Op: op, Source: req.Source},
		txn.Request{Response: resp, Yes: req.Yes, AllowConfigChange: req.AllowConfigChange}, req.DryRun, EventTxnApplied)
	if out != nil {
		out.Answer = resp
	}
	return out, err
}

// EditRequest is old_string/new_string edits of one file, applied in order as one
// transaction (an agent's edit tool call).
type EditRequest struct {
	Path   string
	Edits  []patch.Edit
	DryRun bool
}

// Edit applies edits to one file as a transaction of its own: logged, linted, recorded
// and revertable like any answer. The edits run through the patch engine's edit strategy
// against the file as the transaction snapshotted it.
func (w *Workspace) Edit(ctx context.Context, req EditRequest) (*Outcome, error) {
	cfg, err := w.project()
	if err != nil {
		return nil, err
	}
	return w.run(ctx, cfg, &OpError{Op: "edit"}, txn.Request{Response: editResponse(cfg, req)}, req.DryRun, EventTxnApplied)
}

// editResponse is an edit request as the response of a transaction.
func editResponse(cfg *config.Config, req EditRequest) *patch.Response {
	summary := "Edit " + req.Path
	return &patch.Response{
		Control: patch.Control{ProjectID: cfg.ProjectID, UUID: uuid.NewString(), PromptSummary: summary, GitCommitMsg: summary,
			ChangeSummary: []patch.ChangeSummaryItem{{Action: "edit", Path: req.Path}}},
		Operations: []patch.Operation{{Kind: patch.OpWrite, Path: req.Path, Strategy: patch.EditStrategy, Edits: req.Edits}},
		Reasoning:  []string{"Edit made through relay mcp (old_string/new_string)."},
	}
}

// RevertRequest undoes a committed transaction with a new, inverse one.
type RevertRequest struct {
	// Ref is a uuid, a uuid prefix or an index ("1", the default, is the latest
	// transaction that is neither a revert nor reverted).
	Ref string
	// Force reverts even when the files changed since (those later edits are lost).
	Force bool
	// AllowConfigChange lets the revert change a config file without a person approving it.
	AllowConfigChange bool
	DryRun            bool
	// Confirm is asked once the revert is known to be possible, with the transaction it
	// undoes and the uuid the revert gets; false cancels (ErrCancelled). nil goes ahead:
	// the request is the confirmation.
	Confirm func(ctx context.Context, st *txn.State, revertUUID string) (bool, error)
}

// Revert undoes a committed transaction and records the revert in the thread.
func (w *Workspace) Revert(ctx context.Context, req RevertRequest) (*Outcome, error) {
	cfg, err := w.project()
	if err != nil {
		return nil, err
	}
	if err := w.Recover(); err != nil {
		return nil, err
	}
	ref := req.Ref
	if ref == "" {
		ref = "1"
	}
	key := w.readKey()
	st, err := txn.Find(cfg.Dir, ref, key)
	if err != nil {
		return nil, err
	}
	if by, err := txn.RevertedBy(cfg.Dir, st, key); err == nil && by != "" && !req.Force {
		return nil, &AlreadyRevertedError{UUID: st.UUID, By: by}
	}
	changed, err := txn.Changed(cfg.Dir, st)
	if err != nil {
		return nil, err
	}
	if len(changed) > 0 && !req.Force {
		return nil, &ChangedError{UUID: st.UUID, Files: changed}
	}
	treq, err := txn.RevertRequest(st)
	if err != nil {
		return nil, err
	}
	if req.Confirm != nil && !req.DryRun {
		ok, err := req.Confirm(ctx, st, treq.Response.Control.UUID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrCancelled
		}
	}
	treq.Yes = true // the request (or the confirmation) is the approval of the revert itself
	treq.AllowConfigChange = req.AllowConfigChange
	out, err := w.run(ctx, cfg, &OpError{Op: "revert", Reverts: st.UUID}, treq, req.DryRun, EventTxnReverted)
	if out != nil {
		out.Reverted = st
	}
	return out, err
}

// run plans or runs one transaction: a dry run after recovery, a real one under the
// project lock (recovering first), recorded in the thread either way it ends.
func (w *Workspace) run(ctx context.Context, cfg *config.Config, op *OpError, req txn.Request, dryRun bool, event string) (*Outcome, error) {
	eng, skipped, err := w.engine(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if dryRun {
		if err := w.Recover(); err != nil {
			return nil, err
		}
		eng.Logf = nil
		plan, err := eng.DryRun(req)
		if err != nil {
			op.Err = err
			return nil, op
		}
		return &Outcome{Plan: plan, CommandsSkipped: skipped}, nil
	}
	unlock, err := w.locked(eng)
	if err != nil {
		op.Err = err
		return nil, op
	}
	res, err := eng.Run(ctx, req)
	unlock()
	if err != nil {
		w.recordFailure(ctx, err)
		op.Err = err
		return nil, op
	}
	w.recordTxn(ctx, event, res)
	return &Outcome{Result: res, CommandsSkipped: skipped}, nil
}

// LogEntry is one committed transaction as relay log and the apply tool list it; Index
// is its place in the list (1: the newest), what Revert accepts as a ref.
type LogEntry struct {
	Index         int              `json:"index,omitempty"`
	UUID          string           `json:"uuid"`
	CreatedAt     time.Time        `json:"createdAt"`
	PromptSummary string           `json:"promptSummary"`
	GitCommitMsg  string           `json:"gitCommitMsg"`
	Files         []txn.FileChange `json:"files"`
	RevertOf      string           `json:"revertOf,omitempty"`
	RevertedBy    string           `json:"revertedBy,omitempty"`
}

// Log lists the project's committed transactions, newest first, at most limit of them
// (0: all); total is how many there are.
func (w *Workspace) Log(limit int) (entries []LogEntry, total int, err error) {
	cfg, err := w.project()
	if err != nil {
		return nil, 0, err
	}
	all, ignored, err := txn.List(cfg.Dir, w.readKey())
	if err != nil {
		return nil, 0, WithHint(err, "fix or move the broken file in .relaycode/")
	}
	for _, ig := range ignored {
		w.notef("Warning: ignored %s: %s.", ig.Record, ig.Why)
	}
	if len(ignored) > 0 {
		w.notef("Try: relay acts only on records it wrote on this machine; move the others out of .relaycode/ if you do not need them")
	}
	reverted := txn.RevertedByMap(all)
	entries = make([]LogEntry, 0, len(all))
	for _, s := range all {
		if limit > 0 && len(entries) == limit {
			break
		}
		entries = append(entries, LogEntry{Index: len(entries) + 1, UUID: s.UUID, CreatedAt: s.CreatedAt, PromptSummary: s.PromptSummary, GitCommitMsg: s.GitCommitMsg,
			Files: NonNilFiles(s.Files), RevertOf: s.RevertOf, RevertedBy: reverted[s.UUID]})
	}
	return entries, len(all), nil
}

// NonNilFiles is files, or an empty list (JSON shows [] rather than null).
func NonNilFiles(f []txn.FileChange) []txn.FileChange {
	if f == nil {
		return []txn.FileChange{}
	}
	return f
}

// Summary is the one line that says what a committed transaction changed.
func Summary(st *txn.State) string {
	added, removed := Stat(st)
	s := fmt.Sprintf("committed: %d file(s) changed, +%d -%d", len(st.Files), added, removed)
	if st.PromptSummary != "" {
		s = st.PromptSummary + "; " + s
	}
	return s
}

// Stat is the lines a transaction added and removed, over all its files.
func Stat(st *txn.State) (added, removed int) {
	for _, f := range st.Files {
		added += f.Added
		removed += f.Removed
	}
	return added, removed
}
