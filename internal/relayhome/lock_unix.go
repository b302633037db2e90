//go:build unix

package relayhome

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockDaemon takes the daemon's exclusive fcntl lock on daemon.lock, or returns
// ErrDaemonRunning. The kernel releases it even on
// kill -9, so a stale pid file never blocks a restart, and F_GETLK tells others our pid.
func LockDaemon(home string) (func(), error) {
	path := filepath.Join(home, LockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		f.Close()
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
			return nil, ErrDaemonRunning
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// LockHolder returns the pid of the daemon holding home's lock, or 0 when none runs.
func LockHolder(home string) (int, error) {
	f, err := os.OpenFile(filepath.Join(home, LockFile), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return 0, fmt.Errorf("query %s: %w", f.Name(), err)
	}
	if lk.Type == syscall.F_UNLCK {
		return 0, nil
	}
	return int(lk.Pid), nil
}
