package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/workspace"
)

// ExitCodesDoc is the one sentence that documents relay's exit codes: `relay --help` ends with
// it and the README quotes it (a test keeps them equal).
const ExitCodesDoc = "Exit codes: 0 success, 1 failure, 2 bad usage, 3 the daemon is not running (relay status), 130 interrupted."

// Exit codes relay documents (ExitCodesDoc); exitNotRunning is in daemon.go.
const (
	exitOK        = 0
	exitError     = 1
	exitUsage     = 2
	exitInterrupt = 130
)

// ErrSilent fails a command whose message has already been printed.
var ErrSilent = errors.New("silent error")

// jsonShownError is a failure a --json command has already written to stdout as JSON (ask
// puts each friend's error in its answer object): the generic JSON error is not added.
type jsonShownError struct{ err error }

func (e *jsonShownError) Error() string { return e.err.Error() }
func (e *jsonShownError) Unwrap() error { return e.err }

// JSONShown marks err as already written to stdout in the command's --json output.
func JSONShown(err error) error {
	if err == nil {
		return nil
	}
	return &jsonShownError{err}
}

// JSONError is what every --json command prints on stdout when it fails (stderr still gets
// the Error:/Try: lines): one shape for all of them, the one relay ask --json uses for a
// friend's failure, with the daemon's error code when the daemon refused.
type JSONError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Hint    string `json:"hint,omitempty"`
	} `json:"error"`
	ExitCode int `json:"exit_code"`
}

// jsonError builds the JSON error of err, which ended relay with code.
func jsonError(err error, code int) JSONError {
	var j JSONError
	j.ExitCode = code
	j.Error.Message = strings.TrimRight(err.Error(), "\n")
	j.Error.Message, j.Error.Hint = workspace.Explain(err, workspace.Person)
	j.Error.Message = strings.TrimRight(j.Error.Message, "\n")
	var ae *client.APIError
	var ue *client.UnreachableError
	switch {
	case errors.As(err, &ae):
		j.Error.Code = ae.Code
	case errors.As(err, &ue):
		j.Error.Code = "unreachable"
	case code == exitUsage:
		j.Error.Code = "usage"
	case code == exitInterrupt:
		j.Error.Code = "interrupted"
		j.Error.Message = "interrupted"
	case code == exitNotRunning:
		j.Error.Code = "not_running"
	default:
		j.Error.Code = "failed"
	}
	return j
}

// wantsJSON reports whether the command that ran was asked for JSON output.
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd != nil {
		if f := cmd.Flags().Lookup("json"); f != nil && f.Changed {
			return f.Value.String() == "true"
		}
	}
	// A flag error stops parsing before --json is read: look at the words themselves.
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// WithHint attaches the next step the user should take: printed as
// "Try: <hint>" under the error.
func WithHint(err error, hint string) error { return workspace.WithHint(err, hint) }

type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string { return e.err.Error() }
func (e *exitCodeError) Unwrap() error { return e.err }

// ExitCode makes err end relay with code.
func ExitCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitCodeError{code: code, err: err}
}

// UsageError marks err as bad usage (exit 2).
func UsageError(err error) error { return ExitCode(exitUsage, err) }

// Usagef is UsageError with a formatted message.
func Usagef(format string, args ...any) error { return UsageError(fmt.Errorf(format, args...)) }

// printError writes "Error: …" and the "Try: …" hint (workspace.Explain: the one mapping
// from an error to its next step), and returns the exit code.
func printError(w io.Writer, err error) int {
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(w, "Interrupted.")
		return exitInterrupt
	}
	code := exitCode(err)
	if errors.Is(err, ErrSilent) {
		return code
	}
	msg, hint := workspace.Explain(err, workspace.Person)
	fmt.Fprintf(w, "Error: %s\n", strings.TrimRight(msg, "\n"))
	if hint != "" {
		fmt.Fprintf(w, "Try: %s\n", hint)
	}
	return code
}

// exitCode is the documented exit code for err: as marked, 2 for a mistake in an ask's
// request, 130 for a transaction interrupted by Ctrl-C, else 1.
func exitCode(err error) int {
	var (
		ec   *exitCodeError
		ae   *ask.Error
		fail *txn.Failure
	)
	switch {
	case errors.As(err, &ec):
		return ec.code
	case errors.As(err, &ae) && ae.Usage:
		return exitUsage
	case errors.As(err, &fail) && fail.Step == txn.StepInterrupted:
		return exitInterrupt
	}
	return exitError
}
