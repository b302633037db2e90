// Package proc reads what the benchmarks measure of another process from Linux's /proc.
package proc

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// CPU is the process's user+system CPU time so far (0 when unknown: not Linux, or no such
// process). Per-operation CPU survives a machine busy with other work, where wall-clock
// rates do not.
func CPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// the command name may hold spaces; the fields after it are fixed
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
