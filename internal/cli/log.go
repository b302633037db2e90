package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/workspace"
)

// LogOptions are the inputs of `relay log`.
type LogOptions struct {
	IO     *iostreams.IOStreams
	Config func() (*config.Config, error)
	JSON   bool
	Limit  int
}

func newCmdLog(f *Factory) *cobra.Command {
	opts := &LogOptions{IO: f.IO, Config: f.ProjectConfig}
	cmd := &cobra.Command{
		Use:     "log",
		Aliases: []string{"l"},
		Short:   "List committed transactions, newest first",
		Long: `List the project's committed transactions, newest first: uuid, date, prompt
summary, git commit message and each file with +added -removed lines.
Like every project command, it first rolls back any transaction a crashed
relay left pending.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return logRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON")
	cmd.Flags().IntVarP(&opts.Limit, "limit", "n", 0, "show at most this many transactions")
	return cmd
}

func logRun(opts *LogOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	ws := personWorkspace(opts.IO, cfg, nil, nil, "")
	entries, _, err := ws.Log(opts.Limit)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(opts.IO.Out, entries)
	}
	if len(entries) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "No committed transactions yet. Apply one with relay watch or relay apply FILE.")
		return nil
	}
	for i, e := range entries {
		if i > 0 {
			fmt.Fprintln(opts.IO.Out)
		}
		printLogEntry(opts.IO.Out, e)
	}
	return nil
}

// printLogField prints "Label: text" on one line; a multi-line text goes under "Label:",
// every line indented two spaces like the Changes list.
func printLogField(w io.Writer, label, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	lines := strings.Split(text, "\n")
	if len(lines) == 1 {
		fmt.Fprintf(w, "%s: %s\n", label, field(text))
		return
	}
	fmt.Fprintf(w, "%s:\n", label)
	for _, l := range lines {
		if l = strings.TrimRight(l, " \t\r"); l == "" {
			fmt.Fprintln(w)
			continue
		}
		fmt.Fprintf(w, "  %s\n", field(l))
	}
}

func printLogEntry(w io.Writer, e workspace.LogEntry) {
	fmt.Fprintf(w, "UUID: %s\n", e.UUID)
	fmt.Fprintf(w, "Date: %s\n", e.CreatedAt.Local().Format("2006-01-02 15:04:05 MST"))
	printLogField(w, "Prompt Summary", e.PromptSummary)
	printLogField(w, "Git Commit", e.GitCommitMsg)
	if e.RevertOf != "" {
		fmt.Fprintf(w, "Reverts: %s\n", field(e.RevertOf))
	}
	if e.RevertedBy != "" {
		fmt.Fprintf(w, "Reverted by: %s\n", field(e.RevertedBy))
	}
	fmt.Fprintln(w, "Changes:")
	for _, f := range e.Files {
		name := f.Path
		if f.From != "" {
			name = f.From + " -> " + f.Path
		}
		fmt.Fprintf(w, "  %-6s %s (+%d -%d)\n", field(f.Action), field(name), f.Added, f.Removed)
	}
}
