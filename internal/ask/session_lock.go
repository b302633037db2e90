package ask

import (
	"os"
	"path/filepath"

	"github.com/relaydev/relay/internal/filelock"
)

// lock takes the store's exclusive lock; parallel relay processes asking with the same
// store then serialise their read-modify-write.
func (s *SessionStore) lock() (func(), error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, err
	}
	l, err := filelock.Wait(filepath.Join(s.Dir, "sessions.lock"))
	if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}
