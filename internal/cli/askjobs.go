package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/workspace"
)

// askBackground starts the ask as a background job (workspace.StartAsk) and prints its id.
func askBackground(ctx context.Context, opts *AskOptions) error {
	ws, req, err := askRequest(opts)
	if err != nil {
		return err
	}
	job, err := ws.StartAsk(ctx, req)
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.Out, job.ID)
	fmt.Fprintf(opts.IO.ErrOut, "Started job %s; see it with: relay ask result %s (or relay ask jobs)\n", job.ID, job.ID)
	return nil
}

// newCmdAskRunJob is the process a background job runs as (workspace.RunJob).
func newCmdAskRunJob(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:    "run-job ID",
		Short:  "Run a background job (relay starts it)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws := &workspace.Workspace{Home: f.Home, Getenv: f.Getenv, Notes: f.IO.ErrOut, Memory: f.memory()}
			return ws.RunJob(cmd.Context(), args[0])
		},
	}
}

func newCmdAskJobs(f *Factory) *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List relay ask --background jobs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			jobs, err := (&workspace.Workspace{Home: f.Home}).Jobs()
			if err != nil {
				return err
			}
			if jsonOut {
				return writeJSON(f.IO.Out, jobs)
			}
			if len(jobs) == 0 {
				fmt.Fprintln(f.IO.ErrOut, "No jobs yet; start one with: relay ask --background --to codex --prompt …")
				return nil
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tSTARTED\tTO\tPROMPT")
			for _, j := range jobs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", j.ID, j.Status, j.Started.Local().Format("2006-01-02 15:04:05"),
					field(strings.Join(j.To, ",")), field(workspace.ClipRunes(j.Prompt, 60)))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print as JSON")
	return cmd
}

// askResultWait is how long relay ask result --wait waits: as long as the longest ask.
const askResultWait = 24 * time.Hour

func newCmdAskResult(f *Factory) *cobra.Command {
	var jsonOut, wait bool
	cmd := &cobra.Command{
		Use:   "result ID",
		Short: "Print a background job's answers (--wait until it ends)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var d time.Duration
			if wait {
				d = askResultWait
			}
			out, err := (&workspace.Workspace{Home: f.Home}).Job(cmd.Context(), args[0], d)
			if err != nil {
				return err
			}
			return printJobResult(f, out, jsonOut)
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the job's answers as relay ask --json does")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the job ends")
	return cmd
}

func printJobResult(f *Factory, out *workspace.JobOutcome, jsonOut bool) error {
	j := out.Job
	if j.Status == "running" {
		return WithHint(fmt.Errorf("job %s is still running (started %s ago)", j.ID, time.Since(j.Started).Round(time.Second)),
			"relay ask result "+j.ID+" --wait")
	}
	if out.Err != nil {
		return WithHint(fmt.Errorf("job %s failed: %s", j.ID, out.Err.Message), out.Err.Hint)
	}
	failed := 0
	for _, d := range out.Answers {
		if d.Error != nil {
			failed++
		}
	}
	if jsonOut {
		var v any = out.Answers
		if len(out.Answers) == 1 {
			v = out.Answers[0]
		}
		if err := writeJSON(f.IO.Out, v); err != nil {
			return err
		}
		if failed > 0 {
			return ExitCode(exitError, ErrSilent)
		}
		return nil
	}
	for i, d := range out.Answers {
		if d.Error != nil {
			fmt.Fprintf(f.IO.ErrOut, "Error (%s): %s\n", d.Backend, d.Error.Message)
			if d.Error.Hint != "" {
				fmt.Fprintf(f.IO.ErrOut, "Try: %s\n", d.Error.Hint)
			}
			continue
		}
		if len(out.Answers) > 1 {
			if i > 0 {
				fmt.Fprintln(f.IO.Out)
			}
			fmt.Fprintf(f.IO.Out, "=== %s ===\n", d.Backend)
		}
		if d.Verdict != nil {
			printVerdict(f.IO.Out, d.Verdict)
		} else {
			fmt.Fprintln(f.IO.Out, d.Answer)
		}
		if d.Ref != "" {
			fmt.Fprintf(f.IO.Out, "[stored as artifact %s]\n", d.Ref)
		}
	}
	if failed > 0 {
		return ExitCode(exitError, ErrSilent)
	}
	return nil
}
