package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestParseThreadFile(t *testing.T) {
	id := "0b7a1c52-2a64-4b8e-9c1d-5e6f7a8b9c0d"
	for in, ok := range map[string]bool{
		id: true, id + "\n": true,
		strings.ToUpper(id): true, id + "\n\n": false, " " + id: false, id + "x": false,
		"../../etc/passwd": false, "": false, "{" + id[1:] + "}": false,
		"0b7a1c522a644b8e9c1d5e6f7a8b9c0d": false, "urn:uuid:" + id: false,
	} {
		got, gotOK := ParseThreadFile([]byte(in))
		if gotOK != ok || ok && got != id {
			t.Errorf("ParseThreadFile(%q) = %q, %v; want ok=%v", in, got, gotOK, ok)
		}
	}
}

func FuzzParseThreadFile(f *testing.F) {
	f.Add([]byte("0b7a1c52-2a64-4b8e-9c1d-5e6f7a8b9c0d\n"))
	f.Add([]byte("../x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, ok := ParseThreadFile(b)
		if !ok {
			return
		}
		u, err := uuid.Parse(id)
		if err != nil || u.String() != id || strings.TrimSuffix(string(b), "\n") != id {
			t.Fatalf("accepted %q as %q", b, id)
		}
	})
}

func TestReadThreadFileRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("0b7a1c52-2a64-4b8e-9c1d-5e6f7a8b9c0d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".relaycode"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, ".relaycode", "thread")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if id, err := readThreadFile(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("a linked thread file was read: %q %v", id, err)
	}
	if id, err := readThreadFile(filepath.Join(t.TempDir(), ".relaycode", "thread")); err != nil || id != "" {
		t.Fatalf("a missing file: %q %v", id, err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("a", 1<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readThreadFile(big); err == nil {
		t.Fatal("a 1 MB thread file was accepted")
	}
}
