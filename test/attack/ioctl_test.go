package attack

import (
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
