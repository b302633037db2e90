package backend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"

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
}

// Output is what a finished (or killed) CLI left behind.
type Output struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
	TimedOut bool
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

// ProcessRunner runs an invocation through internal/run: prompt on stdin (or
// the null device), stdout and stderr captured apart, process-group kill when
// ctx ends.
func ProcessRunner(ctx context.Context, inv Invocation) (Output, error) {
	stdout := &capBuffer{max: maxStdout}
	stderr := &capBuffer{max: maxStderr, keepTail: true}
	c := run.Command(ctx, inv.Path, inv.Args...)
	c.Dir, c.Env = inv.Dir, inv.Env
	if inv.Stdin != "" {
		c.Stdin = strings.NewReader(inv.Stdin)
	}
	c.Stdout, c.Stderr = stdout, stderr
	err := c.Run()
	out := Output{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
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
	case errors.As(err, &exitErr):
		out.ExitCode = exitErr.Code
		return out, nil
	case ctx.Err() != nil:
		return out, ctx.Err()
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
	// parse reads a zero-exit run.
	parse(inv Invocation, out Output) (Result, error)
	// detail extracts the CLI's own error text from a failed run ("" if none).
	detail(inv Invocation, out Output) string
	// emptyMessage is the backend's message for a run with no answer.
	emptyMessage() string
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

func (b *cliBackend) Run(ctx context.Context, req Request) (Result, error) {
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
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	out, err := b.opts.Runner(ctx, inv)
	if err != nil {
		if ctx.Err() != nil && !out.TimedOut {
			return Result{}, &Error{Backend: b.Name(), Message: b.spec.label() + " was cancelled", Hint: "run the command again"}
		}
		var tm *tooMuchOutput
		if errors.As(err, &tm) {
			return Result{}, &Error{Backend: b.Name(), Message: b.spec.label() + " " + err.Error(),
				Hint: "ask for a shorter answer; relay keeps only that much of a friend's output"}
		}
		return Result{}, &Error{Backend: b.Name(), Message: fmt.Sprintf("Failed starting %s: %v", b.spec.exe(), err),
			Hint: "check that " + inv.Path + " is executable: " + b.InstallHint()}
	}
	if out.TimedOut {
		return Result{}, &Error{
			Backend: b.Name(), Kind: KindTimeout,
			Message: fmt.Sprintf("%s timed out after %s", b.spec.label(), secs(req.Timeout)),
			Hint:    fmt.Sprintf("raise --timeout (it was %s), ask a narrower question, or check that `%s` works on its own", secs(req.Timeout), b.spec.exe()),
		}
	}
	if out.ExitCode != 0 {
		return Result{}, b.failure(inv, out)
	}
	res, err := b.spec.parse(inv, out)
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

// maxDetail bounds the CLI text kept in an error: the end is where the cause is.
const maxDetail = 4000

func (b *cliBackend) failure(inv Invocation, out Output) *Error {
	msg := b.spec.detail(inv, out)
	if msg == "" {
		msg = fmt.Sprintf("%s exited with code %d", b.spec.label(), out.ExitCode)
	}
	if len(msg) > maxDetail {
		msg = "…" + msg[len(msg)-maxDetail:]
	}
	e := &Error{Backend: b.Name(), Kind: KindFailed, Message: msg, ExitCode: out.ExitCode,
		Hint: fmt.Sprintf("%s exited with code %d; run `%s` by hand in the repository to see more", b.spec.exe(), out.ExitCode, b.spec.exe())}
	all := strings.ToLower(string(out.Stdout) + "\n" + string(out.Stderr))
	if notLoggedIn(all) {
		e.Kind = KindNotLoggedIn
		e.Hint = loginHint(b.Name())
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
		"invalid auth method", "please set an auth method"} {
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
		return "log gemini in: run `gemini` once and pick a sign-in method, or set GEMINI_API_KEY and \"security.auth.selectedType\": \"gemini-api-key\" in ~/.gemini/settings.json"
	case "qwen":
		return "log qwen in: run `qwen` once and /auth, or set OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_MODEL"
	case "opencode":
		return "log opencode in: run `opencode auth login`"
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
// wrong; stderr only feeds error messages, so its last 1 MiB is enough.
// Variables so tests can lower them.
var (
	maxStdout = 64 << 20
	maxStderr = 1 << 20
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
