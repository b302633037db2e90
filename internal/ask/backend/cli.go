package backend

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/relaydev/relay/internal/run"
)

// Invocation is exactly how a friend CLI is started: tests assert on it.
type Invocation struct {
	Path  string   // resolved executable
	Args  []string // without argv[0]
	Dir   string
	Env   []string
	Stdin string // the prompt; empty means the null device
	// OutputFile is where codex writes its last message.
	OutputFile string
	// PromptFile holds Stdin (a memfd on Linux, else mode 0600 in relay's
	// private temp directory): the CLI reads it as its stdin, so the prompt is
	// never in argv, where any local user could read it in /proc/<pid>/cmdline,
	// and relay can see afterwards how much of it was read.
	PromptFile *os.File
	// CheckPromptRead: the CLI reads stdin through the file offset it shares
	// with relay (node does; claude's runtime reads at explicit positions),
	// and gives up on it after a timer, so relay checks it read everything.
	CheckPromptRead bool
	// OnLine, when set, receives each complete line of output as it arrives.
	OnLine func(stderr bool, line []byte)
}

// Output is what a finished (or killed) CLI left behind.
type Output struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
	TimedOut bool
	// PromptUnread is how many bytes of PromptFile the CLI never read (0
	// when it read everything, or when that cannot be known).
	PromptUnread int64
}

// Runner starts an invocation and waits for it; the error is only for a
// process that could not be started at all.
type Runner func(ctx context.Context, inv Invocation) (Output, error)

// Options are the seams a backend uses; zero values mean the real thing.
type Options struct {
	Runner     Runner
	LookPath   func(string) (string, error)
	HTTPClient *http.Client
}

func (o Options) withDefaults() Options {
	if o.Runner == nil {
		o.Runner = ProcessRunner
	}
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	return o
}

// ProcessRunner runs an invocation through internal/run: prompt on stdin from
// its file (or the null device), stdout and stderr captured apart and passed
// on line by line as they come, and the whole process group killed when ctx
// ends or the CLI exits, so nothing it started outlives it.
func ProcessRunner(ctx context.Context, inv Invocation) (Output, error) {
	stdout := &capBuffer{max: maxStdout}
	stderr := &capBuffer{max: maxStderr, keepTail: true}
	var outW, errW io.Writer = stdout, stderr
	var lines []*lineWriter
	if inv.OnLine != nil {
		lo := &lineWriter{max: maxStdout, fn: func(b []byte) { inv.OnLine(false, b) }}
		le := &lineWriter{max: maxStderrLine, fn: func(b []byte) { inv.OnLine(true, b) }}
		lines = []*lineWriter{lo, le}
		outW, errW = io.MultiWriter(stdout, lo), io.MultiWriter(stderr, le)
	}
	c := run.Command(ctx, inv.Path, inv.Args...)
	c.Dir, c.Env = inv.Dir, inv.Env
	c.KillGroupOnExit = true
	var promptFile *os.File
	var promptSize int64
	switch {
	case inv.PromptFile != nil:
		f := inv.PromptFile
		if fi, err := f.Stat(); err == nil {
			promptSize = fi.Size()
		}
		promptFile, c.Stdin = f, f // an *os.File is the child's stdin itself, sharing its offset
	case inv.Stdin != "":
		c.Stdin = strings.NewReader(inv.Stdin)
	}
	c.Stdout, c.Stderr = outW, errW
	err := c.Run()
	for _, l := range lines {
		l.flush()
	}
	out := Output{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if promptFile != nil && inv.CheckPromptRead {
		if off, serr := promptFile.Seek(0, io.SeekCurrent); serr == nil && off < promptSize {
			out.PromptUnread = promptSize - off
		}
	}
	if stdout.dropped > 0 && err == nil {
		return out, &tooMuchOutput{maxStdout}
	}
	if err == nil {
		return out, nil
	}
	var exitErr *run.ExitError
	var timeoutErr *run.TimeoutError
	switch {
	case errors.As(err, &timeoutErr):
		out.TimedOut, out.ExitCode = true, -1
		return out, nil
	case ctx.Err() != nil:
		return out, ctx.Err()
	case errors.As(err, &exitErr):
		out.ExitCode = exitErr.Code
		return out, nil
	}
	return out, err
}

// cliSpec is what differs between friend CLIs.
type cliSpec interface {
	name() string
	exe() string
	// label names the command in seed messages ("codex exec", "gemini").
	label() string
	installHint() string
	sandboxes() []string
	sessions() bool
	// plan builds the invocation; it is pure apart from reading req.
	plan(req Request, exe, tmpDir string) (Invocation, error)
	// parser returns a fresh reader for one run's output.
	parser() outputParser
	// emptyMessage is the backend's message for a run with no answer.
	emptyMessage() string
}

// outputParser reads one run of a friend CLI.
type outputParser interface {
	// line reads one line of output as it arrives (stderr says which stream);
	// it reports events and fatal failures through s.
	line(s *stream, stderr bool, line []byte)
	// result reads a zero-exit run once it has ended.
	result(s *stream, inv Invocation, out Output) (Result, error)
	// detail is the CLI's own error text for a failed run ("" if none).
	detail(s *stream, inv Invocation, out Output) string
}

type cliBackend struct {
	spec cliSpec
	opts Options
}

func (b *cliBackend) Name() string           { return b.spec.name() }
func (b *cliBackend) Executable() string     { return b.spec.exe() }
func (b *cliBackend) InstallHint() string    { return b.spec.installHint() }
func (b *cliBackend) Sandboxes() []string    { return b.spec.sandboxes() }
func (b *cliBackend) SupportsSessions() bool { return b.spec.sessions() }

// Plan resolves the executable and builds the invocation without running it.
func (b *cliBackend) Plan(req Request, tmpDir string) (Invocation, error) {
	exe, err := b.opts.LookPath(b.spec.exe())
	if err != nil {
		return Invocation{}, &Error{
			Backend: b.Name(), Kind: KindNotFound,
			Message: fmt.Sprintf("%s CLI not found in PATH. Install it: %s", b.spec.exe(), b.InstallHint()),
			Hint:    b.InstallHint() + " (or pick an installed friend: relay backends)",
		}
	}
	return b.spec.plan(req, exe, tmpDir)
}

// Run asks the friend once; a CLI that exits without reading its prompt
// (gemini and qwen give up on stdin after 500 ms on a busy machine) is asked
// once more within the same deadline.
func (b *cliBackend) Run(ctx context.Context, req Request) (Result, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	res, err := b.runOnce(ctx, req)
	var e *Error
	if errors.As(err, &e) && e.Kind == KindPromptNotRead && ctx.Err() == nil {
		if req.OnEvent != nil {
			req.OnEvent(Event{Backend: b.Name(), Kind: EventWarning, Text: "it did not read the prompt; asking again", Time: time.Now()})
		}
		res, err = b.runOnce(ctx, req)
	}
	return res, err
}

// errFatal cancels a run whose output showed a failure waiting cannot fix.
var errFatal = errors.New("the friend reported a fatal error")

func (b *cliBackend) runOnce(parent context.Context, req Request) (Result, error) {
	tmp, err := os.MkdirTemp("", "phone-a-friend-")
	if err != nil {
		return Result{}, &Error{Backend: b.Name(), Message: fmt.Sprintf("Failed creating a temporary directory: %v", err),
			Hint: "check that $TMPDIR exists and is writable"}
	}
	defer os.RemoveAll(tmp)

	inv, err := b.Plan(req, tmp)
	if err != nil {
		return Result{}, err
	}
	if inv.Stdin != "" {
		f, err := newPromptFile(tmp, inv.Stdin)
		if err != nil {
			return Result{}, &Error{Backend: b.Name(), Message: fmt.Sprintf("Failed writing the prompt for %s: %v", b.spec.exe(), err),
				Hint: "check that $TMPDIR is writable and has space"}
		}
		defer f.Close()
		inv.PromptFile = f
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	st := newStream(b.Name(), req.OnEvent)
	p := b.spec.parser()
	var mu sync.Mutex
	fed := false
	inv.OnLine = func(stderr bool, line []byte) {
		mu.Lock()
		defer mu.Unlock()
		fed = true
		p.line(st, stderr, line)
		if st.fatal != nil {
			cancel(errFatal)
		}
	}
	start := time.Now()
	st.status("starting " + b.spec.label())
	out, err := b.opts.Runner(ctx, inv)
	mu.Lock()
	defer mu.Unlock()
	if !fed { // a runner that does not stream (tests): read the output now
		replay(p, st, out)
	}
	if st.fatal != nil {
		return Result{}, st.fatal
	}
	if err != nil {
		var tm *tooMuchOutput
		switch {
		case errors.As(err, &tm):
			return Result{}, &Error{Backend: b.Name(), Kind: KindTooMuchOutput, Message: b.spec.label() + " " + err.Error(),
				Hint: "ask for a shorter answer; relay keeps only that much of a friend's output"}
		case parent.Err() != nil && !out.TimedOut:
			if errors.Is(parent.Err(), context.DeadlineExceeded) {
				return Result{}, b.timeout(req, st, start)
			}
			return Result{}, &Error{Backend: b.Name(), Kind: KindCancelled, Message: b.spec.label() + " was cancelled", Hint: "run the command again"}
		}
		return Result{}, &Error{Backend: b.Name(), Message: fmt.Sprintf("Failed starting %s: %v", b.spec.exe(), err),
			Hint: "check that " + inv.Path + " is executable: " + b.InstallHint()}
	}
	if out.TimedOut {
		return Result{}, b.timeout(req, st, start)
	}
	if out.ExitCode != 0 {
		return Result{}, b.failure(st, p, inv, out)
	}
	if out.PromptUnread > 0 {
		return Result{}, &Error{Backend: b.Name(), Kind: KindPromptNotRead,
			Message: fmt.Sprintf("%s finished without reading the prompt (%d bytes left unread on its stdin)", b.spec.label(), out.PromptUnread),
			Hint:    fmt.Sprintf("%s gives up on stdin when it is not read within 500 ms; ask again when the machine is less busy", b.spec.exe())}
	}
	res, err := p.result(st, inv, out)
	if err != nil {
		return Result{}, err
	}
	res.Answer = strings.TrimSpace(res.Answer)
	if res.Answer == "" {
		return Result{}, &Error{Backend: b.Name(), Kind: KindEmpty, Message: b.spec.emptyMessage(),
			Hint: "ask again, or try another friend (see relay backends)"}
	}
	return res, nil
}

// timeout says what the friend last did, so the next step is not a guess.
func (b *cliBackend) timeout(req Request, st *stream, start time.Time) *Error {
	msg := fmt.Sprintf("%s timed out after %s", b.spec.label(), secs(req.Timeout))
	hint := fmt.Sprintf("raise --timeout (it was %s), ask a narrower question, or check that `%s` works on its own", secs(req.Timeout), b.spec.exe())
	if st.last.Text != "" && !strings.HasPrefix(st.last.Text, "starting ") {
		ago := time.Since(st.last.Time).Round(time.Second)
		msg += fmt.Sprintf("\nIts last event (%s before it was stopped): %s", ago, st.last.Text)
		if st.last.Kind == EventWarning {
			if k := diagnose(strings.ToLower(st.last.Text)); k != KindFailed {
				hint = hintFor(b.Name(), k)
			}
		}
	} else {
		msg += fmt.Sprintf("\nIt reported nothing in %s.", time.Since(start).Round(time.Second))
	}
	return &Error{Backend: b.Name(), Kind: KindTimeout, Message: msg, Hint: hint}
}

// replay feeds a finished run's output to the parser line by line.
func replay(p outputParser, st *stream, out Output) {
	for _, s := range []struct {
		b      []byte
		stderr bool
	}{{out.Stdout, false}, {out.Stderr, true}} {
		sc := bufio.NewScanner(bytes.NewReader(s.b))
		sc.Buffer(nil, maxStdout+1)
		for sc.Scan() {
			p.line(st, s.stderr, sc.Bytes())
		}
	}
}

// maxDetail bounds the CLI text kept in an error: the end is where the cause is.
const maxDetail = 4000

func (b *cliBackend) failure(st *stream, p outputParser, inv Invocation, out Output) *Error {
	msg := p.detail(st, inv, out)
	if msg == "" {
		msg = fmt.Sprintf("%s exited with code %d", b.spec.label(), out.ExitCode)
	}
	msg = clipDetail(msg)
	e := &Error{Backend: b.Name(), Kind: KindFailed, Message: msg, ExitCode: out.ExitCode,
		Hint: fmt.Sprintf("%s exited with code %d; run `%s` by hand in the repository to see more", b.spec.exe(), out.ExitCode, b.spec.exe())}
	all := strings.ToLower(string(out.Stdout) + "\n" + string(out.Stderr))
	if k := diagnose(all); k != KindFailed {
		e.Kind, e.Hint = k, hintFor(b.Name(), k)
	}
	if h := specificHint(b.Name(), out.ExitCode, all); h != "" {
		e.Hint = h
	}
	return e
}

// defaultDetail is why a run failed: stderr, else stdout, both stripped.
func defaultDetail(out Output) string {
	if s := strings.TrimSpace(string(out.Stderr)); s != "" {
		return s
	}
	return strings.TrimSpace(string(out.Stdout))
}

func notLoggedIn(lower string) bool {
	for _, s := range []string{"not logged in", "please run /login", "please log in", "not authenticated",
		"invalid api key", "missing api key", "no api key", "401 unauthorized", "authentication failed",
		"invalid auth method", "please set an auth method", "invalid x-api-key", "authentication_error"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

func loginHint(name string) string {
	switch name {
	case "codex":
		return "log codex in: run `codex login`, or set OPENAI_API_KEY"
	case "claude":
		return "log claude in: run `claude` and type /login, or set ANTHROPIC_API_KEY"
	case "gemini":
		return "log gemini in: set GEMINI_API_KEY and \"security.auth.selectedType\": \"gemini-api-key\" in ~/.gemini/settings.json (a personal Google sign-in is refused since 2026-06-18: use --to agy for that account)"
	case "qwen":
		return "log qwen in: run `qwen` once and /auth, or set OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_MODEL"
	case "opencode":
		return "log opencode in: run `opencode auth login`"
	case "agy":
		return "sign agy in: run `agy` once in a terminal and finish the Google sign-in"
	}
	return "log " + name + " in and try again"
}

func specificHint(name string, code int, lower string) string {
	switch {
	case strings.Contains(lower, "cannot be used with root/sudo"):
		return "claude refuses to skip permissions as root: set IS_SANDBOX=1 if this is a disposable container, or use --sandbox workspace-write"
	case name == "gemini" && code == 42:
		return "gemini does not know this session any more: continue with a new --session label"
	case name == "gemini" && code == 53:
		return "gemini reached its turn limit; the answer may be incomplete: ask a narrower question"
	case name == "gemini" && strings.Contains(lower, "sandbox"):
		return "gemini's --sandbox needs Docker or Podman; relay does not use it (read-only is --approval-mode plan)"
	case name == "claude" && strings.Contains(lower, "no conversation found"):
		return "claude does not know this session any more: continue with a new --session label"
	case name == "codex" && strings.Contains(lower, "thread") && strings.Contains(lower, "not found"):
		return "codex does not know this session any more: continue with a new --session label"
	}
	return ""
}

// Output caps: an answer is text, so 64 MiB of stdout means something is
// wrong; stderr only feeds error messages, so its last 1 MiB is enough (and
// one stderr line of 64 KiB). Variables so tests can lower them.
var (
	maxStdout     = 64 << 20
	maxStderr     = 1 << 20
	maxStderrLine = 64 << 10
)

type tooMuchOutput struct{ max int }

func (e *tooMuchOutput) Error() string {
	return fmt.Sprintf("printed more than %d bytes on stdout", e.max)
}

// capBuffer keeps at most max bytes: the head (stdout) or the tail (stderr).
type capBuffer struct {
	max      int
	keepTail bool
	buf      []byte
	dropped  int
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.dropped += over
		if b.keepTail {
			b.buf = append(b.buf[:0:0], b.buf[over:]...)
		} else {
			b.buf = b.buf[:b.max]
		}
	}
	return len(p), nil
}

func (b *capBuffer) Bytes() []byte { return b.buf }

// lineWriter passes each complete line to fn as it is written; a line longer
// than max is passed on cut at max and its rest dropped.
type lineWriter struct {
	max      int
	fn       func([]byte)
	buf      []byte
	skipping bool // dropping the rest of an over-long line
}

func (l *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !l.skipping {
			room := l.max - len(l.buf)
			if len(chunk) > room {
				l.buf = append(l.buf, chunk[:room]...)
				l.fn(l.buf)
				l.buf, l.skipping = l.buf[:0], true
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !l.skipping {
			l.fn(l.buf)
		}
		l.buf, l.skipping = l.buf[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// flush passes on a last line that had no newline.
func (l *lineWriter) flush() {
	if len(l.buf) > 0 && !l.skipping {
		l.fn(l.buf)
	}
	l.buf, l.skipping = nil, false
}
