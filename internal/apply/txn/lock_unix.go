//go:build unix

package txn

import (
	"errors"
	"os"
	"syscall"
)

var errLocked = errors.New("locked")

const openNoFollow = syscall.O_NOFOLLOW

func flock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}

func funlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
