package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/iostreams"
)

// LogOptions are the inputs of `relay log`.
type LogOptions struct {
	IO     *iostreams.IOStreams
	Config func() (*config.Config, error)
	JSON   bool
	Limit  int
	// Home returns $RELAY_HOME, where the record key lives.
	Home func() (string, error)
}

func newCmdLog(f *Factory) *cobra.Command {
	opts := &LogOptions{IO: f.IO, Config: f.ProjectConfig, Home: f.Home}
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

type logEntry struct {
	Index         int              `json:"index,omitempty"`
	UUID          string           `json:"uuid"`
	CreatedAt     time.Time        `json:"createdAt"`
	PromptSummary string           `json:"promptSummary"`
	GitCommitMsg  string           `json:"gitCommitMsg"`
	Files         []txn.FileChange `json:"files"`
	RevertOf      string           `json:"revertOf,omitempty"`
	RevertedBy    string           `json:"revertedBy,omitempty"`
}

func logRun(opts *LogOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	all, ignored, err := txn.List(cfg.Dir, recordKey(opts.Home))
	if err != nil {
		return WithHint(err, "fix or move the broken file in .relaycode/")
	}
	warnIgnored(opts.IO.ErrOut, ignored)
	reverted := txn.RevertedByMap(all)
	entries := make([]logEntry, 0, len(all))
	for _, s := range all {
		entries = append(entries, logEntry{
			UUID: s.UUID, CreatedAt: s.CreatedAt, PromptSummary: s.PromptSummary, GitCommitMsg: s.GitCommitMsg,
			Files: nonNilFiles(s.Files), RevertOf: s.RevertOf, RevertedBy: reverted[s.UUID],
		})
	}
	if opts.Limit > 0 && len(entries) > opts.Limit {
		entries = entries[:opts.Limit]
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

func printLogEntry(w io.Writer, e logEntry) {
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
