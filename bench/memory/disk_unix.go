//go:build unix

// Split by platform: allocated blocks are in unix's stat (disk_other.go).

package main

import (
	"io/fs"
	"syscall"
)

// allocated is the space allocated to a file (its size where the blocks are unknown).
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}
