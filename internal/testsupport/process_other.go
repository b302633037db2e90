//go:build !unix

// Split by platform: FIFOs and signals by pid are unix's (process_unix.go).

package testsupport

import (
	"os"
	"syscall"
	"testing"
)

// Mkfifo skips t: there are no FIFOs here.
func Mkfifo(t testing.TB, _ string, _ uint32) error {
	t.Helper()
	t.Skip("needs a FIFO (unix)")
	return nil
}

// Signal kills process pid, whatever sig: there is no other signal to send here.
func Signal(pid int, _ syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
