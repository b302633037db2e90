// Package iostreams owns the standard streams of a relay process: stdout for
// data, stderr for progress and hints, and whether colour may be used.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams is passed to every command instead of touching os.Std* directly,
// so commands can be tested with buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY  bool
	stdoutTTY bool
	stderrTTY bool
	noColor   bool

	// rawOut and rawErr are the streams before terminal escaping.
	rawOut, rawErr io.Writer
}

// System returns streams bound to the process's standard streams.
func System() *IOStreams {
	_, noColor := os.LookupEnv("NO_COLOR")
	s := &IOStreams{
		In:        os.Stdin,
		rawOut:    os.Stdout,
		rawErr:    os.Stderr,
		stdinTTY:  isTerminal(os.Stdin),
		stdoutTTY: isTerminal(os.Stdout),
		stderrTTY: isTerminal(os.Stderr),
		noColor:   noColor || os.Getenv("TERM") == "dumb",
	}
	s.wrap()
	return s
}

// wrap escapes control characters on the streams that are terminals.
func (s *IOStreams) wrap() {
	s.Out, s.ErrOut = s.rawOut, s.rawErr
	if s.stdoutTTY {
		s.Out = NewTerminalWriter(s.rawOut)
	}
	if s.stderrTTY {
		s.ErrOut = NewTerminalWriter(s.rawErr)
	}
}

// Flush writes what the terminal escaper holds back (an incomplete
// character at the very end); call once before exit.
func (s *IOStreams) Flush() {
	for _, w := range []io.Writer{s.Out, s.ErrOut} {
		if sw, ok := w.(*safeWriter); ok {
			_ = sw.Flush()
		}
	}
}

// Test returns streams backed by buffers; nothing is a terminal.
func Test() (ios *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut, rawOut: out, rawErr: errOut, noColor: true}, in, out, errOut
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// IsStdinTTY reports whether input comes from a terminal (a person can answer a prompt).
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// IsStdoutTTY reports whether stdout is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether stderr is a terminal.
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// SetTTY overrides terminal detection (tests); a stream marked as a terminal
// gets the terminal escaping a real one gets.
func (s *IOStreams) SetTTY(stdin, stdout, stderr bool) {
	s.stdinTTY, s.stdoutTTY, s.stderrTTY = stdin, stdout, stderr
	// Out and ErrOut may have been reassigned (a copy pointing stdout at stderr):
	// escape what they are now, not the streams the value started with.
	s.rawOut, s.rawErr = unwrap(s.Out), unwrap(s.ErrOut)
	s.wrap()
}

func unwrap(w io.Writer) io.Writer {
	if sw, ok := w.(*safeWriter); ok {
		return sw.w
	}
	return w
}

// ColorEnabled reports whether stderr output may use ANSI colour: only on a
// terminal, never with NO_COLOR set.
func (s *IOStreams) ColorEnabled() bool { return s.stderrTTY && !s.noColor }

// Color styles text for stderr when colour is enabled; code is an SGR number
// such as "32" (green) or "31" (red).
func (s *IOStreams) Color(code, text string) string {
	if !s.ColorEnabled() {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// Green, Red and Yellow are the only styles relay uses.
func (s *IOStreams) Green(t string) string  { return s.Color("32", t) }
func (s *IOStreams) Red(t string) string    { return s.Color("31", t) }
func (s *IOStreams) Yellow(t string) string { return s.Color("33", t) }
