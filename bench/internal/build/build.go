// Package build builds the relay binary the benchmarks run, as `make install` builds it for
// users (static and stripped): a cgo build links libc dynamically, which costs start-up
// time and about 2 MB of resident memory that an installed relay does not have.
package build

import (
	"fmt"
	"os"
	"os/exec"
)

// Relay builds ./cmd/relay of the module in dir (the current directory when "") into out.
func Relay(dir, out string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/relay")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/relay (run from the repository root): %v\n%s", err, b)
	}
	return nil
}
