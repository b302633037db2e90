//go:build !unix

// Split by platform: process groups and kill by pid are unix's (pgroup_unix_test.go).

package attack

import (
	"syscall"
	"testing"
)

// ownGroup skips t: there are no process groups here.
func ownGroup(t *testing.T) *syscall.SysProcAttr {
	t.Helper()
	t.Skip("needs process groups (unix)")
	return nil
}
