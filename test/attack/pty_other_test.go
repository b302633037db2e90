//go:build !unix

package attack

import (
	"os"
	"testing"
)

// openPTY skips t: the tests need a unix pseudo-terminal (pty_unix_test.go).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	t.Skip("needs a pseudo-terminal (unix)")
	return nil, nil
}
