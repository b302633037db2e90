//go:build !unix && !windows

package run

import "os"

// Alive reports whether process pid exists; where finding a process cannot fail (plan9,
// js) a process that died shows as running.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
