package run

import "syscall"

// KillWithParent has the kernel kill the child attr starts once the thread that started it
// ends: relay dying (kill -9 during a postCommand) takes the command with it, so it cannot
// go on writing files after crash recovery restored them, and a test server cannot outlive
// a crashed test binary. Go may retire an idle thread: a long-lived child is started from
// a goroutine locked to its thread, which waits for it there.
func KillWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
