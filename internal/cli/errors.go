package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
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

type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

// WithHint attaches the next step the user should take: printed as
// "Try: <hint>" under the error.
func WithHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &hintError{err: err, hint: hint}
}

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

// printError writes "Error: …" and any "Try: …" hint, and returns the exit code.
func printError(w io.Writer, err error) int {
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(w, "Interrupted.")
		return exitInterrupt
	}
	code := exitError
	var ec *exitCodeError
	if errors.As(err, &ec) {
		code = ec.code
	}
	if errors.Is(err, ErrSilent) {
		return code
	}
	msg := err.Error()
	fmt.Fprintf(w, "Error: %s\n", strings.TrimRight(msg, "\n"))
	var he *hintError
	if errors.As(err, &he) && he.hint != "" {
		fmt.Fprintf(w, "Try: %s\n", he.hint)
	}
	return code
}
