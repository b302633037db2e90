//go:build unix

package config

import (
	"io/fs"
	"os"
	"syscall"
)

// checkOwner refuses a config file that is not owned by the effective user.
func checkOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if int(st.Uid) != os.Geteuid() {
		return &NotOwnedError{File: path, Owner: int(st.Uid)}
	}
	return nil
}
