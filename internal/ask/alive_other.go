//go:build !unix

package ask

import "os"

// alive reports whether a process with this pid exists: where there are no signals,
// finding the process opens it, which fails once it is gone.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
