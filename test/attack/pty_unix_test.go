//go:build linux || darwin

package attack

import (
	"os"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: relay sees the slave as its terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, s, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	// raw output: what relay writes is what the test reads (no \n -> \r\n)
	if tio, err := unix.IoctlGetTermios(int(s.Fd()), getTermios); err == nil {
		tio.Oflag &^= unix.OPOST
		_ = unix.IoctlSetTermios(int(s.Fd()), setTermios, tio)
	}
	return m, s
}
