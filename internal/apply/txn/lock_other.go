//go:build !unix

package txn

import (
	"errors"
	"os"
)

var errLocked = errors.New("locked")

const openNoFollow = 0

// Without flock the lock only guards this process; relay supports Unix-like
// systems for concurrent use.
func flock(*os.File) error   { return nil }
func funlock(*os.File) error { return nil }
