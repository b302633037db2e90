//go:build unix

package testsupport

import (
	"syscall"
	"time"
)

// CPUTime is the user and system CPU this process has used. Benchmarks report it per
// operation next to wall time: it compares runs on a shared 2-core machine better.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
