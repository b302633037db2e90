//go:build unix

// Split by platform: a child's peak memory is in unix's rusage (maxrss_other.go).

package main

import (
	"os"
	"runtime"
	"syscall"
)

// maxRSS is an exited child's peak resident memory in bytes (0: unknown).
func maxRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss) // bytes there, KiB elsewhere
	}
	return int64(ru.Maxrss) * 1024
}
