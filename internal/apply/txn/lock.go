package txn

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
type lock struct{ f *os.File }

// tryLock takes the lock without waiting, recording our pid in the file.
func tryLock(projectDir string) (*lock, error) {
	dir := filepath.Join(projectDir, StateDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", StateDir, err)
	}
	if err := checkStateDir(projectDir); err != nil {
		return nil, err
	}
	name := filepath.Join(dir, lockName)
	// Never through a link: a cloned relay.lock -> ~/.bashrc would be truncated.
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|openNoFollow, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := flock(f); err != nil {
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, &BusyError{PID: readPID(name)}
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &lock{f: f}, nil
}

func (l *lock) unlock() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = funlock(l.f)
	_ = l.f.Close()
	l.f = nil
}

func readPID(name string) int {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}
