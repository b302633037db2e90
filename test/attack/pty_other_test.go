//go:build !linux

// Split by platform: a pty opened through /dev/ptmx and /dev/pts is Linux's (pty_linux_test.go).

package attack

import (
	"os"
	"testing"
)

// openPTY skips t: the tests open a pseudo-terminal only on Linux.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	t.Skip("needs a pseudo-terminal (opened the Linux way: /dev/ptmx)")
	return nil, nil
}
