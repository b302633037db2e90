// Package run is relay's one seam for subprocesses: stdin is never inherited,
// a cancelled or timed-out command is killed with its whole process group,
// and RELAY_DEBUG=1 echoes every command line.
package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// waitDelay bounds how long Wait waits for output pipes after the process is
// killed, so a grandchild holding stdout cannot hang relay.
const waitDelay = 2 * time.Second

var (
	traceMu sync.Mutex
	trace   io.Writer
)

// SetTrace makes every command line be written to w before it starts (nil
// turns tracing off). The CLI sets it when RELAY_DEBUG=1.
func SetTrace(w io.Writer) {
	traceMu.Lock()
	defer traceMu.Unlock()
	trace = w
}

// Cmd is a subprocess to run.
type Cmd struct {
	ctx  context.Context
	Name string
	Args []string
	// Dir is the working directory; empty means the current one.
	Dir string
	// Env is the full environment; nil means the current process's.
	Env []string
	// Stdin feeds the child; nil means the null device, never relay's stdin.
	Stdin io.Reader
	// Stdout and Stderr receive output as it comes; nil discards it (Output
	// and CombinedOutput capture it instead). An *os.File Stderr is not
	// captured for error messages.
	Stdout io.Writer
	Stderr io.Writer
	// Started, when set on a Shell command, receives the command's process
	// group before the script runs; the script starts only after Started
	// returns nil, so a group is never running unrecorded.
	Started func(Group) error
	// KillGroupOnExit kills whatever the command left running (its process
	// group and, on Linux, every process below it) the moment the command
	// itself exits, so nothing it started outlives it: a friend CLI's tool
	// that ignores SIGTERM, or a grandchild holding stdout open.
	KillGroupOnExit bool

	script string
	extra  []*os.File
}

// Command prepares name with args under ctx: cancelling ctx kills the
// process group.
func Command(ctx context.Context, name string, args ...string) *Cmd {
	return &Cmd{ctx: ctx, Name: name, Args: args}
}

// Shell prepares a user-supplied command line (preCommand, linter, …) for
// `sh -c` in dir.
func Shell(ctx context.Context, dir, script string) *Cmd {
	c := Command(ctx, "sh", "-c", script)
	c.Dir = dir
	c.script = script
	return c
}

// ExitError is a command that ran and exited non-zero (or was killed).
type ExitError struct {
	Command string
	Code    int // -1 when killed by a signal
	Stderr  string
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("%s exited with code %d", e.Command, e.Code)
	if e.Code < 0 {
		msg = e.Command + " was killed"
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + lastLines(s, 20)
	}
	return msg
}

// NotFoundError is a program that is not installed or not on PATH.
type NotFoundError struct{ Name string }

func (e *NotFoundError) Error() string { return e.Name + ": command not found on PATH" }

// TimeoutError is a command that outlived its context's deadline.
type TimeoutError struct {
	Command string
	After   time.Duration
}

func (e *TimeoutError) Error() string {
	if e.After > 0 {
		return fmt.Sprintf("%s timed out after %s and was killed", e.Command, e.After.Round(time.Millisecond))
	}
	return e.Command + " timed out and was killed"
}

// String is the command line as a shell would show it.
func (c *Cmd) String() string {
	parts := make([]string, 0, len(c.Args)+1)
	for _, a := range append([]string{c.Name}, c.Args...) {
		parts = append(parts, quote(a))
	}
	return strings.Join(parts, " ")
}

// Run starts the command and waits for it. Stderr is kept (its tail) for the
// error when the command fails.
func (c *Cmd) Run() error {
	var tail tailBuffer
	return c.run(&tail)
}

// Output runs the command and returns its stdout.
func (c *Cmd) Output() ([]byte, error) {
	var out bytes.Buffer
	c.Stdout = teeOrSet(c.Stdout, &out)
	err := c.Run()
	return out.Bytes(), err
}

// CombinedOutput runs the command and returns stdout and stderr interleaved.
func (c *Cmd) CombinedOutput() ([]byte, error) {
	var out syncBuffer
	c.Stdout = teeOrSet(c.Stdout, &out)
	c.Stderr = teeOrSet(c.Stderr, &out)
	err := c.Run()
	return out.Bytes(), err
}

func (c *Cmd) run(tail *tailBuffer) error {
	traceMu.Lock()
	if trace != nil {
		dir := ""
		if c.Dir != "" {
			dir = " (in " + c.Dir + ")"
		}
		fmt.Fprintf(trace, "+ %s%s\n", c, dir)
	}
	traceMu.Unlock()

	ctx := c.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	args := c.Args
	var gate *os.File
	if c.Started != nil {
		if c.script == "" {
			return errors.New("run: Started is only supported for Shell commands")
		}
		// The shell waits on fd 3 until relay has recorded its group; if relay
		// dies first it reads EOF and runs nothing.
		args = []string{"-c", `read -r relay_gate <&3 || exit 125; exec 3<&-; exec sh -c "$1"`, "relay-hook", c.script}
		r, w, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("run %s: %w", c.Name, err)
		}
		defer r.Close()
		defer w.Close()
		gate = w
		defer func() { gate = nil }()
		c.extra = []*os.File{r}
	}
	cmd := exec.CommandContext(ctx, c.Name, args...)
	cmd.ExtraFiles = c.extra
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	cmd.Stdin = c.Stdin // nil: os/exec opens the null device
	cmd.Stdout = c.Stdout
	cmd.Stderr = teeOrSet(c.Stderr, tail)
	if f, ok := c.Stderr.(*os.File); ok {
		cmd.Stderr = f // a file (e.g. the null device) is passed as is: no pipe a daemonizing child could hold open
	}
	cmd.WaitDelay = waitDelay
	setProcessGroup(cmd)
	defer leaveGroup(cmd)

	start := time.Now()
	err := cmd.Start()
	if err == nil {
		if gerr := enterGroup(cmd); gerr != nil {
			_ = cmd.Wait()
			return fmt.Errorf("run %s: %w", c.Name, gerr)
		}
	}
	if err == nil && gate != nil {
		c.extra[0].Close()
		g, ierr := identify(cmd.Process.Pid)
		if ierr == nil {
			ierr = c.Started(g)
		}
		if ierr != nil {
			gate.Close()
			killGroup(cmd)
			_ = cmd.Wait()
			return fmt.Errorf("run %s: record its process group: %w", c.Name, ierr)
		}
		_, werr := gate.Write([]byte("go\n"))
		gate.Close()
		if werr != nil {
			killGroup(cmd)
		}
	}
	if err == nil {
		if c.KillGroupOnExit {
			reapTreeOnExit(cmd) // output keeps flowing: exec copies the pipes in its own goroutines
		}
		err = cmd.Wait()
	}
	if ctx.Err() != nil || c.KillGroupOnExit && !reapsBeforeWait {
		killGroup(cmd) // a cancelled command leaves nothing behind in its group
	}
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() && ctx.Err() == nil {
		err = nil // it finished; only something it left behind held the pipes open
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) && cmd.Process == nil {
		return &NotFoundError{Name: c.Name}
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return &TimeoutError{Command: c.Name, After: time.Since(start)}
		}
		return fmt.Errorf("%s: %w", c.Name, ctxErr)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return &ExitError{Command: c.Name, Code: exitErr.ExitCode(), Stderr: tail.String()}
	}
	return fmt.Errorf("run %s: %w", c.Name, err)
}

func teeOrSet(w, extra io.Writer) io.Writer {
	if w == nil {
		return extra
	}
	return io.MultiWriter(w, extra)
}

func quote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// tailBuffer keeps the last 64 KiB written to it: enough stderr for an error
// message without holding a chatty command's whole output.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 64 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailMax {
		t.buf = append(t.buf[:0:0], t.buf[len(t.buf)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}
