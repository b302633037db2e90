package run

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestRunCapturesStdoutAndExitCode(t *testing.T) {
	out, err := Shell(context.Background(), t.TempDir(), "echo hello; echo oops >&2; exit 3").Output()
	if got := string(out); got != "hello\n" {
		t.Errorf("stdout = %q, want %q", got, "hello\n")
	}
	var exitErr *ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("err = %v, want *ExitError", err)
	}
	if exitErr.Code != 3 || !strings.Contains(exitErr.Stderr, "oops") {
		t.Errorf("exit error = %+v, want code 3 with stderr oops", exitErr)
	}
	if !strings.Contains(err.Error(), "oops") {
		t.Errorf("error message %q does not carry stderr", err)
	}
}

func TestRunNeverInheritsStdin(t *testing.T) {
	// `cat` with an inherited terminal or pipe would block; with the null device it ends at once.
	out, err := Command(context.Background(), "cat").Output()
	if err != nil || len(out) != 0 {
		t.Fatalf("cat = %q, %v; want empty output from the null device", out, err)
	}
	c := Command(context.Background(), "cat")
	c.Stdin = strings.NewReader("fed")
	out, err = c.Output()
	if err != nil || string(out) != "fed" {
		t.Fatalf("cat with stdin = %q, %v", out, err)
	}
}

func TestNotFound(t *testing.T) {
	err := Command(context.Background(), "relay-no-such-program-xyz").Run()
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v, want *NotFoundError", err)
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	switch runtime.GOOS {
	case "windows":
		t.Skip("a shell's $$ is not a Windows pid; job_windows_test.go tests the job object instead")
	case "plan9":
		t.Skip("a timeout kills only the direct child where there are no process groups")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// The grandchild writes its pid and sleeps; a timeout must kill it too.
	err := Shell(ctx, dir, "sh -c 'echo $$ > pid; exec sleep 30' & wait").Run()
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want *TimeoutError", err)
	}
	data, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatalf("grandchild never started: %v", rerr)
	}
	var pid int
	for _, ch := range strings.TrimSpace(string(data)) {
		pid = pid*10 + int(ch-'0')
	}
	deadline := time.Now().Add(2 * time.Second)
	for Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still alive after timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTrace(t *testing.T) {
	var buf bytes.Buffer
	SetTrace(&buf)
	defer SetTrace(nil)
	c := Command(context.Background(), "true", "a b")
	c.Dir = "/"
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "+ true 'a b' (in /)\n"; got != want {
		t.Errorf("trace = %q, want %q", got, want)
	}
}
