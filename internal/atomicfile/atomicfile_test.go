package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	if err := WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if err != nil || string(b) != "new" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("content %q mode %v err %v; want \"new\" 0600", b, fi.Mode().Perm(), err)
	}
}

func TestFailedWriteLeavesOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	if err := WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(p, 0o644, Options{}, func(w io.Writer) error {
		if _, err := w.Write([]byte("half")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the fill's error", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("content after a failed write = %q, want the old one", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("%d entries left in the directory, want only the file (no temp files)", len(ents))
	}
}

func TestMkdirPerm(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a", "b", "f")
	if err := Write(p, 0o600, Options{MkdirPerm: 0o700, NoSync: true}, func(w io.Writer) error { _, err := w.Write([]byte("x")); return err }); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Dir(p)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v, %v; want 0700", fi.Mode().Perm(), err)
	}
}
