//go:build unix

package run

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Alive reports whether process pid is running. Signal 0 finds it without sending
// anything; where /proc shows processes (Linux), a zombie (exited, and never to be reaped
// by a container's PID 1 that does not reap) counts as gone.
func Alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) == syscall.ESRCH { // pid 0 or less would name a group
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		// gone since the signal, where there is a /proc; else (macOS, the BSDs) the signal decides
		return !(errors.Is(err, fs.ErrNotExist) && procMounted())
	}
	// the state follows the command name, which may hold spaces and parentheses
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

func procMounted() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}
