package server

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// lowerPriority runs the calling goroutine on a thread of its own at nice 10 for the rest of
// its life, so background counting yields the CPU to requests on a busy machine. The thread
// is never unlocked: it ends with the goroutine (threads the runtime starts later come from
// its template thread, not from this one, so they keep the normal priority).
func lowerPriority() {
	runtime.LockOSThread()
	unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 10) // best effort: at worst it runs at the normal priority
}
