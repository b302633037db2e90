//go:build unix

package backend

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
	if !asError(err, &be) || be.Kind != KindTimeout || be.Message != "gemini timed out after 1s" {
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
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH || zombie(pid) {
			return // gone (a zombie has exited; only a container's PID 1 has not reaped it)
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

func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
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
