package run

import (
	"errors"

	"golang.org/x/sys/windows"
)

// Alive reports whether process pid is running. Opening the process is not enough: a
// process that exited stays openable while anything holds a handle to it, so its handle
// is asked whether it has been signalled (a process is, when it exits).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		// another user's process exists but may not be opened
		return errors.Is(err, windows.ERROR_ACCESS_DENIED)
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == uint32(windows.WAIT_TIMEOUT)
}
