//go:build unix

// Split by platform: Ctrl-C goes to a process group, which is unix's (pgroup_other_test.go).

package quickstart

import (
	"os/exec"
	"syscall"
	"testing"
)

// ownGroup puts cmd in a process group of its own, killed when its context ends, and
// returns how to signal the whole group.
func ownGroup(_ *testing.T, cmd *exec.Cmd) (signal func(syscall.Signal) error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return func(sig syscall.Signal) error { return syscall.Kill(-cmd.Process.Pid, sig) }
}
