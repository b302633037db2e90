package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/workspace"
)

func newCmdThread(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "thread",
		Short: "Create, list, show and follow memory threads",
	}
	runs, show, tail := newCmdRuns(f), newCmdShow(f), newCmdTail(f)
	runs.Aliases = []string{"ls", "list"}
	cmd.AddCommand(newCmdThreadNew(f), runs, show, tail, newCmdThreadUse(f))
	return cmd
}

// ThreadNewOptions are the inputs of `relay thread new`.
type ThreadNewOptions struct {
	F     *Factory
	Name  string
	Reuse bool
	JSON  bool
}

func newCmdThreadNew(f *Factory) *cobra.Command {
	opts := &ThreadNewOptions{F: f}
	cmd := &cobra.Command{
		Use:   "new",
		Short: "Create a thread and print its thread_id",
		Long: `Create a thread and print its id. On a terminal the line is "thread_id  <id>";
otherwise only the id, so TID=$(relay thread new) works.

Names are unique in a store, so a name always finds one thread: when another thread
already has --name, thread new fails and names it; --reuse prints that thread's id instead.`,
		Example: `  relay thread new --name auth-refactor
  TID=$(relay thread new --name auth-refactor --reuse)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Reuse && opts.Name == "" {
				return WithHint(Usagef("--reuse needs --name"), "relay thread new --name NAME --reuse")
			}
			return threadNewRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Name, "name", "", "a name to recognise the thread by (unique in the store)")
	cmd.Flags().BoolVar(&opts.Reuse, "reuse", false, "when a thread already has --name, use it instead of failing")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the thread as JSON")
	return cmd
}

func threadNewRun(ctx context.Context, opts *ThreadNewOptions) error {
	c, err := memoryClient(opts.F)
	if err != nil {
		return err
	}
	ifTaken := memory.NameTakenFail
	if opts.Reuse {
		ifTaken = memory.NameTakenReuse
	}
	t, err := c.CreateThreadIf(ctx, opts.Name, ifTaken)
	if client.IsCode(err, "name_taken") {
		return WithHint(err, fmt.Sprintf("relay thread new --name %s --reuse   (to use that thread), or choose another --name", workspace.ShellQuote(opts.Name)))
	}
	if err != nil {
		return apiErr(err, "")
	}
	if t.Reused {
		fmt.Fprintf(opts.F.IO.ErrOut, "Using the existing thread %s named %s.\n", t.ID, field(t.Name))
	}
	if opts.JSON {
		return writeJSON(opts.F.IO.Out, t)
	}
	return printKV(opts.F, "thread_id", t.ID)
}

// printKV prints "key  value" on a terminal and the bare value otherwise.
func printKV(f *Factory, key, value string) error {
	if f.IO.IsStdoutTTY() {
		_, err := fmt.Fprintf(f.IO.Out, "%s  %s\n", key, value)
		return err
	}
	_, err := fmt.Fprintln(f.IO.Out, value)
	return err
}

// RunsOptions are the inputs of `relay runs`.
type RunsOptions struct {
	F     *Factory
	Limit int
	JSON  bool
}

func newCmdRuns(f *Factory) *cobra.Command {
	opts := &RunsOptions{F: f}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List recent threads, most recently changed first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runsRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.Limit, "limit", 20, "how many threads (1-1000)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON")
	return cmd
}

func runsRun(ctx context.Context, opts *RunsOptions) error {
	if opts.Limit < 1 || opts.Limit > 1000 {
		return Usagef("--limit %d must be between 1 and 1000", opts.Limit)
	}
	c, err := memoryClient(opts.F)
	if err != nil {
		return err
	}
	ts, err := c.ListThreads(ctx, opts.Limit)
	if err != nil {
		return apiErr(err, "")
	}
	if opts.JSON {
		return writeJSON(opts.F.IO.Out, map[string]any{"threads": ts})
	}
	if len(ts) == 0 {
		fmt.Fprintln(opts.F.IO.ErrOut, "no threads yet; create one with: relay thread new --name NAME")
		return nil
	}
	tw := tabwriter.NewWriter(opts.F.IO.Out, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "THREAD_ID\tNAME\tSTATE\tARTIFACTS\tEVENTS\tUPDATED")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", field(t.ID), field(orDash(t.Name)), t.StateRef, t.ArtifactCount, t.EventCount, t.UpdatedAt)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ShowOptions are the inputs of `relay show`.
type ShowOptions struct {
	F        *Factory
	ThreadID string
	JSON     bool
}

func newCmdShow(f *Factory) *cobra.Command {
	opts := &ShowOptions{F: f}
	cmd := &cobra.Command{
		Use:   "show [<thread_id>]",
		Short: "Show a thread's summary and state header",
		Long:  "Show a thread's summary and state header. The thread is the argument, else --thread,\n$RELAY_THREAD, then the project's thread.",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := threadOrArg(f, args, opts.ThreadID)
			if err != nil {
				return err
			}
			opts.ThreadID = id
			return showRun(cmd.Context(), opts)
		},
	}
	threadFlag(cmd, f, &opts.ThreadID)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON")
	return cmd
}

func showRun(ctx context.Context, opts *ShowOptions) error {
	c, id, err := threadClient(ctx, opts.F, opts.ThreadID)
	if err != nil {
		return err
	}
	opts.ThreadID = id
	t, err := c.GetThread(ctx, opts.ThreadID)
	if err != nil {
		return apiErr(err, opts.ThreadID)
	}
	if opts.JSON {
		return writeJSON(opts.F.IO.Out, t)
	}
	w := opts.F.IO.Out
	fmt.Fprintf(w, "thread_id:  %s\n", field(t.ID))
	fmt.Fprintf(w, "name:       %s\n", field(orDash(t.Name)))
	fmt.Fprintf(w, "state_ref:  %s\n", t.StateRef)
	fmt.Fprintf(w, "created:    %s\n", t.CreatedAt)
	fmt.Fprintf(w, "updated:    %s\n", t.UpdatedAt)
	fmt.Fprintf(w, "artifacts:  %d\n", t.ArtifactCount)
	fmt.Fprintf(w, "events:     %d (last id %d)\n", t.EventCount, t.LastEventID)
	fmt.Fprintf(w, "metrics:    cache_hits %d, tokens_avoided %d\n", t.Metrics.CacheHits, t.Metrics.TokensAvoided)
	fmt.Fprintln(w, "header:")
	return writeIndented(w, t.Header, "  ")
}

func writeIndented(w interface{ Write([]byte) (int, error) }, raw json.RawMessage, prefix string) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		_, err = w.Write(append(raw, '\n'))
		return err
	}
	b, _ := json.MarshalIndent(v, prefix, "  ")
	_, err := fmt.Fprintf(w, "%s%s\n", prefix, b)
	return err
}

// TailOptions are the inputs of `relay tail`.
type TailOptions struct {
	F        *Factory
	ThreadID string
	After    int64
	NoFollow bool
	JSON     bool
}

func newCmdTail(f *Factory) *cobra.Command {
	opts := &TailOptions{F: f}
	cmd := &cobra.Command{
		Use:   "tail [<thread_id>]",
		Short: "Print a thread's events and follow new ones live (like tail -f)",
		Long: `Print a thread's events, then follow new ones over Server-Sent Events until Ctrl-C.
The connection resumes after the last event seen if it drops. The thread is the argument,
else --thread, $RELAY_THREAD, then the project's thread.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := threadOrArg(f, args, opts.ThreadID)
			if err != nil {
				return err
			}
			opts.ThreadID = id
			return tailRun(cmd.Context(), opts)
		},
	}
	threadFlag(cmd, f, &opts.ThreadID)
	cmd.Flags().Int64Var(&opts.After, "after", 0, "start after this event id")
	cmd.Flags().BoolVar(&opts.NoFollow, "no-follow", false, "print the stored events and exit")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "one JSON object per line")
	return cmd
}

func tailRun(ctx context.Context, opts *TailOptions) error {
	if opts.After < 0 {
		return Usagef("--after must be a non-negative event id")
	}
	c, id, err := threadClient(ctx, opts.F, opts.ThreadID)
	if err != nil {
		return err
	}
	opts.ThreadID = id
	print := func(e memory.Event) error {
		if opts.JSON {
			b, _ := json.Marshal(e)
			_, err := fmt.Fprintf(iostreams.Raw(opts.F.IO.Out), "%s\n", b)
			return err
		}
		_, err := fmt.Fprintf(opts.F.IO.Out, "%d  %s  %-16s %s\n", e.ID, e.At, field(e.Type), field(strings.TrimSpace(string(e.Data))))
		return err
	}
	if opts.NoFollow {
		after := opts.After
		for {
			evs, err := c.Events(ctx, opts.ThreadID, after, 1000)
			if err != nil {
				return apiErr(err, opts.ThreadID)
			}
			for _, e := range evs {
				if err := print(e); err != nil {
					return err
				}
				after = e.ID
			}
			if len(evs) < 1000 {
				return nil
			}
		}
	}
	err = c.Stream(ctx, opts.ThreadID, opts.After, print)
	if ctx.Err() != nil {
		return nil // Ctrl-C is how tail ends
	}
	return apiErr(err, opts.ThreadID)
}
