package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProjectThreadFile(t *testing.T) {
	dir := t.TempDir()
	if id, err := ReadProjectThread(dir); err != nil || id != "" {
		t.Fatalf("no file: %q, %v; want none", id, err)
	}
	const id = "550e8400-e29b-41d4-a716-446655440000"
	if err := WriteProjectThread(dir, id); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadProjectThread(dir); err != nil || got != id {
		t.Fatalf("read back %q, %v", got, err)
	}
	for name, content := range map[string]string{
		"not a uuid":     "my-thread\n",
		"upper case":     strings.ToUpper(id) + "\n",
		"two ids":        id + "\n" + id + "\n",
		"too long":       id + strings.Repeat(" ", 300),
		"terminal codes": "\x1b[31m" + id,
	} {
		if err := os.WriteFile(filepath.Join(dir, projectThreadFile), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadProjectThread(dir); err == nil {
			t.Errorf("%s: accepted %q", name, got)
		}
	}
	// A symlink out of the project is refused by the root, never followed.
	outside := filepath.Join(t.TempDir(), "thread")
	if err := os.WriteFile(outside, []byte(id), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, projectThreadFile))
	if err := os.Symlink(outside, filepath.Join(dir, projectThreadFile)); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadProjectThread(dir); err == nil {
		t.Errorf("symlink out of the project: accepted %q", got)
	}
	if err := WriteProjectThread(dir, "nope"); err == nil {
		t.Error("wrote a non-UUID")
	}
	if err := WriteProjectThread(dir, ""); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadProjectThread(dir); err != nil || got != "" {
		t.Fatalf("after clear: %q, %v", got, err)
	}
}
