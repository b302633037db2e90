//go:build unix

package cli

import "syscall"

// terminate asks the daemon to shut down gracefully.
func terminate(pid int) error { return syscall.Kill(pid, syscall.SIGTERM) }
