package txn

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Recovered is an orphaned transaction that was rolled back (or, when its
// committed record already existed, just tidied up).
type Recovered struct {
	UUID      string   `json:"uuid"`
	Restored  []string `json:"restored"`
	Committed bool     `json:"committed"`
	// SavedTo holds copies of the files as recovery found them, when any
	// differed from the snapshot (edits made after the crash are not lost).
	SavedTo string `json:"savedTo,omitempty"`
}

// Recover rolls back every transaction left pending by a relay process that
// is gone. It does nothing while another relay process holds the project
// lock (that transaction is alive). Every project command calls it first.
func Recover(projectDir string) ([]Recovered, error) {
	if !hasPending(projectDir) {
		return nil, nil
	}
	lk, err := tryLock(projectDir)
	if err != nil {
		var busy *BusyError
		if errors.As(err, &busy) {
			return nil, nil
		}
		return nil, err
	}
	defer lk.unlock()
	return recoverLocked(projectDir)
}

func hasPending(projectDir string) bool {
	entries, err := os.ReadDir(stateDir(projectDir))
	if err != nil {
		return false
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), pendingSuffix) || strings.Contains(e.Name(), ".tmp-") {
			return true
		}
	}
	return false
}

// recoverLocked does the work of Recover; the caller holds the lock.
func recoverLocked(projectDir string) ([]Recovered, error) {
	dir := stateDir(projectDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Recovered
	for _, e := range entries {
		name := e.Name()
		full := filepath.Join(dir, name)
		if strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-") {
			_ = os.Remove(full) // a record write cut short; the record it was for is handled below
			continue
		}
		if !strings.HasSuffix(name, pendingSuffix) {
			continue
		}
		id := strings.TrimSuffix(name, pendingSuffix)
		if validUUID(id) != nil {
			continue // relay never writes such a name
		}
		if Committed(projectDir, id) {
			// Crashed between writing the committed record and removing this one.
			if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return out, err
			}
			out = append(out, Recovered{UUID: id, Committed: true})
			continue
		}
		st, err := readState(full)
		if err != nil {
			return out, fmt.Errorf("cannot recover %s (restore its files by hand from the snapshot in it, then delete it): %w", full, err)
		}
		proj, err := openProject(projectDir)
		if err != nil {
			return out, err
		}
		saved, err := saveCurrent(proj, st, filepath.Join(dir, "undone", st.UUID))
		if err != nil {
			proj.close()
			return out, fmt.Errorf("recover transaction %s: keep the current files before restoring: %w", st.UUID, err)
		}
		restored, err := proj.restore(st)
		proj.close()
		if err != nil {
			return out, fmt.Errorf("recover transaction %s: %w", st.UUID, err)
		}
		if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return out, err
		}
		out = append(out, Recovered{UUID: st.UUID, Restored: nonNilStrings(restored), SavedTo: saved})
	}
	if len(out) > 0 {
		_ = syncDir(dir)
	}
	return out, nil
}

// saveCurrent copies every snapshot path whose current content differs from
// the snapshot into backup, before recovery overwrites it: between a crash
// and the next relay command a person may have edited those files. It returns
// backup, or "" when nothing differed.
func saveCurrent(proj *project, st *State, backup string) (string, error) {
	saved := false
	for name, before := range st.Snapshot {
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			continue // never write outside the backup directory, whatever the record says
		}
		cur, err := proj.read(name)
		if err != nil || !cur.exists || before != nil && *before == cur.content {
			continue
		}
		dst := filepath.Join(backup, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return "", err
		}
		if err := os.WriteFile(dst, []byte(cur.content), 0o600); err != nil {
			return "", err
		}
		saved = true
	}
	if !saved {
		return "", nil
	}
	return backup, nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
