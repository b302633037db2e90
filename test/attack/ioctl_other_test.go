//go:build !linux

package attack

import (
	"errors"
	"os"
)

// pipeQueued needs Linux's FIONREAD on a pipe's write end.
func pipeQueued(*os.File) (int, error) { return 0, errors.New("not on this system") }
