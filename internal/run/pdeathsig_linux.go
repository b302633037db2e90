package run

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal kills the child if relay itself dies (kill -9 during
// a postCommand), so a command cannot go on writing files after crash
// recovery has restored them.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
