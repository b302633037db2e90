package txn

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/relaydev/relay/internal/filelock"
)

const lockName = "relay.lock"

// BusyError means another relay process holds the project's transaction lock.
type BusyError struct{ PID int }

func (e *BusyError) Error() string {
	who := "another relay process"
	if e.PID > 0 {
		who = fmt.Sprintf("another relay process (pid %d)", e.PID)
	}
	return who + " is applying a transaction in this project; wait for it to finish, then try again"
}

// lock is the project's exclusive transaction lock. The kernel drops it when
// the owning process dies, so a pending file whose lock is free is orphaned.
type lock struct{ l *filelock.Lock }

// tryLock takes the lock without waiting.
func tryLock(projectDir string) (*lock, error) {
	dir := filepath.Join(projectDir, StateDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", StateDir, err)
	}
	if err := checkStateDir(projectDir); err != nil {
		return nil, err
	}
	name := filepath.Join(dir, lockName)
	l, err := filelock.TryLock(name)
	if errors.Is(err, filelock.ErrLocked) {
		pid, _, _ := filelock.Holder(name)
		return nil, &BusyError{PID: pid}
	}
	if err != nil {
		return nil, err
	}
	return &lock{l: l}, nil
}

func (l *lock) unlock() {
	if l != nil {
		l.l.Unlock()
	}
}

// Lock is the project's transaction lock held by a caller that recovers under it and
// then runs a transaction (Engine.Lock), so recovery runs once, under the same lock.
type Lock struct {
	dir string
	l   *lock
}

// LockProject takes the project's transaction lock without waiting (*BusyError when
// another relay process holds it).
func LockProject(projectDir string) (*Lock, error) {
	l, err := tryLock(projectDir)
	if err != nil {
		return nil, err
	}
	return &Lock{dir: projectDir, l: l}, nil
}

// Recover rolls back every transaction left pending in the project (see Recover).
func (l *Lock) Recover(key []byte) ([]Recovered, error) { return recoverLocked(l.dir, key) }

// Unlock releases the lock.
func (l *Lock) Unlock() { l.l.unlock() }
