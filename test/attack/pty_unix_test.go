//go:build unix

package attack

import (
	"os"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/term"
)

// openPTY opens a pseudo-terminal pair: relay sees the slave as its terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, s, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	// raw: what relay writes is what the test reads (no \n -> \r\n); relay reads nothing from it
	if _, err := term.MakeRaw(int(s.Fd())); err != nil {
		m.Close()
		s.Close()
		t.Fatalf("make the pty raw: %v", err)
	}
	return m, s
}
