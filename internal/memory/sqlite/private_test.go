package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/relayhome"
)

// The store holds every agent's state: relay.db and its -wal and -shm are
// readable by their owner only, also when an older relay left them 0644.
func TestStoreFilesArePrivate(t *testing.T) {
	for _, existing := range []bool{false, true} {
		home := t.TempDir()
		if existing {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if err := os.WriteFile(filepath.Join(home, relayhome.DBFile+suffix), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		s, err := OpenSQLite(home, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateThread(t.Context(), memory.CreateThreadParams{Name: "private"}); err != nil {
			t.Fatal(err)
		}
		for _, suffix := range []string{"", "-wal", "-shm"} {
			fi, err := os.Stat(filepath.Join(home, relayhome.DBFile+suffix))
			if err != nil {
				t.Fatalf("existing=%v: %v", existing, err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("existing=%v: %s%s has mode %#o, want 0600", existing, relayhome.DBFile, suffix, fi.Mode().Perm())
			}
		}
		s.Close()
	}
}

// TestShortExprIsShort: the SQL form of a ref's short form (and the index on it) is the
// ref relay shows, for the ref lengths the memory package defines.
func TestShortExprIsShort(t *testing.T) {
	want := fmt.Sprintf("substr(ref, %d)", memory.RefLen-memory.ShortRefLen+1)
	if shortExpr != want || !strings.Contains(shortRefMigration, shortExpr) {
		t.Fatalf("shortExpr %q, the index %q; want %q for refs of %d and short refs of %d", shortExpr, shortRefMigration, want, memory.RefLen, memory.ShortRefLen)
	}
	s, err := OpenSQLite(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ref := memory.NewRef(time.Now())
	var got string
	if err := s.r.QueryRow(`SELECT `+strings.Replace(shortExpr, "ref", "?", 1), ref).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != memory.Short(ref) {
		t.Fatalf("%s of %s = %q, relay shows %q", shortExpr, ref, got, memory.Short(ref))
	}
}
