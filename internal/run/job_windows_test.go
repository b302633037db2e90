//go:build windows

package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// TestJobHelperProcess is not a test: as "parent" it starts a "child" copy of this test
// binary (plainly, with os/exec, as a shim starts node), prints the child's pid, then sleeps
// or exits as RELAY_RUN_JOB_PARENT says; the child sleeps.
func TestJobHelperProcess(t *testing.T) {
	switch os.Getenv("RELAY_RUN_JOB_HELPER") {
	case "":
		t.Skip("helper process only")
	case "parent":
		c := exec.Command(os.Args[0], "-test.run=^TestJobHelperProcess$")
		c.Env = append(os.Environ(), "RELAY_RUN_JOB_HELPER=child")
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(c.Process.Pid)
		if os.Getenv("RELAY_RUN_JOB_PARENT") == "exit" {
			os.Exit(0)
		}
		time.Sleep(time.Minute)
		os.Exit(0)
	case "child":
		time.Sleep(time.Minute)
		os.Exit(0)
	}
}

// pidWriter hands over the first line written to it: the grandchild's pid.
type pidWriter struct {
	once sync.Once
	buf  strings.Builder
	pid  chan int
}

func (w *pidWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	if s, ok := strings.CutSuffix(strings.TrimRight(w.buf.String(), "\r"), "\n"); ok {
		w.once.Do(func() {
			n, _ := strconv.Atoi(strings.TrimSpace(s))
			w.pid <- n
		})
	}
	return len(p), nil
}

func helper(ctx context.Context, parent string, out *pidWriter) *Cmd {
	c := Command(ctx, os.Args[0], "-test.run=^TestJobHelperProcess$")
	c.Env = append(os.Environ(), "RELAY_RUN_JOB_HELPER=parent", "RELAY_RUN_JOB_PARENT="+parent)
	c.Stdout = out
	return c
}

// exitedWithin reports whether process pid ends within d (gone already counts).
func exitedWithin(t *testing.T, pid int, d time.Duration) bool {
	t.Helper()
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return true // no such process any more
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, uint32(d.Milliseconds()))
	if err != nil {
		t.Fatal(err)
	}
	return ev != uint32(windows.WAIT_TIMEOUT)
}

func killPID(pid int) {
	if h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(pid)); err == nil {
		_ = windows.TerminateProcess(h, 1)
		windows.CloseHandle(h)
	}
}

func TestCancelKillsWholeJob(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := &pidWriter{pid: make(chan int, 1)}
	done := make(chan error, 1)
	go func() { done <- helper(ctx, "sleep", out).Run() }()
	var pid int
	select {
	case pid = <-out.pid:
	case err := <-done:
		t.Fatalf("the helper ended before starting its child: %v", err)
	}
	t.Cleanup(func() { killPID(pid) })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the context's cancellation", err)
	}
	if !exitedWithin(t, pid, 10*time.Second) {
		t.Fatalf("grandchild %d still runs after its command was cancelled", pid)
	}
}

func TestFinishedCommandLeavesWhatItStarted(t *testing.T) {
	out := &pidWriter{pid: make(chan int, 1)}
	if err := helper(context.Background(), "exit", out).Run(); err != nil {
		t.Fatal(err)
	}
	pid := <-out.pid
	t.Cleanup(func() { killPID(pid) })
	if exitedWithin(t, pid, 0) {
		t.Fatalf("grandchild %d was killed when its command finished normally (unix leaves it too)", pid)
	}
}

func TestKillGroupOnExitEndsWholeJob(t *testing.T) {
	out := &pidWriter{pid: make(chan int, 1)}
	c := helper(context.Background(), "exit", out)
	c.KillGroupOnExit = true
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	pid := <-out.pid
	t.Cleanup(func() { killPID(pid) })
	if !exitedWithin(t, pid, 10*time.Second) {
		t.Fatalf("grandchild %d still runs after its command exited with KillGroupOnExit", pid)
	}
}
