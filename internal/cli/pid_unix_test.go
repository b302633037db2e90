//go:build unix

// Split by platform: signals by pid are unix's (pid_other_test.go).

package cli

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// signalPID sends sig to process pid.
func signalPID(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }

// alive reports whether pid runs; a zombie (exited, not yet reaped by a
// non-reaping PID 1 in a container) counts as gone.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) == syscall.ESRCH {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !os.IsNotExist(err)
	}
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
