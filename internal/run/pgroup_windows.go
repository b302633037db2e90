//go:build windows

package run

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// Windows has no process groups to signal; a timeout kills the direct child only.
func setProcessGroup(*exec.Cmd) {}

func killGroup(*exec.Cmd) {}

func killGroupPID(int) {}

// Detached is the SysProcAttr of a child that must outlive its parent and its console (the
// background daemon, an ask job): without a console of its own to inherit, closing the
// terminal that started it does not end it, and in a process group of its own the
// terminal's Ctrl+C does not reach it.
func Detached() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS, HideWindow: true}
}
