package run

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAliveZombie: a process that exited but was never reaped (as under a container's PID 1
// that does not reap) is gone.
func TestAliveZombie(t *testing.T) {
	c := exec.Command("true")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Wait()
	var info unix.Siginfo
	// wait for the exit without reaping it (WNOWAIT): the child is a zombie until c.Wait
	if err := unix.Waitid(unix.P_PID, c.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if Alive(c.Process.Pid) {
		t.Error("a zombie: alive")
	}
}
