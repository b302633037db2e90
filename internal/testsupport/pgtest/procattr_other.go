//go:build !unix

// Split by platform: the test server needs unix (procattr_unix.go).

package pgtest

import (
	"errors"
	"syscall"
)

// unsupported makes Bin fail, so tests skip as when PostgreSQL is not installed: the test
// server listens only on a unix socket, and is stopped with SIGINT.
func unsupported() error {
	return errors.New("PostgreSQL tests need a unix machine to start their own server (it listens on a unix socket); RELAY_TEST_POSTGRES=postgres://… uses a running one")
}

func runAs(*osUser) *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

func serverProcAttr(*osUser) *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
