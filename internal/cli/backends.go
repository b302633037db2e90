package cli

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/ask/backend"
	"github.com/relaydev/relay/internal/iostreams"
)

// BackendsOptions are the inputs of `relay backends`.
type BackendsOptions struct {
	IO      *iostreams.IOStreams
	Environ func() []string
	// Check is injected by tests; nil means probing the real machine.
	Check func(ctx context.Context, env []string) []ask.BackendStatus
	JSON  bool
}

func newCmdBackends(f *Factory) *cobra.Command {
	opts := &BackendsOptions{IO: f.IO, Environ: os.Environ}
	cmd := &cobra.Command{
		Use:   "backends",
		Short: "Show which friend CLIs relay ask can use, their paths, versions and install hints",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return backendsRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON")
	return cmd
}

func backendsRun(ctx context.Context, opts *BackendsOptions) error {
	check := opts.Check
	if check == nil {
		check = ask.CheckBackends
	}
	statuses := check(ctx, opts.Environ())
	if opts.JSON {
		return writeJSON(opts.IO.Out, statuses)
	}
	io := opts.IO
	fmt.Fprintln(io.Out, "Backend availability:")
	for _, s := range statuses {
		if s.Found {
			where := s.Path
			if s.Kind == "http" {
				where = s.URL
			}
			detail := where
			if s.Version != "" {
				detail += ", " + s.Version
			} else if s.Error != "" {
				detail += "; version unknown: " + s.Error
			}
			fmt.Fprintf(io.Out, "  %s %s: available (%s)\n", io.Green("✓"), s.Name, field(detail))
			if l := s.Login; l != nil {
				fmt.Fprintf(io.Out, "    Login: %s: %s\n", loginWord(l.State), field(l.Detail))
				if l.Hint != "" && l.State != backend.LoginOK {
					fmt.Fprintf(io.Out, "    Try: %s\n", field(l.Hint))
				}
			}
			continue
		}
		what := "not found"
		if s.Kind == "http" {
			what = "not reachable at " + s.URL
		}
		fmt.Fprintf(io.Out, "  %s %s: %s\n", io.Red("✗"), s.Name, what)
		fmt.Fprintf(io.Out, "    Install: %s\n", s.InstallHint)
	}
	return nil
}

// loginWord names a login state for people.
func loginWord(state string) string {
	switch state {
	case backend.LoginOK:
		return "logged in"
	case backend.LoginMissing:
		return "not logged in"
	case backend.LoginWarn:
		return "will be refused"
	}
	return "unknown"
}

// backendStatuses probes once per process, so doctor's per-backend lines
// share one parallel probe.
var backendStatuses = sync.OnceValue(func() []ask.BackendStatus {
	return ask.CheckBackends(context.Background(), os.Environ())
})

// askDoctorChecks adds one doctor line per friend backend; a missing friend
// is a warning, because each one is optional.
func askDoctorChecks() []doctorCheck {
	var checks []doctorCheck
	for _, name := range backend.Names() {
		checks = append(checks, doctorCheck{Name: "backend " + name, Run: func(ctx context.Context, f *Factory) checkResult {
			for _, s := range backendStatuses() {
				if s.Name != name {
					continue
				}
				switch {
				case s.Found && s.Error != "":
					return checkResult{Status: statusWarn, Detail: fmt.Sprintf("%s found but %s", s.Path, s.Error), Hint: "reinstall: " + s.InstallHint}
				case s.Found && s.Login != nil && (s.Login.State == backend.LoginMissing || s.Login.State == backend.LoginWarn):
					return checkResult{Status: statusWarn, Detail: fmt.Sprintf("%s (%s) %s: %s", s.Path, s.Version, loginWord(s.Login.State), s.Login.Detail), Hint: s.Login.Hint}
				case s.Found && s.Kind == "http":
					return checkResult{Status: statusOK, Detail: fmt.Sprintf("reachable at %s (%s)", s.URL, s.Version)}
				case s.Found && s.Login != nil:
					return checkResult{Status: statusOK, Detail: fmt.Sprintf("%s (%s), login %s: %s", s.Path, s.Version, loginWord(s.Login.State), s.Login.Detail)}
				case s.Found:
					return checkResult{Status: statusOK, Detail: fmt.Sprintf("%s (%s)", s.Path, s.Version)}
				case s.Kind == "http":
					return checkResult{Status: statusWarn, Detail: "not reachable at " + s.URL + " (optional friend for relay ask)", Hint: "install and start it: " + s.InstallHint + ", or set OLLAMA_HOST"}
				default:
					return checkResult{Status: statusWarn, Detail: "not installed (optional friend for relay ask)", Hint: s.InstallHint}
				}
			}
			return checkResult{Status: statusWarn, Detail: "unknown backend"}
		}})
	}
	return checks
}
