package attack

import "golang.org/x/sys/unix"

// The terminal attribute requests: macOS's (pty_linux_test.go has Linux's).
const getTermios, setTermios = unix.TIOCGETA, unix.TIOCSETA
