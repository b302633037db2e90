//go:build unix

package run

import "syscall"

// Alive reports whether process pid is running. Signal 0 finds it without sending
// anything; where /proc shows processes (Linux), a zombie (exited, and never to be reaped
// by a container's PID 1 that does not reap) counts as gone.
func Alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) == syscall.ESRCH { // pid 0 or less would name a group
		return false
	}
	return !exited(pid)
}
