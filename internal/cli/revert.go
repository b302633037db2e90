package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/iostreams"
)

// RevertOptions are the inputs of `relay revert`.
type RevertOptions struct {
	IO     *iostreams.IOStreams
	Config func() (*config.Config, error)
	Ref    string
	Yes    bool
	Force  bool
	JSON   bool
	// AllowConfigChange lets the revert change a config file without a
	// person approving it on the terminal.
	AllowConfigChange bool
	// Home returns $RELAY_HOME, where the record key lives.
	Home func() (string, error)
	// Mem records transactions in the memory thread (nil: do not record).
	Mem *txnMemory
}

func newCmdRevert(f *Factory) *cobra.Command {
	opts := &RevertOptions{IO: f.IO, Config: f.ProjectConfig, Home: f.Home}
	var thread string
	cmd := &cobra.Command{
		Use:     "revert [uuid|index]",
		Aliases: []string{"u"},
		Short:   "Undo a committed transaction with a new, inverse transaction",
		Long: `Undo a committed transaction by running its inverse as a new transaction
(own uuid, reasoning "Reverting transaction <uuid>."): files get back their
old bytes and modes, files it created are deleted.

The argument is a uuid (or its first 8+ characters) or an index: 1 (the
default) is the latest transaction that is not a revert and not already
reverted, so repeating relay revert walks back through history. A revert can
be reverted by its uuid. relay refuses when the files changed since that
transaction, unless --force.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Ref = args[0]
			}
			opts.Mem = newTxnMemory(f, f.IO.ErrOut, thread)
			return revertRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&thread, "thread", "", "record the revert in this memory thread (default $RELAY_THREAD, then the project's thread; skipped when none)")
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "revert without asking")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "revert even if the files changed since (those later edits are lost)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the new transaction as JSON")
	cmd.Flags().BoolVar(&opts.AllowConfigChange, "allow-config-change", false, "let -y cover a revert that changes relaycode.config.json")
	return cmd
}

func revertRun(ctx context.Context, opts *RevertOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	ref := opts.Ref
	if ref == "" {
		ref = "1"
		fmt.Fprintln(opts.IO.ErrOut, "Looking for the latest transaction...")
	}
	key := recordKey(opts.Home)
	st, err := txn.Find(cfg.Dir, ref, key)
	if err != nil {
		var nf *txn.NotFoundError
		if errors.As(err, &nf) {
			return WithHint(err, "relay log")
		}
		return err
	}
	if by, err := txn.RevertedBy(cfg.Dir, st, key); err == nil && by != "" && !opts.Force {
		return WithHint(fmt.Errorf("transaction %s was already reverted by %s", st.UUID, by),
			"relay revert "+by+"   (to bring the change back)")
	}
	changed, err := txn.Changed(cfg.Dir, st)
	if err != nil {
		return err
	}
	if len(changed) > 0 && !opts.Force {
		return WithHint(fmt.Errorf("the files of transaction %s changed since it was applied: %s; reverting would lose those edits",
			st.UUID, strings.Join(changed, ", ")), "relay revert "+st.UUID+" --force   (discard the later edits)")
	}
	fmt.Fprintln(opts.IO.ErrOut, "Transaction to be reverted:")
	printLogEntry(opts.IO.ErrOut, logEntry{UUID: st.UUID, CreatedAt: st.CreatedAt, PromptSummary: st.PromptSummary,
		GitCommitMsg: st.GitCommitMsg, Files: st.Files, RevertOf: st.RevertOf})
	if !opts.Yes {
		if !opts.IO.IsStdinTTY() {
			return WithHint(errors.New("reverting needs confirmation and there is no terminal to ask on"), "relay revert "+st.UUID+" -y")
		}
		ok, err := askYesNo(ctx, opts.IO, "Are you sure you want to revert this transaction? (y/N) ")
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(opts.IO.ErrOut, "Revert operation cancelled.")
			return nil
		}
	}
	req, err := txn.RevertRequest(st)
	if err != nil {
		return err
	}
	req.Yes = true // the user confirmed the revert itself
	fmt.Fprintf(opts.IO.ErrOut, "Creating new transaction %s to perform the revert.\n", req.Response.Control.UUID)
	req.AllowConfigChange = opts.AllowConfigChange
	eng, _, err := newEngine(ctx, opts.IO, cfg, opts.Home, false)
	if err != nil {
		return err
	}
	res, err := eng.Run(ctx, req)
	var need *txn.NeedsApprovalError
	if errors.As(err, &need) && need.ConfigChange {
		return WithHint(err, "relay revert "+st.UUID+" -y --allow-config-change   (after reading the config change it brings back)")
	}
	if err != nil {
		opts.Mem.recordFailure(ctx, err)
		return txnError(err, "")
	}
	opts.Mem.recordTxn(ctx, EventTxnReverted, cfg.Dir, res.State, nil)
	return printCommitted(opts.IO, res, opts.JSON, "")
}
