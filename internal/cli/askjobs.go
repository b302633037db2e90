package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/relayhome"
	"github.com/relaydev/relay/internal/workspace"
)

// askJobEnv names the job a background `relay ask` runs as.
const askJobEnv = "RELAY_ASK_JOB"

func jobStore(home func() (string, error)) (*ask.JobStore, error) {
	h, err := home()
	if err != nil {
		return nil, WithHint(err, "set RELAY_HOME to a writable directory")
	}
	return &ask.JobStore{Dir: filepath.Join(h, relayhome.AskDir, "jobs")}, nil
}

// askBackground starts the same ask as a detached relay process and returns
// at once with the job's id. The prompt reaches the job on its stdin (a 0600
// file in the job's directory), never in its argv.
func askBackground(cmd *cobra.Command, opts *AskOptions) error {
	store, err := jobStore(opts.Home)
	if err != nil {
		return err
	}
	prompt := opts.Prompt
	if prompt == "-" {
		b, err := io.ReadAll(io.LimitReader(opts.IO.In, ask.MaxPromptBytes+1))
		if err != nil {
			return WithHint(fmt.Errorf("cannot read the prompt from stdin: %w", err), "pass it with --prompt TEXT instead")
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" && !opts.Review && !opts.Verdict && opts.Base == "" {
		return WithHint(Usagef("Prompt is required"), "pass the question with --prompt TEXT")
	}
	thread := opts.Thread
	if thread == "" {
		thread = opts.Getenv("RELAY_THREAD")
	}
	// the friends the job asks, with phone-a-friend's defaults for what the flags left out
	req := workspace.AskRequest{TimeoutGiven: true}
	if opts.To != "" {
		req.To = strings.Split(opts.To, ",")
	}
	if err := (&workspace.Workspace{Getenv: opts.Getenv, Environ: opts.Environ}).AskDefaults(&req); err != nil {
		return err
	}
	job, err := store.NewJob(dedupeNames(req.To), prompt, thread, time.Now())
	if err != nil {
		return WithHint(fmt.Errorf("cannot create the job: %w", err), "check that "+store.Dir+" is writable")
	}
	promptFile := filepath.Join(filepath.Dir(store.ResultPath(job.ID)), "prompt.txt")
	if err := os.WriteFile(promptFile, []byte(prompt), 0o600); err != nil {
		return err
	}
	args := []string{"ask", "--prompt", "-", "--json"}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "background", "prompt", "json", "stream":
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(promptFile)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(store.ResultPath(job.ID), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	errf, err := os.OpenFile(store.StderrPath(job.ID), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer errf.Close()
	c := exec.Command(self, args...)
	c.Env = append(opts.Environ(), askJobEnv+"="+job.ID)
	if wd, err := opts.WorkDir(); err == nil {
		c.Dir = wd
	}
	c.Stdin, c.Stdout, c.Stderr = in, out, errf
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // it outlives this command and the terminal
	if err := c.Start(); err != nil {
		return WithHint(fmt.Errorf("cannot start the background job: %w", err), "run the ask without --background")
	}
	_ = store.SetPID(job, c.Process.Pid)
	_ = c.Process.Release()
	fmt.Fprintln(opts.IO.Out, job.ID)
	fmt.Fprintf(opts.IO.ErrOut, "Started job %s; see it with: relay ask result %s (or relay ask jobs)\n", job.ID, job.ID)
	return nil
}

// finishJob records a background job's exit code (run by the job itself).
func finishJob(home func() (string, error), id string, err error) {
	store, serr := jobStore(home)
	if serr != nil {
		return
	}
	code := 0
	if err != nil {
		code = 1
	}
	_ = store.Finish(id, code)
}

func newCmdAskJobs(f *Factory) *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List relay ask --background jobs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := jobStore(f.Home)
			if err != nil {
				return err
			}
			jobs, err := store.List()
			if err != nil {
				return WithHint(fmt.Errorf("cannot read jobs: %w", err), "check the permissions of "+store.Dir)
			}
			if jsonOut {
				if jobs == nil {
					jobs = []*ask.Job{}
				}
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

func newCmdAskResult(f *Factory) *cobra.Command {
	var jsonOut, wait bool
	cmd := &cobra.Command{
		Use:   "result ID",
		Short: "Print a background job's answers (--wait until it ends)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := jobStore(f.Home)
			if err != nil {
				return err
			}
			j, err := store.Get(args[0])
			if err != nil {
				return WithHint(err, "relay ask jobs")
			}
			for wait && j.Status == "running" {
				select {
				case <-cmd.Context().Done():
					return cmd.Context().Err()
				case <-time.After(200 * time.Millisecond):
				}
				if j, err = store.Get(args[0]); err != nil {
					return err
				}
			}
			return askResultRun(cmd.Context(), f, store, j, jsonOut)
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the job's --json answers as they are")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the job ends")
	return cmd
}

func askResultRun(_ context.Context, f *Factory, store *ask.JobStore, j *ask.Job, jsonOut bool) error {
	switch j.Status {
	case "running":
		return WithHint(fmt.Errorf("job %s is still running (started %s ago)", j.ID, time.Since(j.Started).Round(time.Second)),
			"relay ask result "+j.ID+" --wait")
	case "lost":
		tail, _ := os.ReadFile(store.StderrPath(j.ID))
		return WithHint(fmt.Errorf("job %s ended without a result: %s", j.ID, strings.TrimSpace(lastLinesOf(string(tail), 5))),
			"ask again; its log is "+store.StderrPath(j.ID))
	}
	raw, err := os.ReadFile(store.ResultPath(j.ID))
	if err != nil {
		return WithHint(fmt.Errorf("cannot read job %s's result: %w", j.ID, err), "relay ask jobs")
	}
	if jsonOut {
		_, err := f.IO.Out.Write(raw)
		if j.Status == "failed" {
			return ExitCode(exitError, ErrSilent)
		}
		return err
	}
	var docs []askJSON
	if err := json.Unmarshal(raw, &docs); err != nil {
		var one askJSON
		if err := json.Unmarshal(raw, &one); err != nil {
			tail, _ := os.ReadFile(store.StderrPath(j.ID))
			return WithHint(fmt.Errorf("job %s failed: %s", j.ID, strings.TrimSpace(lastLinesOf(string(tail), 5))), "relay ask result "+j.ID+" --json")
		}
		docs = []askJSON{one}
	}
	failed := 0
	for i, d := range docs {
		if d.Error != nil {
			failed++
			fmt.Fprintf(f.IO.ErrOut, "Error (%s): %s\n", d.Backend, d.Error.Message)
			if d.Error.Hint != "" {
				fmt.Fprintf(f.IO.ErrOut, "Try: %s\n", d.Error.Hint)
			}
			continue
		}
		if len(docs) > 1 {
			if i > 0 {
				fmt.Fprintln(f.IO.Out)
			}
			fmt.Fprintf(f.IO.Out, "=== %s ===\n", d.Backend)
		}
		fmt.Fprintln(f.IO.Out, d.Answer)
		if d.Ref != "" {
			fmt.Fprintf(f.IO.Out, "[stored as artifact %s]\n", d.Ref)
		}
	}
	if failed > 0 {
		return ExitCode(exitError, ErrSilent)
	}
	return nil
}

func lastLinesOf(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
