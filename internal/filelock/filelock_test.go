package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestTryLockExcludesAndHolderNamesThePID(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	if pid, held, err := Holder(p); err != nil || held || pid != 0 {
		t.Fatalf("no file: Holder = %d, %v, %v", pid, held, err)
	}
	l, err := TryLock(p)
	if err != nil {
		t.Fatal(err)
	}
	// A second open in the same process conflicts too (OFD/flock semantics).
	if _, err := TryLock(p); !errors.Is(err, ErrLocked) {
		t.Fatalf("second TryLock: err = %v, want ErrLocked", err)
	}
	if pid, held, err := Holder(p); err != nil || !held || pid != os.Getpid() {
		t.Fatalf("held: Holder = %d, %v, %v; want our pid", pid, held, err)
	}
	l.Unlock()
	if pid, held, err := Holder(p); err != nil || held || pid != 0 {
		t.Fatalf("released: Holder = %d, %v, %v", pid, held, err)
	}
	l2, err := TryLock(p)
	if err != nil {
		t.Fatalf("relock after Unlock: %v", err)
	}
	l2.Unlock()
}

func TestWaitGetsTheLockWhenReleased(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	l, err := TryLock(p)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := Wait(p)
		if err == nil {
			l2.Unlock()
		}
		got <- err
	}()
	l.Unlock()
	if err := <-got; err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

func TestLockNeverFollowsALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "bashrc")
	if err := os.WriteFile(target, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "x.lock")
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if l, err := TryLock(link); err == nil {
		l.Unlock()
		t.Fatal("TryLock took a lock through a symbolic link")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me\n" {
		t.Fatalf("the link's target was changed: %q", b)
	}
}
