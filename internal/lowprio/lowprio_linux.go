// Package lowprio runs background work (search indexing, token recounts) at a lower CPU
// priority than the requests it trails, so on a small machine a burst of requests gets
// the cores and the background catches up when they are idle.
package lowprio

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Thread runs the calling goroutine on a thread of its own at the given nice value (0-19)
// for the rest of its life. The thread is never unlocked: it ends with the goroutine
// (threads the runtime starts later come from its template thread, not from this one, so
// they keep the normal priority).
func Thread(nice int) {
	runtime.LockOSThread()
	unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), nice) // best effort: at worst it runs at the normal priority
}
