package run

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pidsFrom reads the pids a test script wrote, one a line.
func pidsFrom(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func liveProc(pid int) bool {
	st, err := procStat(pid)
	return err == nil && st.state != 'Z' && st.state != 'X'
}

// waitGone waits (bounded) for pids to leave: a killed orphan needs init to reap it.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range pids {
		for liveProc(p) {
			if time.Now().After(deadline) {
				_ = syscall.Kill(p, syscall.SIGKILL)
				t.Fatalf("process %d outlived the command", p)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// A command that exits at once but leaves a grandchild that ignores SIGTERM
// and holds stdout: with KillGroupOnExit it dies when the command does, and
// Run returns at once instead of waiting for the pipe.
func TestKillGroupOnExitLeavesNothing(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pids")
	script := `trap '' TERM
sleep 300 &
echo $! >> "$1"
echo done`
	var out bytes.Buffer
	c := Command(context.Background(), "sh", "-c", script, "sh", pidfile)
	c.Stdout = &out
	c.KillGroupOnExit = true
	start := time.Now()
	if err := c.Run(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if el := time.Since(start); el > waitDelay {
		t.Errorf("Run took %s: it waited for the leftover's pipe instead of killing it", el)
	}
	if strings.TrimSpace(out.String()) != "done" {
		t.Errorf("stdout = %q", out.String())
	}
	waitGone(t, pidsFrom(t, pidfile))
}

// A timed-out command is killed with its whole tree, including a child in
// another session that the group kill alone would miss.
func TestTimeoutKillsTree(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pids")
	script := `setsid sleep 302 &
echo $! >> "$1"
trap '' TERM
sleep 303 &
echo $! >> "$1"
wait`
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c := Command(ctx, "sh", "-c", script, "sh", pidfile)
	err := c.Run()
	if _, ok := err.(*TimeoutError); !ok {
		t.Fatalf("Run = %v, want a timeout", err)
	}
	waitGone(t, pidsFrom(t, pidfile))
}
