//go:build unix

// Split by platform: signals by pid are unix's (pid_other_test.go).

package cli

import "syscall"

// signalPID sends sig to process pid.
func signalPID(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
