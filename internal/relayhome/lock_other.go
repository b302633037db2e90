//go:build !unix

package relayhome

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockDaemon is a no-op where fcntl locks are unavailable; the pid file is the only guard.
func LockDaemon(home string) (func(), error) { return func() {}, nil }

// LockHolder falls back to the pid file.
func LockHolder(home string) (int, error) {
	b, err := os.ReadFile(filepath.Join(home, PIDFile))
	if err != nil {
		return 0, nil
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n, nil
}
