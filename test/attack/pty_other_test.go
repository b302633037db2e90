//go:build !linux && !darwin

package attack

import (
	"os"
	"testing"
)

// openPTY skips t: the tests open pseudo-terminals on Linux and macOS (pty_unix_test.go).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	t.Skip("needs a pseudo-terminal (opened on Linux and macOS)")
	return nil, nil
}
