package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Open-file-description locks: like flock they belong to the open file, so two opens in
// one process conflict too; unlike flock, F_OFD_GETLK can ask without taking the lock.
func lockFile(f *os.File, wait bool) error {
	cmd := unix.F_OFD_SETLK
	if wait {
		cmd = unix.F_OFD_SETLKW
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
	err := unix.FcntlFlock(f.Fd(), cmd, &lk)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		return ErrLocked
	}
	return err
}

func unlockFile(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: 0}
	return unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
}

func isLocked(f *os.File) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != unix.F_UNLCK, nil
}

const noFollow = unix.O_NOFOLLOW
