// Package filelock holds exclusive locks on files between processes. The kernel drops a
// lock when its holder exits, even on kill -9, so a lock file left behind never blocks
// anyone; the holder's pid is written into the file so others can say who holds it.
package filelock

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrLocked is returned by TryLock when another holder has the lock.
var ErrLocked = errors.New("the lock is held by another process")

// Lock is a held lock; Unlock releases it.
type Lock struct{ f *os.File }

// TryLock takes the lock on path without waiting, creating the file (0600) when missing.
// It returns an error wrapping ErrLocked when another holder has it.
func TryLock(path string) (*Lock, error) { return acquire(path, false) }

// Wait takes the lock on path, waiting for the current holder to release it.
func Wait(path string) (*Lock, error) { return acquire(path, true) }

func acquire(path string, wait bool) (*Lock, error) {
	// Never through a link: a lock file planted as a link to ~/.bashrc would be truncated.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := lockFile(f, wait); err != nil {
		f.Close()
		if errors.Is(err, ErrLocked) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// Record who holds it; a reader only trusts this while the lock is held.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock. The pid is cleared first so a stale one is never read as
// the holder's.
func (l *Lock) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = unlockFile(l.f)
	_ = l.f.Close()
	l.f = nil
}

// Holder returns the pid of the process holding path's lock, or 0 when nobody holds it
// (or the file does not exist). The pid may be 0 with held true for a moment after the
// holder took the lock and before it wrote its pid.
func Holder(path string) (pid int, held bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|noFollow, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	held, err = isLocked(f)
	if err != nil || !held {
		return 0, false, err
	}
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, _ = strconv.Atoi(strings.TrimSpace(string(b[:n])))
	return pid, true, nil
}
