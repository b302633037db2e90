package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/relaydev/relay/internal/relayhome"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/run"
	"github.com/relaydev/relay/internal/workspace"
)

// checkStatus is the outcome of one doctor check.
type checkStatus string

const (
	statusOK   checkStatus = "ok"
	statusWarn checkStatus = "warn" // something optional is missing
	statusFail checkStatus = "fail" // something the user needs is broken
)

// checkResult is one line of `relay doctor`.
type checkResult struct {
	Name   string      `json:"name"`
	Status checkStatus `json:"status"`
	Detail string      `json:"detail"`
	Hint   string      `json:"hint,omitempty"`
}

// doctorCheck is one diagnostic; capabilities add theirs to doctorChecks.
type doctorCheck struct {
	Name string
	Run  func(ctx context.Context, f *Factory) checkResult
}

// doctorChecks lists every check in the order doctor prints them. Each
// capability contributes its checks with one line here.
func doctorChecks() []doctorCheck {
	var checks []doctorCheck
	checks = append(checks, coreDoctorChecks()...)
	checks = append(checks, askDoctorChecks()...)
	checks = append(checks, memoryDoctorChecks()...)
	checks = append(checks, capDoctorChecks()...)
	checks = append(checks, uiDoctorChecks()...)
	checks = append(checks, clipboardDoctorChecks()...)
	checks = append(checks, mcpDoctorChecks()...)
	return checks
}

// DoctorOptions are the inputs of `relay doctor`.
type DoctorOptions struct {
	F    *Factory
	JSON bool
}

func newCmdDoctor(f *Factory) *cobra.Command {
	opts := &DoctorOptions{F: f}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check that relay has what it needs: config, git, clipboard, store, daemon, backends",
		Long: `Run every diagnostic and print one line per check with a fix hint.
Exits 1 when a check that relay needs fails; missing optional tools are
warnings.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return doctorRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the checks as JSON")
	return cmd
}

func doctorRun(ctx context.Context, opts *DoctorOptions) error {
	var results []checkResult
	failed := 0
	for _, c := range doctorChecks() {
		r := c.Run(ctx, opts.F)
		if r.Name == "" {
			r.Name = c.Name
		}
		if r.Status == statusFail {
			failed++
		}
		results = append(results, r)
	}
	io := opts.F.IO
	if opts.JSON {
		if err := writeJSON(io.Out, map[string]any{"ok": failed == 0, "checks": results}); err != nil {
			return err
		}
	} else {
		for _, r := range results {
			mark := io.Green("✓")
			switch r.Status {
			case statusWarn:
				mark = io.Yellow("!")
			case statusFail:
				mark = io.Red("✗")
			}
			fmt.Fprintf(io.Out, "%s %s: %s\n", mark, r.Name, r.Detail)
			if r.Hint != "" && r.Status != statusOK {
				fmt.Fprintf(io.Out, "    fix: %s\n", r.Hint)
			}
		}
	}
	if failed > 0 {
		if !opts.JSON {
			fmt.Fprintf(io.ErrOut, "%d check(s) failed.\n", failed)
		}
		return ExitCode(exitError, ErrSilent)
	}
	return nil
}

func coreDoctorChecks() []doctorCheck {
	return []doctorCheck{
		{Name: "config", Run: checkConfig},
		{Name: "mcp project", Run: func(ctx context.Context, f *Factory) checkResult {
			return checkResult{Status: statusOK, Detail: "relay mcp started here is " + mcpServes(f)}
		}},
		{Name: "state dir", Run: checkStateDir},
		{Name: "pending records", Run: checkPendingRecords},
		{Name: "git", Run: checkGit},
		{Name: "relay home", Run: checkHome},
	}
}

func checkConfig(ctx context.Context, f *Factory) checkResult {
	dir, err := f.WorkDir()
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error()}
	}
	cfg, warnings, err := config.Load(dir)
	switch {
	case config.IsNotFound(err):
		return checkResult{Status: statusWarn, Detail: "no relaycode.config.json here or above up to the git work tree's root (needed by apply and watch)", Hint: "relay init"}
	case config.IsNotOwned(err):
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "run relay in a project you own, or copy the config into a directory you own"}
	case err != nil:
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "fix the file; relay config schema lists every key"}
	case len(warnings) > 0:
		return checkResult{Status: statusWarn, Detail: fmt.Sprintf("%s is valid with warnings: %s", cfg.File, strings.Join(warnings, "; "))}
	}
	return checkResult{Status: statusOK, Detail: fmt.Sprintf("%s is valid (projectId %q)", cfg.File, cfg.ProjectID)}
}

func checkStateDir(ctx context.Context, f *Factory) checkResult {
	dir, err := f.WorkDir()
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error()}
	}
	cfg, _, err := config.Load(dir)
	if err != nil {
		return checkResult{Status: statusWarn, Detail: "skipped: no valid project config", Hint: "relay init"}
	}
	state := filepath.Join(cfg.Dir, config.StateDir)
	if err := writable(state); err != nil {
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "relay init (creates it), or fix its permissions"}
	}
	return checkResult{Status: statusOK, Detail: state + " is writable"}
}

// checkPendingRecords explains each pending transaction record without
// acting on it: doctor never runs recovery, so it works when a record is bad.
func checkPendingRecords(ctx context.Context, f *Factory) checkResult {
	dir, err := f.WorkDir()
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error()}
	}
	cfg, _, err := config.Load(dir)
	if err != nil {
		return checkResult{Status: statusWarn, Detail: "skipped: no valid project config", Hint: "relay init"}
	}
	var key []byte
	if home, err := f.Home(); err == nil {
		key, _ = txn.ReadRecordKey(home)
	}
	recs := txn.PendingRecords(cfg.Dir, key)
	if len(recs) == 0 {
		return checkResult{Status: statusOK, Detail: "none (no interrupted transaction)"}
	}
	var bad []string
	var hints []string
	for _, r := range recs {
		if r.Refused == "" {
			continue
		}
		bad = append(bad, fmt.Sprintf("%s: %s", r.Record, r.Refused))
		hints = append(hints, "mv "+workspace.ShellQuote(r.Record)+" "+workspace.ShellQuote(r.Record)+".bad")
	}
	if len(bad) == 0 {
		return checkResult{Status: statusOK, Detail: fmt.Sprintf("%d interrupted transaction(s); the next relay command in the project rolls them back", len(recs))}
	}
	return checkResult{Status: statusFail, Detail: strings.Join(bad, "; "),
		Hint: "relay will not act on these records; restore files from them by hand if they are yours, then move them aside: " + strings.Join(hints, "; ")}
}

func checkGit(ctx context.Context, f *Factory) checkResult {
	if _, err := exec.LookPath("git"); err != nil {
		return checkResult{Status: statusFail, Detail: "git not found on PATH (needed by --include-diff, relay git commit, autoGitBranch)", Hint: "install git, e.g. sudo apt-get install git"}
	}
	out, err := run.Command(ctx, "git", "--version").Output()
	if err != nil {
		return checkResult{Status: statusFail, Detail: "git --version failed: " + err.Error()}
	}
	return checkResult{Status: statusOK, Detail: strings.TrimSpace(string(out))}
}

func checkHome(ctx context.Context, f *Factory) checkResult {
	home, err := f.Home()
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "set RELAY_HOME to a writable directory"}
	}
	if _, err := os.Stat(home); err != nil {
		return checkResult{Status: statusWarn, Detail: home + " does not exist yet", Hint: "relay init"}
	}
	if err := writable(home); err != nil {
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "fix its permissions or set RELAY_HOME"}
	}
	if _, err := relayhome.LoadUser(home); err != nil {
		return checkResult{Status: statusFail, Detail: err.Error()}
	}
	return checkResult{Status: statusOK, Detail: home + " is writable"}
}

// writable proves dir accepts a new file by creating and removing one.
func writable(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	tmp, err := os.CreateTemp(dir, ".relay-doctor-*")
	if err != nil {
		return fmt.Errorf("%s is not writable: %w", dir, err)
	}
	tmp.Close()
	return os.Remove(tmp.Name())
}
