package attack

import "golang.org/x/sys/unix"

// The terminal attribute requests: Linux's (pty_darwin_test.go has macOS's).
const getTermios, setTermios = unix.TCGETS, unix.TCSETS
