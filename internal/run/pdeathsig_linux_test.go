package run

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHelperParent is not a test: TestChildDiesWithRelay runs it in a
// separate process that starts a long command and is then killed.
func TestHelperParent(t *testing.T) {
	pidFile := os.Getenv("RELAY_RUN_HELPER_PIDFILE")
	if pidFile == "" {
		t.Skip("helper process only")
	}
	_ = Shell(context.Background(), filepath.Dir(pidFile), "echo $$ > "+pidFile+"; exec sleep 30").Run()
}

func TestChildDiesWithRelay(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	parent := exec.Command(os.Args[0], "-test.run=^TestHelperParent$")
	parent.Env = append(os.Environ(), "RELAY_RUN_HELPER_PIDFILE="+pidFile)
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0; {
		if data, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(data), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		}
		if time.Now().After(deadline) {
			parent.Process.Kill()
			t.Fatal("the child command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := parent.Process.Kill(); err != nil { // kill -9, as a crash would
		t.Fatal(err)
	}
	_ = parent.Wait()
	for deadline := time.Now().Add(5 * time.Second); Alive(pid); {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d outlived its killed parent", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
