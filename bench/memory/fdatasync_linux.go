// Split by platform: fdatasync is Linux's (fdatasync_other.go).

package main

import (
	"os"
	"syscall"
)

// fdatasync writes f's data (and only the metadata needed to read it back) to the disk.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
