//go:build unix

// Split by platform: running as another user, in a process group, is unix's (procattr_other.go).

package pgtest

import (
	"syscall"

	"github.com/relaydev/relay/internal/run"
)

// unsupported is nil: the test server runs here.
func unsupported() error { return nil }

// runAs is the SysProcAttr of initdb and pg_ctl: run as u (nil: this user).
func runAs(u *osUser) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{}
	if u != nil {
		a.Credential = &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}
	}
	return a
}

// serverProcAttr is the server's: run as u, in a process group of its own, and killed with
// the test binary where the platform has a parent-death signal (Linux).
func serverProcAttr(u *osUser) *syscall.SysProcAttr {
	a := runAs(u)
	a.Setpgid = true
	run.KillWithParent(a)
	return a
}
