//go:build linux

package attack

import (
	"os"
	"syscall"
	"unsafe"
)

// ioctlInt runs an ioctl whose result is an int (FIONREAD/TIOCINQ).
func ioctlInt(fd uintptr, req uint) (int, error) {
	var n int32
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, uintptr(req), uintptr(unsafe.Pointer(&n)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// pipeQueued is how many bytes wait unread in the pipe w writes to.
func pipeQueued(w *os.File) (int, error) {
	rc, err := w.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ierr error
	err = rc.Control(func(fd uintptr) {
		n, ierr = ioctlInt(fd, syscall.TIOCINQ)
	})
	if err != nil {
		return 0, err
	}
	return n, ierr
}
