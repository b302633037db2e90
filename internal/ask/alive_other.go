//go:build !unix

package ask

import "os"

// alive reports whether a process with this pid exists: on Windows finding the process
// opens it, which fails once it is gone; where finding cannot fail (plan9, js) a job whose
// process died without recording its exit shows as running, not lost.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
