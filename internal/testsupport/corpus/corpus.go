// Package corpus finds the shared conformance data (../shared beside the repository)
// for tests, and makes a skip for missing data visible: `make test` hides the output of
// passing packages, so each skip is also appended to the file named by $RELAY_SKIP_LOG,
// which the Makefile sums up in one line.
package corpus

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Find returns the absolute path of shared/<rel> in the working directory or a parent
// (or beside one: ../shared), or "" when there is none.
func Find(rel string) string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := dir; ; d = filepath.Dir(d) {
		for _, p := range []string{filepath.Join(d, "shared", rel), filepath.Join(d, "..", "shared", rel)} {
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				abs, _ := filepath.Abs(p)
				return abs
			}
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// Dir returns Find(rel), or skips t when the data is missing.
func Dir(t testing.TB, rel string) string {
	t.Helper()
	p := Find(rel)
	if p == "" {
		Skip(t, rel)
	}
	return p
}

// Skip skips t because shared/<rel> is missing, and logs the skip to $RELAY_SKIP_LOG.
func Skip(t testing.TB, rel string) {
	t.Helper()
	if log := os.Getenv("RELAY_SKIP_LOG"); log != "" {
		// One short O_APPEND write per line: lines from parallel test binaries do not mix.
		if f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			fmt.Fprintf(f, "%s\t%s\n", rel, t.Name())
			f.Close()
		}
	}
	t.Skipf("shared/%s not found beside the repository (../shared); conformance data is not part of the repository", rel)
}
