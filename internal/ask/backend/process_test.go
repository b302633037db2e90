//go:build unix

package backend

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/run"
)

// writeFake puts an executable shell script named name in a new directory.
func writeFake(t *testing.T, name, script string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProcessPromptOnStdinIntact(t *testing.T) {
	out := filepath.Join(t.TempDir(), "stdin")
	fake := writeFake(t, "claude", fmt.Sprintf(`cat > %q
printf '{"type":"result","result":"ok","session_id":"s"}'
`, out))
	b, _ := New("claude", Options{LookPath: func(string) (string, error) { return fake, nil }})
	prompt := strings.Repeat("é", 250_000) // 500,000 bytes: past the 128 KiB argv cap
	req := baseReq(ReadOnly, "")
	req.Prompt, req.Repo, req.Timeout = prompt, t.TempDir(), 30*time.Second
	res, err := b.Run(context.Background(), req)
	if err != nil || res.Answer != "ok" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(got) != sha256.Sum256([]byte(prompt)) {
		t.Fatalf("stdin differs: got %d bytes, want %d", len(got), len(prompt))
	}
}

func TestProcessStdinIsNullWhenNoPrompt(t *testing.T) {
	// codex hangs on an open stdin pipe; an empty prompt must mean /dev/null, so cat sees EOF.
	fake := writeFake(t, "x", "cat; echo done\n")
	out, err := ProcessRunner(context.Background(), Invocation{Path: fake})
	if err != nil || strings.TrimSpace(string(out.Stdout)) != "done" {
		t.Fatalf("out = %q, %v", out.Stdout, err)
	}
}

func TestProcessTimeoutKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	// the fake starts a grandchild that would outlive it, then hangs
	fake := writeFake(t, "gemini", fmt.Sprintf(`sleep 300 &
echo $! > %q
sleep 300
`, pidFile))
	b, _ := New("gemini", Options{LookPath: func(string) (string, error) { return fake, nil }})
	req := baseReq(ReadOnly, "")
	req.Repo, req.Timeout = t.TempDir(), 1*time.Second
	start := time.Now()
	_, err := b.Run(context.Background(), req)
	var be *Error
	if !asError(err, &be) || be.Kind != KindTimeout || !strings.HasPrefix(be.Message, "gemini timed out after 1s\n") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s to give up after a 1s timeout", d)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	deadline := time.Now().Add(5 * time.Second)
	for {
		if !run.Alive(pid) {
			return // gone (run.Alive counts an unreaped zombie as gone)
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d survived the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestProcessExitCodeAndStreams(t *testing.T) {
	fake := writeFake(t, "qwen", "echo out; echo err >&2; exit 5\n")
	out, err := ProcessRunner(context.Background(), Invocation{Path: fake})
	if err != nil || out.ExitCode != 5 || string(out.Stdout) != "out\n" || string(out.Stderr) != "err\n" {
		t.Fatalf("out = %+v, %v", out, err)
	}
}

func TestProcessOutputCaps(t *testing.T) {
	defer func(o, e int) { maxStdout, maxStderr = o, e }(maxStdout, maxStderr)
	maxStdout, maxStderr = 1<<20, 64<<10
	// too much stdout is refused with a clear message; stderr keeps its tail
	fake := writeFake(t, "codex", "head -c 2000000 /dev/zero | tr '\\0' x; head -c 200000 /dev/zero | tr '\\0' e >&2; echo END >&2\n")
	out, err := ProcessRunner(context.Background(), Invocation{Path: fake})
	var tm *tooMuchOutput
	if !errors.As(err, &tm) || len(out.Stdout) != maxStdout {
		t.Fatalf("err %v, kept %d bytes of stdout", err, len(out.Stdout))
	}
	if len(out.Stderr) != maxStderr || !strings.HasSuffix(string(out.Stderr), "END\n") {
		t.Fatalf("stderr kept %d bytes, tail %q", len(out.Stderr), out.Stderr[len(out.Stderr)-5:])
	}
	b, _ := New("codex", Options{LookPath: func(string) (string, error) { return fake, nil }})
	req := baseReq(ReadOnly, "")
	req.Repo, req.Timeout = t.TempDir(), 60*time.Second
	_, err = b.Run(context.Background(), req)
	var be *Error
	if !asError(err, &be) || be.Message != "codex exec printed more than 1048576 bytes on stdout" {
		t.Fatalf("err = %v", err)
	}
}

// A CLI that exits 0 without reading its stdin (gemini's 500 ms stdin timer
// on a busy machine) answered some other question: relay asks once more,
// then says so instead of passing that answer on.
func TestPromptNotReadIsRetriedThenRefused(t *testing.T) {
	count := filepath.Join(t.TempDir(), "count")
	// the first run ignores stdin; the second reads it
	fake := writeFake(t, "qwen", fmt.Sprintf(`echo x >> %[1]q
if [ "$(wc -l < %[1]q)" -ge 2 ]; then cat > /dev/null; fi
printf '{"type":"result","subtype":"success","is_error":false,"result":"ok"}\n'
`, count))
	b, _ := New("qwen", Options{LookPath: func(string) (string, error) { return fake, nil }})
	req := baseReq(ReadOnly, "")
	req.Repo, req.Timeout = t.TempDir(), 30*time.Second
	var warned []string
	req.OnEvent = func(ev Event) {
		if ev.Kind == EventWarning {
			warned = append(warned, ev.Text)
		}
	}
	res, err := b.Run(context.Background(), req)
	if err != nil || res.Answer != "ok" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "did not read the prompt") {
		t.Errorf("warnings = %q", warned)
	}

	never := writeFake(t, "qwen", `printf '{"type":"result","subtype":"success","is_error":false,"result":"an answer to nothing"}\n'
`)
	b, _ = New("qwen", Options{LookPath: func(string) (string, error) { return never, nil }})
	_, err = b.Run(context.Background(), req)
	var be *Error
	if !asError(err, &be) || be.Kind != KindPromptNotRead || !strings.Contains(be.Message, "without reading the prompt") {
		t.Fatalf("err = %v", err)
	}
}

// The prompt file is private to the user and gone after the run: on Linux a memfd, which
// has no name in any directory; elsewhere a 0600 file removed with the run's directory.
func TestPromptFileIsPrivate(t *testing.T) {
	seen := filepath.Join(t.TempDir(), "seen")
	fake := writeFake(t, "claude", fmt.Sprintf(`f=$(readlink /proc/$$/fd/0); stat -c %%a "$f" > %q; echo "$f" >> %q; cat > /dev/null
printf '{"type":"result","result":"ok"}\n'
`, seen, seen))
	b, _ := New("claude", Options{LookPath: func(string) (string, error) { return fake, nil }})
	req := baseReq(ReadOnly, "")
	req.Repo, req.Timeout = t.TempDir(), 30*time.Second
	if _, err := b.Run(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(strings.TrimSpace(string(raw)), "\n", 2)
	if runtime.GOOS == "linux" {
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "/memfd:relay-prompt") {
			t.Fatalf("stdin = %q, want relay's memfd", raw)
		}
		return
	}
	if len(lines) != 2 || lines[0] != "600" {
		t.Fatalf("stdin mode/path = %q, want a 0600 file", lines)
	}
	if _, err := os.Stat(lines[1]); !os.IsNotExist(err) {
		t.Errorf("prompt file %s left behind", lines[1])
	}
}

// A fatal event ends the run at once (not at the timeout), with the friend's
// own words, and nothing it started is left.
func TestFatalEventEndsRunEarly(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	fake := writeFake(t, "codex", fmt.Sprintf(`cat > /dev/null
sleep 300 & echo $! > %q
echo '{"type":"thread.started","thread_id":"t-1"}'
echo '{"type":"turn.started"}'
echo '{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}'
sleep 300
`, pidFile))
	b, _ := New("codex", Options{LookPath: func(string) (string, error) { return fake, nil }})
	req := baseReq(ReadOnly, "")
	req.Repo, req.Timeout = t.TempDir(), 120*time.Second
	var events []Event
	req.OnEvent = func(ev Event) { events = append(events, ev) }
	start := time.Now()
	_, err := b.Run(context.Background(), req)
	var be *Error
	if !asError(err, &be) || be.Kind != KindUnreachable || be.Message != "Reconnecting... waiting for network (Connection failed: error sending request)" {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(be.Hint, "network") {
		t.Errorf("hint %q", be.Hint)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %s", d)
	}
	var texts []string
	for _, ev := range events {
		texts = append(texts, string(ev.Kind)+": "+ev.Text)
	}
	want := []string{"status: starting codex exec", "status: started thread t-1", "status: waiting for the model",
		"warning: Reconnecting... waiting for network (Connection failed: error sending request)"}
	if strings.Join(texts, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(texts, "\n"), strings.Join(want, "\n"))
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	deadline := time.Now().Add(5 * time.Second)
	for run.Alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d outlived the run", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Text arrives as the friend writes it, in order, before the run ends.
func TestStreamedTextArrivesInOrder(t *testing.T) {
	fake := writeFake(t, "gemini", `cat > /dev/null
echo '{"type":"init","session_id":"g","model":"m"}'
for w in one two three; do echo "{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"$w \",\"delta\":true}"; done
echo '{"type":"result","status":"success"}'
`)
	b, _ := New("gemini", Options{LookPath: func(string) (string, error) { return fake, nil }})
	req := baseReq(ReadOnly, "")
	req.Repo, req.Timeout = t.TempDir(), 30*time.Second
	var got strings.Builder
	req.OnEvent = func(ev Event) {
		if ev.Kind == EventText {
			got.WriteString(ev.Text)
		}
	}
	res, err := b.Run(context.Background(), req)
	if err != nil || res.Answer != "one two three" || got.String() != "one two three " {
		t.Fatalf("Run = %q, %v; streamed %q", res.Answer, err, got.String())
	}
}

func TestLineWriter(t *testing.T) {
	var lines []string
	l := &lineWriter{max: 5, fn: func(b []byte) { lines = append(lines, string(b)) }}
	for _, chunk := range []string{"ab", "c\nde", "fghij\nk", "\n\nlast"} {
		_, _ = l.Write([]byte(chunk))
	}
	l.flush()
	want := []string{"abc", "defgh", "k", "", "last"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Fatalf("lines = %q, want %q", lines, want)
	}
}
