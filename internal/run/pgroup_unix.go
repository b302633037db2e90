//go:build unix

package run

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in its own process group so a timeout kills
// everything it started, not just the direct child.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	KillWithParent(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		killTree(cmd.Process.Pid) // the leader is not reaped yet: its tree can still be walked
		return nil
	}
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		killGroupPID(cmd.Process.Pid)
	}
}

// enterGroup and leaveGroup have work only on Windows, where the group is a job object.
func enterGroup(*exec.Cmd) error { return nil }

func leaveGroup(*exec.Cmd) {}

func killGroupPID(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// Detached is the SysProcAttr of a child that must outlive its parent and its terminal
// (the background daemon, an ask job): a session of its own, so closing the terminal
// (SIGHUP) does not stop it.
func Detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
