package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/config"
)

// txnOptions maps the project config onto what a transaction follows.
func txnOptions(cfg *config.Config) txn.Options {
	return txn.Options{
		ProjectID:            cfg.ProjectID,
		ApprovalMode:         cfg.Patch.ApprovalMode,
		ApprovalOnErrorCount: cfg.Patch.ApprovalOnErrorCount,
		Linter:               cfg.Patch.Linter,
		PreCommand:           cfg.Patch.PreCommand,
		PostCommand:          cfg.Patch.PostCommand,
		MinFileChanges:       cfg.Patch.MinFileChanges,
		MaxFileChanges:       cfg.Patch.MaxFileChanges,
		AutoGitBranch:        cfg.Git.AutoGitBranch,
		GitBranchPrefix:      cfg.Git.GitBranchPrefix,
		GitBranchTemplate:    cfg.Git.GitBranchTemplate,
		FuzzyThreshold:       cfg.Patch.FuzzyThreshold,
	}
}

// engine builds the project's transaction engine: the config's options, progress to
// Progress, approval as the policy allows, records sealed with the key in $RELAY_HOME.
// The config's commands are the engine's only when the person trusts the config
// (commandsGate); skipped says which were left out and why ("" when none).
func (w *Workspace) engine(ctx context.Context, cfg *config.Config) (eng *txn.Engine, skipped string, err error) {
	home, err := w.home()
	if err != nil {
		return nil, "", err
	}
	key, err := txn.LoadRecordKey(home)
	if err != nil {
		return nil, "", WithHint(fmt.Errorf("load the record key: %w", err), "relay doctor")
	}
	run, skipped, err := w.commandsGate(ctx, home, cfg)
	if err != nil {
		return nil, "", err
	}
	eng = &txn.Engine{Dir: cfg.Dir, Opts: txnOptions(run), RecordKey: key, Ask: w.approver()}
	if w.Progress != nil {
		eng.Logf = func(format string, args ...any) { w.Progress(fmt.Sprintf(format, args...)) }
	}
	return eng, skipped, nil
}

// Recover rolls back the transactions a crashed relay left pending in the project and
// says so in Notes, once per workspace. A command that runs no transaction calls it
// before anything else; Apply and Edit recover under the transaction's own lock instead
// (see locked), Revert before it reads the records it checks.
func (w *Workspace) Recover() error {
	if w.Config == nil {
		return nil
	}
	w.recoverOnce.Do(func() {
		recs, err := txn.Recover(w.Config.Dir, w.readKey())
		w.recoverErr = w.reportRecovery(recs, err)
	})
	return w.recoverErr
}

// readKey is this machine's record key, or nil when there is none yet (then no pending
// record here can be this machine's).
func (w *Workspace) readKey() []byte {
	home, err := w.home()
	if err != nil {
		return nil
	}
	key, _ := txn.ReadRecordKey(home)
	return key
}

// locked takes the project's transaction lock for eng and recovers under it, so the
// transaction that follows starts from a tree no crashed relay left half-changed (when
// Recover ran already this finds nothing, unless a relay crashed since). The caller runs
// eng and then calls unlock.
func (w *Workspace) locked(eng *txn.Engine) (unlock func(), err error) {
	lk, err := txn.LockProject(eng.Dir)
	if err != nil {
		return nil, err
	}
	recs, err := lk.Recover(eng.RecordKey)
	if err := w.reportRecovery(recs, err); err != nil {
		lk.Unlock()
		return nil, err
	}
	eng.Lock = lk
	return func() { eng.Lock = nil; lk.Unlock() }, nil
}

// reportRecovery tells Notes what recovery did and gives a recovery error its next step.
func (w *Workspace) reportRecovery(recs []txn.Recovered, err error) error {
	for _, r := range recs {
		switch {
		case r.Refused != "":
			w.notef("Warning: left %s alone: %s.", r.Record, r.Refused)
			w.notef("Try: move it out of the project if you do not need it (mv %s /tmp/), or see relay doctor", ShellQuote(r.Record))
		case r.Committed:
			w.notef("Cleaned up after an interrupted commit of transaction %s (it is committed).", r.UUID)
		default:
			line := fmt.Sprintf("Recovered interrupted transaction %s: rolled back, %d file(s) restored", r.UUID, len(r.Restored))
			if len(r.Restored) > 0 {
				line += fmt.Sprintf(" (%s)", strings.Join(r.Restored, ", "))
			}
			w.notef("%s.", line)
			if r.SavedTo != "" {
				w.notef("The files as they were before this recovery are kept in %s.", r.SavedTo)
			}
		}
	}
	var rerr *txn.RecordError
	if errors.As(err, &rerr) {
		return WithHint(fmt.Errorf("recover an interrupted transaction: %w", err),
			fmt.Sprintf("restore its files by hand from the snapshot in it if needed, then move it aside: mv %s %s.bad   (relay doctor explains each record)", ShellQuote(rerr.Record), ShellQuote(rerr.Record)))
	}
	if err != nil {
		return WithHint(fmt.Errorf("recover an interrupted transaction: %w", err), "fix the cause, then run the command again; relay doctor lists the pending records")
	}
	return nil
}

// ShellQuote quotes a path for a command line the user may copy.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
