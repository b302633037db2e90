//go:build unix

package patch

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time. Benchmarks report it next to
// wall time because a shared 2-core machine inflates wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
