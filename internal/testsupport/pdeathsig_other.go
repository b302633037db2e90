//go:build !linux

// Split by platform: only Linux has a parent-death signal (pdeathsig_linux.go).

package testsupport

import "syscall"

// KillWithParent does nothing here: a test server outlives a test binary that crashed.
func KillWithParent(*syscall.SysProcAttr) {}
