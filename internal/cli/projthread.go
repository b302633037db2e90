package cli

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/workspace"
)

// projectRoot returns the root of the project governing the working directory.
func projectRoot(f *Factory) (string, error) {
	dir, err := f.WorkDir()
	if err != nil {
		return "", err
	}
	file, err := config.Find(dir)
	if err != nil {
		return "", WithHint(errors.New("not in a relay project (no relaycode.config.json here or above)"), "relay init")
	}
	return filepath.Dir(file), nil
}

func newCmdThreadUse(f *Factory) *cobra.Command {
	var clear, makeNew bool
	cmd := &cobra.Command{
		Use:   "use [thread]",
		Short: "Make a thread this project's memory (apply and ask then record into it)",
		Long: `Remember a thread for the project in .relaycode/thread. relay apply, watch, revert,
git commit and ask then record into it when neither --thread nor RELAY_THREAD is given.
Without an argument, print the project's thread; --clear forgets it; --new makes a
thread named after the project directory (the next free "name (2)" when another thread
has that name, as relay mcp does) and uses it.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := projectRoot(f)
			if err != nil {
				return err
			}
			if makeNew && (clear || len(args) > 0) {
				return WithHint(Usagef("--new makes the thread: give no thread and no --clear"), "relay thread use --new")
			}
			switch {
			case clear:
				return workspace.WriteProjectThread(root, "")
			case makeNew:
				c, err := memoryClient(f)
				if err != nil {
					return err
				}
				t, err := c.CreateThreadIf(cmd.Context(), filepath.Base(root), memory.NameTakenNext)
				if err != nil {
					return apiErr(err, "")
				}
				if err := workspace.WriteProjectThread(root, t.ID); err != nil {
					return err
				}
				fmt.Fprintf(f.IO.ErrOut, "This project now records into the new thread %s (%s).\n", t.ID, field(t.Name))
				return printKV(f, "thread_id", t.ID)
			case len(args) == 0:
				id, err := workspace.ReadProjectThread(root)
				var tracked *workspace.TrackedThreadError
				if errors.As(err, &tracked) {
					return WithHint(err, workspace.TrackedThreadHint)
				}
				if err != nil {
					return WithHint(err, "relay thread use THREAD   (to replace it)")
				}
				if id == "" {
					return WithHint(errors.New("this project has no thread yet"), "relay thread use --new")
				}
				_, err = fmt.Fprintln(f.IO.Out, id)
				return err
			}
			_, id, err := threadClient(cmd.Context(), f, args[0])
			if err != nil {
				return err
			}
			if err := workspace.WriteProjectThread(root, id); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "This project now records into thread %s.\n", id)
			return nil
		},
	}
	cmd.Flags().BoolVar(&clear, "clear", false, "forget the project's thread")
	cmd.Flags().BoolVar(&makeNew, "new", false, "make a thread named after the project and use it")
	return cmd
}
