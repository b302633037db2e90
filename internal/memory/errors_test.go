package memory_test

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/relaydev/relay/internal/memory"
)

// fullStore is a store whose own errors say "full" when they are errFull.
type fullStore struct{ memory.Store }

var errFull = errors.New("the store's own full error")

func (fullStore) Full(err error) bool { return errors.Is(err, errFull) }

// TestIsFull: a full disk or quota found by any layer (a spooled upload's temporary file),
// or the store's own word for it, is "full"; anything else is not.
func TestIsFull(t *testing.T) {
	spool := fmt.Errorf("spool upload: %w", &fs.PathError{Op: "write", Path: "/tmp/relay-body-1", Err: syscall.ENOSPC})
	for _, c := range []struct {
		st   memory.Store
		err  error
		want bool
	}{
		{nil, spool, true},
		{nil, fmt.Errorf("x: %w", syscall.EDQUOT), true},
		{fullStore{}, fmt.Errorf("commit: %w", errFull), true},
		{nil, fmt.Errorf("commit: %w", errFull), false}, // a store that cannot say
		{fullStore{}, errors.New("disk is fine"), false},
		{fullStore{}, nil, false},
	} {
		if got := memory.IsFull(c.st, c.err); got != c.want {
			t.Errorf("IsFull(%T, %v) = %v, want %v", c.st, c.err, got, c.want)
		}
	}
}
