//go:build unix

package ask

import "syscall"

// alive reports whether a process with this pid exists (signal 0 checks without sending).
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }
