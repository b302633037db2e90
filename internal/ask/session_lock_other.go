//go:build !unix

package ask

import "sync"

var storeMu sync.Mutex

// lock serialises within this process only where flock is unavailable.
func (s *SessionStore) lock() (func(), error) {
	storeMu.Lock()
	return storeMu.Unlock, nil
}
