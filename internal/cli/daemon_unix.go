//go:build unix

package cli

import "syscall"

// detached makes the background daemon its own session, so closing the terminal (SIGHUP)
// does not stop it.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// terminate asks the daemon to shut down gracefully.
func terminate(pid int) error { return syscall.Kill(pid, syscall.SIGTERM) }
