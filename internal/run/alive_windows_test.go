package run

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/windows"
)

// TestAliveChild: a child that exited is gone even while its handle is still held (Go's
// os.Process keeps one until Release), where opening the process still succeeds.
func TestAliveChild(t *testing.T) {
	sleeper := exec.Command("cmd.exe", "/c", "ping", "-n", "60", "127.0.0.1")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	if !Alive(sleeper.Process.Pid) {
		t.Error("a running child: not alive")
	}
	done := exec.Command("cmd.exe", "/c", "exit", "0")
	if err := done.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait releases Go's handle; hold one of our own, as a caller that still had it would.
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(done.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(h)
	if err := done.Wait(); err != nil {
		t.Fatal(err)
	}
	if Alive(done.Process.Pid) {
		t.Error("a child that exited, its handle still held: alive")
	}
}
