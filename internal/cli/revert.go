package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/workspace"
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
	// Memory records the revert in the thread (nil: do not record); Thread is --thread.
	Memory *workspace.Memory
	Thread string
}

func newCmdRevert(f *Factory) *cobra.Command {
	opts := &RevertOptions{IO: f.IO, Config: f.ProjectConfig, Home: f.Home}
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
			opts.Memory = f.memory()
			return revertRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Thread, "thread", "", "record the revert in this memory thread (default $RELAY_THREAD, then the project's thread; skipped when none)")
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
	if opts.Ref == "" {
		fmt.Fprintln(opts.IO.ErrOut, "Looking for the latest transaction...")
	}
	ws := personWorkspace(opts.IO, cfg, opts.Home, opts.Memory, opts.Thread)
	out, err := ws.Revert(ctx, workspace.RevertRequest{Ref: opts.Ref, Force: opts.Force, AllowConfigChange: opts.AllowConfigChange,
		Confirm: func(ctx context.Context, st *txn.State, revertUUID string) (bool, error) {
			fmt.Fprintln(opts.IO.ErrOut, "Transaction to be reverted:")
			printLogEntry(opts.IO.ErrOut, workspace.LogEntry{UUID: st.UUID, CreatedAt: st.CreatedAt, PromptSummary: st.PromptSummary,
				GitCommitMsg: st.GitCommitMsg, Files: st.Files, RevertOf: st.RevertOf})
			if !opts.Yes {
				if !opts.IO.IsStdinTTY() {
					return false, WithHint(errors.New("reverting needs confirmation and there is no terminal to ask on"), "relay revert "+st.UUID+" -y")
				}
				ok, err := askYesNo(ctx, opts.IO, "Are you sure you want to revert this transaction? (y/N) ")
				if err != nil || !ok {
					return false, err
				}
			}
			fmt.Fprintf(opts.IO.ErrOut, "Creating new transaction %s to perform the revert.\n", revertUUID)
			return true, nil
		}})
	if errors.Is(err, workspace.ErrCancelled) {
		fmt.Fprintln(opts.IO.ErrOut, "Revert operation cancelled.")
		return nil
	}
	if err != nil {
		return err
	}
	return printCommitted(opts.IO, out.Result, opts.JSON, "")
}
