//go:build !linux

package run

import "os/exec"

// killTree falls back to the process group where /proc cannot be walked.
func killTree(pid int) { killGroupPID(pid) }

// reapTreeOnExit is not available: the group is killed after Wait instead.
func reapTreeOnExit(*exec.Cmd) {}

// reapsBeforeWait is false: the group is killed after Wait.
const reapsBeforeWait = false
