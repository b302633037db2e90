package txn

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"

	"github.com/relaydev/relay/internal/apply/patch"
	"github.com/relaydev/relay/internal/atomicfile"
)

// State is one transaction record: `.relaycode/{uuid}.pending.yml` while it
// runs, `.relaycode/{uuid}.yml` once committed. The first fields follow
// relaycode's StateFile so its records stay readable.
type State struct {
	UUID          string            `yaml:"uuid" json:"uuid"`
	ProjectID     string            `yaml:"projectId" json:"projectId"`
	CreatedAt     time.Time         `yaml:"createdAt" json:"createdAt"`
	GitCommitMsg  string            `yaml:"gitCommitMsg,omitempty" json:"gitCommitMsg,omitempty"`
	PromptSummary string            `yaml:"promptSummary,omitempty" json:"promptSummary,omitempty"`
	Reasoning     []string          `yaml:"reasoning" json:"reasoning"`
	Operations    []patch.Operation `yaml:"operations" json:"-"`
	// Snapshot maps every touched path to its content before the
	// transaction; nil means the file did not exist.
	Snapshot map[string]*string `yaml:"snapshot" json:"-"`
	// Modes holds the permission bits (octal) of snapshot files that existed.
	Modes map[string]string `yaml:"modes,omitempty" json:"-"`
	// CreatedDirs are directories that did not exist before, outermost first;
	// rollback removes them when they are empty.
	CreatedDirs []string `yaml:"createdDirs,omitempty" json:"-"`
	// After fingerprints each touched path once committed, so revert can tell
	// whether the files changed since.
	After    map[string]string `yaml:"after,omitempty" json:"-"`
	Files    []FileChange      `yaml:"files,omitempty" json:"files"`
	RevertOf string            `yaml:"revertOf,omitempty" json:"revertOf,omitempty"`
	PID      int               `yaml:"pid,omitempty" json:"-"`
	Approved bool              `yaml:"approved" json:"-"`
}

// FileChange is one file's net change in a transaction.
type FileChange struct {
	Path    string `yaml:"path" json:"path"`
	Action  string `yaml:"action" json:"action"` // new, edit, delete or rename
	From    string `yaml:"from,omitempty" json:"from,omitempty"`
	Added   int    `yaml:"added" json:"added"`
	Removed int    `yaml:"removed" json:"removed"`
}

const (
	pendingSuffix   = ".pending.yml"
	committedSuffix = ".yml"
)

func stateDir(projectDir string) string { return filepath.Join(projectDir, StateDir) }

func pendingPath(projectDir, id string) string {
	return filepath.Join(stateDir(projectDir), id+pendingSuffix)
}

func committedPath(projectDir, id string) string {
	return filepath.Join(stateDir(projectDir), id+committedSuffix)
}

// validUUID guards file names built from an LLM-supplied uuid.
func validUUID(id string) error {
	if _, err := uuid.Parse(id); err != nil || strings.ContainsAny(id, `/\{}:`) || len(id) != 36 {
		return fmt.Errorf("uuid %q is not a valid UUID (like 0b7c…-…, 36 characters)", id)
	}
	return nil
}

// writeFileSync replaces name with data crash-safely (fsync, rename, fsync of the
// directory): a record is either the old one or the new one after any crash.
func writeFileSync(name string, data []byte) error {
	return atomicfile.WriteFile(name, data, 0o600)
}

func syncDir(dir string) error { return atomicfile.SyncDir(dir) }

func (s *State) marshal() ([]byte, error) {
	v, err := s.yamlValue()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// yamlValue is what marshal encodes: the record itself or, when a text in it (any string)
// starts with white space (a space, a tab, a line break), a YAML tree of it where every
// such text is double-quoted. yaml.v3 writes such a text as a literal block that it then
// cannot read ("found a tab character where an indentation space is expected", or an
// indentation indicator it misplaces in a list), so the record of a change to such a file
// could not be read back to revert it. Such texts go through yaml.v3 as placeholders, which
// are then given back their text and quoted. Building the tree costs yaml.v3 an encode and
// a parse more, so records without such a text (most) are encoded as they are.
func (s *State) yamlValue() (any, error) {
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	held := map[string]string{}
	hold := func(v string) string {
		// (not UTF-8, yaml.v3 writes it as !!binary, which reads back)
		if v == "" || !strings.ContainsRune(" \t\r\n", rune(v[0])) || !utf8.ValidString(v) {
			return v
		}
		k := fmt.Sprintf("\x00relay-%x-%d", nonce, len(held))
		held[k] = v
		return k
	}
	cp := holdTexts(reflect.ValueOf(*s), hold).Interface().(State)
	if len(held) == 0 {
		return s, nil
	}
	var doc yaml.Node
	if err := doc.Encode(&cp); err != nil {
		return nil, err
	}
	restoreHeld(&doc, held)
	return &doc, nil
}

// holdTexts returns a copy of v with every string in it replaced by hold's answer: every
// field, element, map key and value, so a text field added to the record later is covered.
func holdTexts(v reflect.Value, hold func(string) string) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		if h := hold(v.String()); h != v.String() {
			n := reflect.New(v.Type()).Elem()
			n.SetString(h)
			return n
		}
	case reflect.Pointer:
		if !v.IsNil() {
			n := reflect.New(v.Type().Elem())
			n.Elem().Set(holdTexts(v.Elem(), hold))
			return n
		}
	case reflect.Slice:
		if !v.IsNil() {
			n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			for i := range v.Len() {
				n.Index(i).Set(holdTexts(v.Index(i), hold))
			}
			return n
		}
	case reflect.Map:
		if !v.IsNil() {
			n := reflect.MakeMapWithSize(v.Type(), v.Len())
			for it := v.MapRange(); it.Next(); {
				n.SetMapIndex(holdTexts(it.Key(), hold), holdTexts(it.Value(), hold))
			}
			return n
		}
	case reflect.Struct:
		n := reflect.New(v.Type()).Elem()
		n.Set(v) // unexported fields (a time's) as they are
		for i := range n.NumField() {
			if f := n.Field(i); f.CanSet() {
				f.Set(holdTexts(f, hold))
			}
		}
		return n
	}
	return v
}

func restoreHeld(n *yaml.Node, held map[string]string) {
	if v, ok := held[n.Value]; ok && n.Kind == yaml.ScalarNode {
		n.Value, n.Style = v, yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		restoreHeld(c, held)
	}
}

// maxRecordBytes bounds a record read from .relaycode/: it holds whole-file
// snapshots, but a clone could ship a record as large as the disk.
const maxRecordBytes = 1 << 30

func readState(name string) (*State, error) {
	b, err := readRecordFile(name)
	if err != nil {
		return nil, err
	}
	s, err := unmarshalState(b)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if err := s.validate(recordID(name)); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return s, nil
}

// recordID is the uuid a record's file name carries.
func recordID(name string) string {
	base := filepath.Base(name)
	if id, ok := strings.CutSuffix(base, pendingSuffix); ok {
		return id
	}
	return strings.TrimSuffix(base, committedSuffix)
}

// readRecordFile reads a record that must be a regular file (not a symlink
// to something else on the machine) of bounded size.
func readRecordFile(name string) ([]byte, error) {
	fi, err := os.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (relay writes its records as plain files)", name)
	}
	if fi.Size() > maxRecordBytes {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit for a record", name, fi.Size(), maxRecordBytes)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRecordBytes {
		return nil, fmt.Errorf("%s is over the %d-byte limit for a record", name, maxRecordBytes)
	}
	return b, nil
}

func unmarshalState(b []byte) (*State, error) {
	s := &State{}
	if err := yaml.Unmarshal(b, s); err != nil {
		legacy, lerr := unmarshalLegacy(b)
		if lerr != nil {
			return nil, err
		}
		s = legacy
	}
	if s.UUID == "" {
		return nil, errors.New("no uuid in the record")
	}
	return s, nil
}

// validate checks a record read from disk as strictly as an LLM answer: its
// uuid is the one in its file name, every path passes the answer path rules,
// and modes are plain permission bits.
func (s *State) validate(fileID string) error {
	if err := validUUID(s.UUID); err != nil {
		return fmt.Errorf("its uuid field: %w", err)
	}
	if !strings.EqualFold(s.UUID, fileID) {
		return fmt.Errorf("its uuid field %q is not the uuid in its file name %q", s.UUID, fileID)
	}
	if s.RevertOf != "" && validUUID(s.RevertOf) != nil {
		return fmt.Errorf("its revertOf field %q is not a uuid", s.RevertOf)
	}
	checkPath := func(field, p string) error {
		clean, err := CleanPath(p)
		if err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		if clean != p {
			return fmt.Errorf("%s: path %q is not in clean form (%q)", field, p, clean)
		}
		return nil
	}
	for p := range s.Snapshot {
		if err := checkPath("snapshot", p); err != nil {
			return err
		}
	}
	for p, m := range s.Modes {
		if err := checkPath("modes", p); err != nil {
			return err
		}
		if _, err := parseMode(m); err != nil {
			return fmt.Errorf("modes: %s: %w", p, err)
		}
	}
	for _, d := range s.CreatedDirs {
		if err := checkPath("createdDirs", d); err != nil {
			return err
		}
	}
	for p := range s.After {
		if err := checkPath("after", p); err != nil {
			return err
		}
	}
	for _, op := range s.Operations {
		for _, p := range []string{op.Path, op.From, op.To} {
			if p == "" {
				continue
			}
			if _, err := CleanPath(p); err != nil {
				return fmt.Errorf("operations: %w", err)
			}
		}
	}
	for _, f := range s.Files {
		for _, p := range []string{f.Path, f.From} {
			if p == "" {
				continue
			}
			if _, err := CleanPath(p); err != nil {
				return fmt.Errorf("files: %w", err)
			}
		}
	}
	return nil
}

// parseMode accepts permission bits only (like 0644 or 0755): never setuid,
// setgid, sticky or file-type bits.
func parseMode(m string) (fs.FileMode, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(m), 8, 32)
	if err != nil {
		return 0, fmt.Errorf("mode %q is not an octal number", m)
	}
	if n&^0o777 != 0 {
		return 0, fmt.Errorf("mode %q has bits other than permissions (setuid, setgid, sticky or a file type)", m)
	}
	return fs.FileMode(n), nil
}

// mode returns the recorded permission bits of a snapshot path (0644 when
// unknown, as for records written by relaycode).
func (s *State) mode(p string) fs.FileMode {
	if m, ok := s.Modes[p]; ok {
		if n, err := parseMode(m); err == nil {
			return n
		}
	}
	return 0o644
}

// fingerprint identifies a file's content and mode; "absent" for no file.
func fingerprint(content string, exists bool, mode fs.FileMode) string {
	if !exists {
		return "absent"
	}
	sum := sha256.Sum256([]byte(content))
	return fmt.Sprintf("%04o %s", mode.Perm(), hex.EncodeToString(sum[:]))
}

// Ignored is a committed record List left out: relay did not write it on
// this machine (no seal, a seal from another key, no key), or it does not
// read. A clone can carry committed records dated in the future to pose as
// the latest transaction: relay log, revert and git commit act only on
// records sealed here.
type Ignored struct {
	Record string // its path
	Why    string
}

// List returns the committed transactions of a project sealed with key,
// newest first, and the records it left out.
func List(projectDir string, key []byte) ([]*State, []Ignored, error) {
	entries, err := os.ReadDir(stateDir(projectDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", StateDir, err)
	}
	var out []*State
	var ignored []Ignored
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, committedSuffix) || strings.HasSuffix(name, pendingSuffix) ||
			validUUID(strings.TrimSuffix(name, committedSuffix)) != nil {
			continue // not a transaction record
		}
		full := filepath.Join(stateDir(projectDir), name)
		s, err := readCommitted(full, key)
		if err != nil {
			ignored = append(ignored, Ignored{Record: full, Why: err.Error()})
			continue
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b *State) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.UUID, b.UUID)
	})
	return out, ignored, nil
}

// readCommitted reads a committed record that must carry this machine's
// seal, and validates it like any record.
func readCommitted(name string, key []byte) (*State, error) {
	data, err := readRecordFile(name)
	if err != nil {
		return nil, err
	}
	body, err := unseal(key, data)
	if err != nil {
		return nil, err
	}
	s, err := unmarshalState(body)
	if err != nil {
		return nil, err
	}
	if err := s.validate(recordID(name)); err != nil {
		return nil, err
	}
	return s, nil
}

// Committed reports whether uuid has a committed record in the project that
// relay wrote on this machine (sealed with key).
func Committed(projectDir, id string, key []byte) bool {
	if validUUID(id) != nil {
		return false
	}
	_, err := readCommitted(committedPath(projectDir, id), key)
	return err == nil
}
