//go:build unix

// Split by platform: process groups and kill by pid are unix's (pgroup_other_test.go).

package attack

import (
	"syscall"
	"testing"
)

// ownGroup is the SysProcAttr of a child in a process group of its own.
func ownGroup(*testing.T) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
