package txn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/run"
)

// Recovered is an orphaned transaction that was rolled back (or, when its
// committed record already existed, just tidied up), or a pending record
// recovery refused to act on (Refused says why; the record is left as is).
type Recovered struct {
	UUID      string   `json:"uuid"`
	Restored  []string `json:"restored"`
	Committed bool     `json:"committed"`
	// SavedTo holds copies of the files as recovery found them, when any
	// differed from the snapshot (edits made after the crash are not lost).
	SavedTo string `json:"savedTo,omitempty"`
	// Refused is why the record at Record was not used; "" when it was.
	Refused string `json:"refused,omitempty"`
	Record  string `json:"record,omitempty"`
}

// RecordError is a pending record relay wrote but cannot use (damaged, or
// failing the checks every record gets). Recovery stops there, so no other
// transaction runs over a tree that may be half-changed.
type RecordError struct {
	Record string
	Err    error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("cannot recover %s: %v", e.Record, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// Recover rolls back every transaction left pending by a relay process that
// is gone. It does nothing while another relay process holds the project
// lock (that transaction is alive). Every project command calls it first.
// key is this machine's record key (nil when there is none): records not
// sealed with it are refused, never acted on.
func Recover(projectDir string, key []byte) ([]Recovered, error) {
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
	return recoverLocked(projectDir, key)
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

// PendingRecords lists the pending records in a project and, for each, why
// recovery would refuse it ("" when it would use it). It changes nothing.
func PendingRecords(projectDir string, key []byte) []Recovered {
	entries, err := os.ReadDir(stateDir(projectDir))
	if err != nil {
		return nil
	}
	tracked := trackedRecords(projectDir)
	var out []Recovered
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), pendingSuffix)
		if !ok || validUUID(id) != nil {
			continue
		}
		full := filepath.Join(stateDir(projectDir), e.Name())
		r := Recovered{UUID: id, Record: full}
		if _, reason := trustRecord(full, e.Name(), key, tracked); reason != "" {
			r.Refused = reason
		} else if _, err := readState(full); err != nil {
			r.Refused = err.Error()
		}
		out = append(out, r)
	}
	return out
}

// trackedRecords is the set of file names in .relaycode/ that git tracks:
// they came with the repository, so relay did not write them here.
func trackedRecords(projectDir string) map[string]bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := gitRunner(ctx, projectDir, nil, "ls-files", "-z", "--", StateDir)
	if err != nil {
		return nil // not a git work tree (or no git): the seal still decides
	}
	set := map[string]bool{}
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			set[filepath.Base(p)] = true
		}
	}
	return set
}

// trustRecord decides whether a pending record is one this machine's relay
// wrote. It returns the record without its seal, or why it is refused.
func trustRecord(full, name string, key []byte, tracked map[string]bool) ([]byte, string) {
	if tracked[name] {
		return nil, "it is tracked by git, so it came with the repository; relay only recovers records it wrote on this machine"
	}
	data, err := readRecordFile(full)
	if err != nil {
		return nil, err.Error()
	}
	body, err := unseal(key, data)
	if err != nil {
		return nil, err.Error()
	}
	return body, ""
}

// recoverLocked does the work of Recover; the caller holds the lock.
func recoverLocked(projectDir string, key []byte) ([]Recovered, error) {
	dir := stateDir(projectDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var tracked map[string]bool
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), pendingSuffix) {
			tracked = trackedRecords(projectDir)
			break
		}
	}
	var out []Recovered
	for _, e := range entries {
		name := e.Name()
		full := filepath.Join(dir, name)
		if strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-") && e.Type().IsRegular() && !tracked[name] {
			_ = os.Remove(full) // a record write cut short; the record it was for is handled below
			continue
		}
		id, ok := strings.CutSuffix(name, pendingSuffix)
		if !ok || validUUID(id) != nil {
			continue // relay never writes such a name
		}
		body, refused := trustRecord(full, name, key, tracked)
		if refused != "" {
			out = append(out, Recovered{UUID: id, Record: full, Refused: refused})
			continue
		}
		if Committed(projectDir, id, key) {
			// Crashed between writing the committed record and removing this one.
			if err := removeRecord(projectDir, id); err != nil {
				return out, err
			}
			out = append(out, Recovered{UUID: id, Committed: true})
			continue
		}
		st, err := unmarshalState(body)
		if err == nil {
			err = st.validate(id)
		}
		if err != nil {
			return out, &RecordError{Record: full, Err: err}
		}
		if err := stopHook(projectDir, id, key); err != nil {
			return out, &RecordError{Record: full, Err: err}
		}
		proj, err := openProject(projectDir)
		if err != nil {
			return out, err
		}
		saved, err := saveCurrent(proj, st, id)
		if err != nil {
			proj.close()
			return out, fmt.Errorf("recover transaction %s: keep the current files before restoring: %w", id, err)
		}
		restored, err := proj.restore(st)
		proj.close()
		if err != nil {
			return out, fmt.Errorf("recover transaction %s: %w", id, err)
		}
		if err := removeRecord(projectDir, id); err != nil {
			return out, err
		}
		out = append(out, Recovered{UUID: id, Restored: nonNilStrings(restored), SavedTo: saved})
	}
	if len(out) > 0 {
		_ = syncDir(dir)
	}
	return out, nil
}

// removeRecord removes a pending record and its hook file.
func removeRecord(projectDir, id string) error {
	if err := os.Remove(pendingPath(projectDir, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Remove(hookPath(projectDir, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

const hookSuffix = ".hook"

// hookPath records the process group of the hook a pending transaction is
// running (post-command, linter), so recovery can stop it first.
func hookPath(projectDir, id string) string {
	return filepath.Join(stateDir(projectDir), id+hookSuffix)
}

// stopHook kills the process group a crashed transaction's hook left
// behind and waits until it is gone, so nothing writes after the restore.
// The group is data like any record: it must carry this machine's seal, and
// run.KillGroup acts only if the group's start identity still matches.
func stopHook(projectDir, id string, key []byte) error {
	name := hookPath(projectDir, id)
	data, err := readRecordFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	body, err := unseal(key, data)
	if err != nil {
		return fmt.Errorf("its hook file %s: %w", name, err)
	}
	spec, ok := strings.CutPrefix(string(bytes.TrimSpace(body)), "group: ")
	if !ok {
		return fmt.Errorf("its hook file %s is not a process group record", name)
	}
	g, err := run.ParseGroup(spec)
	if err != nil {
		if runtime.GOOS != "linux" {
			return nil // start identities cannot be read here: nothing proven, nothing killed
		}
		return fmt.Errorf("its hook file %s: %w", name, err)
	}
	if err := run.KillGroup(g); err != nil {
		return fmt.Errorf("stop the hook the crashed transaction was running: %w", err)
	}
	return nil
}

// saveCurrent copies every snapshot path whose current content differs from
// the snapshot into .relaycode/undone/<id>/, before recovery overwrites it:
// between a crash and the next relay command a person may have edited those
// files. It returns that directory, or "" when nothing differed. Every write
// goes through an os.Root of .relaycode, so no link leads it elsewhere.
func saveCurrent(proj *project, st *State, id string) (string, error) {
	var sroot *os.Root
	defer func() {
		if sroot != nil {
			sroot.Close()
		}
	}()
	backup := filepath.Join("undone", id)
	for name, before := range st.Snapshot {
		cur, err := proj.read(name)
		if err != nil || !cur.exists || before != nil && *before == cur.content {
			continue
		}
		if sroot == nil {
			if sroot, err = openStateRoot(proj.dir); err != nil {
				return "", err
			}
		}
		dst := filepath.Join(backup, filepath.FromSlash(name))
		if err := sroot.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return "", err
		}
		if err := sroot.WriteFile(dst, []byte(cur.content), 0o600); err != nil {
			return "", err
		}
	}
	if sroot == nil {
		return "", nil
	}
	return filepath.Join(stateDir(proj.dir), backup), nil
}

// openStateRoot opens .relaycode as an os.Root; it must be a real
// directory, not a link a clone planted to send relay's records elsewhere.
func openStateRoot(projectDir string) (*os.Root, error) {
	if err := checkStateDir(projectDir); err != nil {
		return nil, err
	}
	return os.OpenRoot(stateDir(projectDir))
}

// CheckStateDir refuses a .relaycode that exists and is not a plain
// directory (a clone can make it a link to .git or to the home directory).
func CheckStateDir(projectDir string) error {
	if _, err := os.Lstat(stateDir(projectDir)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return checkStateDir(projectDir)
}

// checkStateDir refuses a .relaycode that is not a plain directory.
func checkStateDir(projectDir string) error {
	fi, err := os.Lstat(stateDir(projectDir))
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (it is a %s); relay keeps its records in a plain directory there: move it aside and run relay again", stateDir(projectDir), fileKind(fi.Mode()))
	}
	return nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m.IsRegular():
		return "file"
	default:
		return "special file"
	}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
