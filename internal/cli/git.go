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
	"github.com/relaydev/relay/internal/workspace"
)

// GitCommitOptions are the inputs of `relay git commit`.
type GitCommitOptions struct {
	IO     *iostreams.IOStreams
	Config func() (*config.Config, error)
	Yes    bool
	All    bool
	// Home returns $RELAY_HOME.
	Home func() (string, error)
	// Memory records the commit in the thread (nil: do not record); Thread is --thread.
	Memory *workspace.Memory
	Thread string
}

func newCmdGit(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "git",
		Short: "Git helpers for transactions",
	}
	opts := &GitCommitOptions{IO: f.IO, Config: f.ProjectConfig, Home: f.Home}
	commit := &cobra.Command{
		Use:     "commit",
		Aliases: []string{"c"},
		Short:   "Commit the latest transaction's files with its gitCommitMsg",
		Long: `Stage the files the latest transaction changed (--all: everything, like
git add .) and commit them with the transaction's gitCommitMsg; multi-line
messages are kept as written.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Memory = f.memory()
			return gitCommitRun(cmd.Context(), opts)
		},
	}
	commit.Flags().StringVar(&opts.Thread, "thread", "", "record the commit in this memory thread (default $RELAY_THREAD, then the project's thread; skipped when none)")
	commit.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "commit without asking")
	commit.Flags().BoolVar(&opts.All, "all", false, "stage every change in the project (git add .), not only the transaction's files")
	cmd.AddCommand(commit)
	return cmd
}

func gitCommitRun(ctx context.Context, opts *GitCommitOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	all, ignored, err := txn.List(cfg.Dir, recordKey(opts.Home))
	warnIgnored(opts.IO.ErrOut, ignored)
	if err != nil {
		return err
	}
	if len(all) == 0 {
		return WithHint(errors.New("no committed transaction to commit"), "relay apply FILE, or relay watch")
	}
	st := all[0]
	msg := strings.TrimSpace(st.GitCommitMsg)
	// Running relay git commit again cannot help: the response had no message.
	if msg == "" {
		return WithHint(fmt.Errorf("transaction %s has no gitCommitMsg, so relay has no message to commit it with", st.UUID), `git add -A && git commit -m "…"   (commit it yourself)`)
	}
	fmt.Fprintf(opts.IO.ErrOut, "Latest transaction %s:\n", st.UUID)
	for _, l := range strings.Split(msg, "\n") {
		fmt.Fprintf(opts.IO.ErrOut, "  %s\n", l)
	}
	what := fmt.Sprintf("its %d file(s)", len(st.TouchedPaths()))
	if opts.All {
		what = "every change (git add .)"
	}
	if !opts.Yes {
		if !opts.IO.IsStdinTTY() {
			return WithHint(errors.New("committing needs confirmation and there is no terminal to ask on"), "relay git commit -y")
		}
		ok, err := askYesNo(ctx, opts.IO, "Stage "+what+" and commit with this message? (y/N) ")
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(opts.IO.ErrOut, "Commit cancelled.")
			return nil
		}
	}
	summary, err := txn.GitCommit(ctx, cfg.Dir, st, txn.CommitOptions{All: opts.All})
	if errors.Is(err, txn.ErrNothingToCommit) {
		return WithHint(err, "git log -1 --stat   (the changes may be committed already), or git status")
	}
	if err != nil {
		return WithHint(err, "git status   (see what git thinks), then relay git commit again")
	}
	ws := personWorkspace(opts.IO, cfg, opts.Home, opts.Memory, opts.Thread)
	ws.RecordEvent(ctx, workspace.EventTxnGitCommit, map[string]any{"uuid": st.UUID, "message": workspace.ClipRunes(msg, 280),
		"git": workspace.ClipRunes(workspace.FirstLine(summary), 280)})
	_, err = fmt.Fprintln(opts.IO.Out, summary)
	return err
}
