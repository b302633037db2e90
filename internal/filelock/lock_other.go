//go:build !unix

package filelock

import "os"

// Where the platform has no advisory locks, the lock file's pid is the only guard.
func lockFile(f *os.File, wait bool) error { return nil }

func unlockFile(f *os.File) error { return nil }

func isLocked(f *os.File) (bool, error) {
	st, err := f.Stat()
	return err == nil && st.Size() > 0, err
}

const noFollow = 0
