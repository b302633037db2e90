package sqlite

import (
	"os"
	"path/filepath"
	"testing"

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
