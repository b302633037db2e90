//go:build !linux

package run

import "syscall"

// KillWithParent does nothing where there is no parent-death signal: the child outlives a
// parent that crashed.
func KillWithParent(*syscall.SysProcAttr) {}
