//go:build unix

// Split by platform: process groups and signal 0 to a pid are unix's (pidprobe_other_test.go).

package run

import (
	"syscall"
	"testing"
)

// pidProbe returns a check that a process exists (signal 0 checks without sending).
func pidProbe(*testing.T) func(pid int) bool {
	return func(pid int) bool { return syscall.Kill(pid, 0) == nil }
}
