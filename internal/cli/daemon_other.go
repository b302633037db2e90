//go:build !unix

package cli

import "os"

// terminate stops the daemon; without signals there is no graceful path, but every
// acknowledged write is already committed.
func terminate(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
