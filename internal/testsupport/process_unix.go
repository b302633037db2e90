//go:build unix

// Split by platform: FIFOs and signals by pid are unix's (process_other.go).

package testsupport

import (
	"syscall"
	"testing"
)

// Mkfifo makes a FIFO at path (a test of reads that must not hang on one).
func Mkfifo(_ testing.TB, path string, mode uint32) error { return syscall.Mkfifo(path, mode) }

// Signal sends sig to process pid.
func Signal(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
