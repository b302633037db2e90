//go:build unix

// Split by platform: FIFOs are unix's (fifo_other_test.go).

package attack

import (
	"syscall"
	"testing"
)

// mkfifo makes a FIFO at path.
func mkfifo(_ *testing.T, path string, mode uint32) error { return syscall.Mkfifo(path, mode) }
