//go:build !unix

// Split by platform: Ctrl-C goes to a process group, which is unix's (pgroup_unix_test.go).

package quickstart

import (
	"os/exec"
	"syscall"
	"testing"
)

// ownGroup skips t: there are no process groups to send Ctrl-C to here.
func ownGroup(t *testing.T, _ *exec.Cmd) func(syscall.Signal) error {
	t.Helper()
	t.Skip("needs process groups to send Ctrl-C (unix)")
	return nil
}
