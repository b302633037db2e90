//go:build unix

package cli

import (
	"os/exec"
	"syscall"
)

// detach starts the browser opener in its own session, so Ctrl-C in the terminal after relay
// exits does not reach the browser.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
