//go:build !unix && !windows

package run

import (
	"os/exec"
	"syscall"
)

func setProcessGroup(*exec.Cmd) {}

func killGroup(*exec.Cmd) {}

// enterGroup and leaveGroup have work only on Windows, where the group is a job object.
func enterGroup(*exec.Cmd) error { return nil }

func leaveGroup(*exec.Cmd) {}

func killGroupPID(int) {}

// Detached is the SysProcAttr of a child that must outlive its parent: without sessions or
// consoles, the default.
func Detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
