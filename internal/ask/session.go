package ask

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/relaydev/relay/internal/atomicfile"
)

// SessionEntry binds a user's label to a friend's native conversation.
type SessionEntry struct {
	Label     string    `json:"label"`
	Backend   string    `json:"backend"`
	Repo      string    `json:"repo"`
	NativeID  string    `json:"native_id"`
	Turns     int       `json:"turns"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SessionStore keeps labels in one JSON file under $RELAY_HOME/ask, written
// atomically and under a file lock so parallel asks do not lose entries.
type SessionStore struct {
	Dir string
}

// maxSessions caps the file; the least recently used labels go first.
const maxSessions = 200

func (s *SessionStore) path() string { return filepath.Join(s.Dir, "sessions.json") }

// ValidateLabel rejects labels that would be awkward to type or store.
func ValidateLabel(label string) error {
	if strings.TrimSpace(label) == "" {
		return errors.New("session label is empty")
	}
	if len(label) > 100 {
		return fmt.Errorf("session label is too long (%d bytes; max 100 bytes)", len(label))
	}
	for _, r := range label {
		if unicode.IsControl(r) {
			return errors.New("session label contains control characters")
		}
	}
	return nil
}

func (s *SessionStore) load() ([]SessionEntry, error) {
	b, err := os.ReadFile(s.path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var entries []SessionEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		// keep the damaged file for inspection and start afresh
		_ = os.Rename(s.path(), s.path()+".corrupt-"+time.Now().UTC().Format("20060102T150405"))
		return nil, nil
	}
	return entries, nil
}

// Lookup finds the entry for label and backend (nil when there is none).
func (s *SessionStore) Lookup(label, backendName string) (*SessionEntry, error) {
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	entries, err := s.load()
	if err != nil {
		return nil, err
	}
	for i := range entries {
		if entries[i].Label == label && entries[i].Backend == backendName {
			e := entries[i]
			return &e, nil
		}
	}
	return nil, nil
}

// List returns every entry, most recently used first.
func (s *SessionStore) List() ([]SessionEntry, error) {
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	entries, err := s.load()
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].UpdatedAt.After(entries[j].UpdatedAt) })
	return entries, err
}

// Save records one more turn of a conversation.
func (s *SessionStore) Save(e SessionEntry) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	entries, err := s.load()
	if err != nil {
		return err
	}
	found := false
	for i := range entries {
		if entries[i].Label == e.Label && entries[i].Backend == e.Backend {
			e.CreatedAt = entries[i].CreatedAt
			e.Turns = entries[i].Turns + 1
			entries[i] = e
			found = true
			break
		}
	}
	if !found {
		e.CreatedAt, e.Turns = e.UpdatedAt, 1
		entries = append(entries, e)
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].UpdatedAt.After(entries[j].UpdatedAt) })
	if len(entries) > maxSessions {
		entries = entries[:maxSessions]
	}
	b, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(s.path(), append(b, '\n'), 0o600)
}

// Delete forgets a label for every backend; it reports whether any existed.
func (s *SessionStore) Delete(label string) (bool, error) {
	unlock, err := s.lock()
	if err != nil {
		return false, err
	}
	defer unlock()
	entries, err := s.load()
	if err != nil {
		return false, err
	}
	kept := entries[:0]
	for _, e := range entries {
		if e.Label != label {
			kept = append(kept, e)
		}
	}
	if len(kept) == len(entries) {
		return false, nil
	}
	b, err := json.MarshalIndent(kept, "", "  ")
	if err != nil {
		return false, err
	}
	return true, atomicfile.WriteFile(s.path(), append(b, '\n'), 0o600)
}
