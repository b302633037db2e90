//go:build !unix

// Split by platform: signals by pid are unix's (pid_unix_test.go).

package cli

import (
	"os"
	"syscall"
)

// signalPID kills process pid, whatever sig: there is no other signal to send here.
func signalPID(pid int, _ syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
