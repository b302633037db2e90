// Split by platform: only Linux has a parent-death signal (pdeathsig_other.go).

package testsupport

import "syscall"

// KillWithParent has the kernel kill the child attr starts once the thread that started it
// ends, so a test server cannot outlive a crashed test binary. Go may retire an idle
// thread: start the child from a goroutine locked to its thread and wait for it there.
func KillWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
