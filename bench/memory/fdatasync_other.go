//go:build !linux

// Split by platform: fdatasync is Linux's (fdatasync_linux.go).

package main

import (
	"errors"
	"os"
)

// fdatasync is not measured here: the disk's fsync rate is reported as unavailable.
func fdatasync(*os.File) error { return errors.ErrUnsupported }
