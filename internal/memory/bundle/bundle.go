// Package bundle exports a thread (state history, artifacts, events, capability calls) to a
// zip file and imports it back exactly: same refs, hashes, versions, timestamps and event
// order. Import treats the zip as hostile: only known entry names, no paths that escape,
// no links, bounded entry count and sizes, every hash checked, all in one transaction.
package bundle

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/capability"
	"github.com/relaydev/relay/internal/memory/capability/search"
)

// FormatID names the bundle format.
const FormatID = "com.relay.bundle.v1"

// Limits for import. Vars so tests can shrink them.
var (
	MaxEntries     = 200_000
	MaxEntryBytes  = int64(memory.MaxArtifactSize) + 1<<20
	MaxBundleBytes = int64(4) << 30 // uncompressed total
)

// DB is the store's SQL access (memory.SQLite implements it).
type DB interface {
	ReadDB() *sql.DB
	WriteTx(ctx context.Context, fn func(*sql.Tx) error) error
	Forget(threadID string)
}

// Manifest is manifest.json.
type Manifest struct {
	Format     string            `json:"format"`
	ThreadID   string            `json:"thread_id"`
	ExportedAt string            `json:"exported_at"`
	Relay      string            `json:"relay_version"`
	Counts     map[string]int    `json:"counts"`
	Files      map[string]string `json:"files"` // entry name → sha256 hex
}

type threadRow struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	CreatedAt     string `json:"created_at"`
	UpdatedAt     string `json:"updated_at"`
	Version       int    `json:"version"`
	ArtifactCount int    `json:"artifact_count"`
	EventCount    int    `json:"event_count"`
	CacheHits     int64  `json:"cache_hits"`
	TokensAvoided int64  `json:"tokens_avoided"`
}

type versionRow struct {
	Version   int             `json:"version"`
	Patch     json.RawMessage `json:"patch"`
	Author    string          `json:"author"`
	CreatedAt string          `json:"created_at"`
	EventID   int64           `json:"event_id"`
}

type snapshotRow struct {
	Version int             `json:"version"`
	Doc     json.RawMessage `json:"doc"`
}

type artifactRow struct {
	Ref              string `json:"ref"`
	Type             string `json:"type"`
	Mime             string `json:"mime"`
	Name             string `json:"name"`
	Size             int64  `json:"size"`
	Hash             string `json:"hash"`
	PreviewText      string `json:"preview_text"`
	PreviewLines     int    `json:"preview_lines"`
	PreviewTruncated bool   `json:"preview_truncated"`
	CreatedBy        string `json:"created_by"`
	Capability       string `json:"capability"`
	SourceRefs       string `json:"source_refs"`
	CreatedAt        string `json:"created_at"`
}

type eventRow struct {
	ID   int64           `json:"id"`
	Type string          `json:"type"`
	At   string          `json:"at"`
	Data json.RawMessage `json:"data"`
}

// Entry names.
const (
	fManifest  = "manifest.json"
	fThread    = "thread.json"
	fVersions  = "versions.jsonl"
	fSnapshots = "snapshots.jsonl"
	fArtifacts = "artifacts.jsonl"
	fEvents    = "events.jsonl"
	fCalls     = "cap_calls.jsonl"
	artDir     = "artifacts/"
)

// Export writes the thread as a zip to w from one consistent read snapshot.
func Export(ctx context.Context, db DB, threadID, relayVersion string, w io.Writer) (*Manifest, error) {
	tx, err := db.ReadDB().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	defer tx.Rollback()
	var th threadRow
	err = tx.QueryRowContext(ctx, `SELECT id, name, created_at, updated_at, version, artifact_count, event_count, cache_hits, tokens_avoided FROM threads WHERE id = ?`, threadID).
		Scan(&th.ID, &th.Name, &th.CreatedAt, &th.UpdatedAt, &th.Version, &th.ArtifactCount, &th.EventCount, &th.CacheHits, &th.TokensAvoided)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &memory.NotFoundError{What: "thread", ID: threadID}
	}
	if err != nil {
		return nil, fmt.Errorf("export: read thread: %w", err)
	}
	m := &Manifest{Format: FormatID, ThreadID: threadID, ExportedAt: time.Now().UTC().Format(time.RFC3339), Relay: relayVersion,
		Counts: map[string]int{}, Files: map[string]string{}}
	zw := zip.NewWriter(w)
	put := func(name string, b []byte) error {
		sum := sha256.Sum256(b)
		m.Files[name] = hex.EncodeToString(sum[:])
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Now().UTC()})
		if err != nil {
			return err
		}
		_, err = fw.Write(b)
		return err
	}
	thb, _ := json.MarshalIndent(th, "", "  ")
	if err := put(fThread, thb); err != nil {
		return nil, err
	}

	jsonl := func(name, q string, scan func(*sql.Rows) (any, error)) error {
		rows, err := tx.QueryContext(ctx, q, threadID)
		if err != nil {
			return fmt.Errorf("export %s: %w", name, err)
		}
		defer rows.Close()
		var buf bytes.Buffer
		n := 0
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				return fmt.Errorf("export %s: %w", name, err)
			}
			b, _ := json.Marshal(v)
			buf.Write(b)
			buf.WriteByte('\n')
			n++
		}
		if err := rows.Err(); err != nil {
			return err
		}
		m.Counts[strings.TrimSuffix(name, ".jsonl")] = n
		return put(name, buf.Bytes())
	}
	if err := jsonl(fVersions, `SELECT version, patch, author, created_at, event_id FROM state_versions WHERE thread_id = ? ORDER BY version`, func(r *sql.Rows) (any, error) {
		var v versionRow
		var p []byte
		err := r.Scan(&v.Version, &p, &v.Author, &v.CreatedAt, &v.EventID)
		v.Patch = p
		return v, err
	}); err != nil {
		return nil, err
	}
	if err := jsonl(fSnapshots, `SELECT version, doc FROM state_snapshots WHERE thread_id = ? ORDER BY version`, func(r *sql.Rows) (any, error) {
		var s snapshotRow
		var d []byte
		err := r.Scan(&s.Version, &d)
		s.Doc = d
		return s, err
	}); err != nil {
		return nil, err
	}
	var arts []artifactRow
	if err := jsonl(fArtifacts, `SELECT ref, type, mime, name, size, hash, preview_text, preview_lines, preview_truncated, created_by, capability, source_refs, created_at FROM artifacts WHERE thread_id = ? ORDER BY ref`, func(r *sql.Rows) (any, error) {
		var a artifactRow
		err := r.Scan(&a.Ref, &a.Type, &a.Mime, &a.Name, &a.Size, &a.Hash, &a.PreviewText, &a.PreviewLines, &a.PreviewTruncated, &a.CreatedBy, &a.Capability, &a.SourceRefs, &a.CreatedAt)
		arts = append(arts, a)
		return a, err
	}); err != nil {
		return nil, err
	}
	if err := jsonl(fEvents, `SELECT id, type, at, data FROM events WHERE thread_id = ? ORDER BY id`, func(r *sql.Rows) (any, error) {
		var e eventRow
		var d []byte
		err := r.Scan(&e.ID, &e.Type, &e.At, &d)
		e.Data = d
		return e, err
	}); err != nil {
		return nil, err
	}
	calls, err := callsTx(ctx, tx, threadID)
	if err != nil {
		return nil, err
	}
	var cb bytes.Buffer
	for _, c := range calls {
		b, _ := json.Marshal(c)
		cb.Write(b)
		cb.WriteByte('\n')
	}
	m.Counts["cap_calls"] = len(calls)
	if err := put(fCalls, cb.Bytes()); err != nil {
		return nil, err
	}
	for _, a := range arts {
		var content []byte
		if err := tx.QueryRowContext(ctx, `SELECT content FROM artifact_content WHERE ref = ?`, a.Ref).Scan(&content); err != nil {
			return nil, fmt.Errorf("export artifact %s: %w", a.Ref, err)
		}
		if err := put(artDir+a.Ref, content); err != nil {
			return nil, err
		}
	}
	mb, _ := json.MarshalIndent(m, "", "  ")
	fw, err := zw.Create(fManifest)
	if err != nil {
		return nil, err
	}
	if _, err := fw.Write(mb); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("export: write zip: %w", err)
	}
	return m, nil
}

func callsTx(ctx context.Context, tx *sql.Tx, threadID string) ([]capability.Call, error) {
	rows, err := tx.QueryContext(ctx, `SELECT capability, args, artifact_ref, cache_hit, preview_bytes, duration_ms, at FROM cap_calls WHERE thread_id = ? ORDER BY id`, threadID)
	if err != nil {
		return nil, fmt.Errorf("export capability calls: %w", err)
	}
	defer rows.Close()
	var out []capability.Call
	for rows.Next() {
		c := capability.Call{ThreadID: threadID}
		var args []byte
		var at int64
		if err := rows.Scan(&c.Capability, &args, &c.ArtifactRef, &c.CacheHit, &c.PreviewBytes, &c.DurationMS, &at); err != nil {
			return nil, err
		}
		c.Args, c.At = args, time.Unix(0, at).UTC()
		out = append(out, c)
	}
	return out, rows.Err()
}

// ImportOptions control Import.
type ImportOptions struct {
	// AsNew imports under a fresh thread id and fresh artifact refs.
	AsNew bool
}

// ImportResult describes an import.
type ImportResult struct {
	ThreadID     string            `json:"thread_id"`
	FromThreadID string            `json:"from_thread_id"`
	AsNew        bool              `json:"as_new"`
	Versions     int               `json:"versions"`
	Artifacts    int               `json:"artifacts"`
	Events       int               `json:"events"`
	RefMap       map[string]string `json:"ref_map,omitempty"`
}

// UnsafeError is a bundle refused for safety; nothing was written.
type UnsafeError struct{ Reason string }

func (e *UnsafeError) Error() string { return "refusing bundle: " + e.Reason }

// ExistsError is an import of a thread id that is already in the store.
type ExistsError struct{ ThreadID string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("thread %s already exists; import a copy with --as-new", e.ThreadID)
}

func unsafe(format string, a ...any) error { return &UnsafeError{Reason: fmt.Sprintf(format, a...)} }

// checkName accepts only the bundle's own entry names.
func checkName(f *zip.File) error {
	n := f.Name
	if !f.Mode().IsRegular() {
		return unsafe("entry %q is not a regular file (links and devices are refused)", n)
	}
	if strings.Contains(n, `\`) || path.IsAbs(n) || filepath.IsAbs(n) || !filepath.IsLocal(n) || path.Clean(n) != n {
		return unsafe("entry %q has an unsafe path (absolute, .. or not clean)", n)
	}
	switch n {
	case fManifest, fThread, fVersions, fSnapshots, fArtifacts, fEvents, fCalls:
		return nil
	}
	if ref, ok := strings.CutPrefix(n, artDir); ok && memory.ValidRef(ref) {
		return nil
	}
	return unsafe("unexpected entry %q", n)
}

// readEntries validates every entry and reads them, enforcing size limits on the real bytes.
func readEntries(zr *zip.Reader) (map[string][]byte, error) {
	if len(zr.File) > MaxEntries {
		return nil, unsafe("%d entries, the limit is %d", len(zr.File), MaxEntries)
	}
	files := map[string][]byte{}
	var total int64
	for _, f := range zr.File {
		if f.Name == artDir && f.Mode().IsDir() {
			continue // a directory entry some zip tools add
		}
		if err := checkName(f); err != nil {
			return nil, err
		}
		if _, dup := files[f.Name]; dup {
			return nil, unsafe("duplicate entry %q", f.Name)
		}
		if f.UncompressedSize64 > uint64(MaxEntryBytes) {
			return nil, unsafe("entry %q is %d bytes, the limit is %d", f.Name, f.UncompressedSize64, MaxEntryBytes)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, unsafe("entry %q: %v", f.Name, err)
		}
		// The header's size can lie (zip bombs): count the bytes actually inflated.
		b, err := io.ReadAll(io.LimitReader(rc, MaxEntryBytes+1))
		rc.Close()
		if err != nil {
			return nil, unsafe("entry %q: %v", f.Name, err)
		}
		if int64(len(b)) > MaxEntryBytes {
			return nil, unsafe("entry %q inflates past the %d-byte limit", f.Name, MaxEntryBytes)
		}
		total += int64(len(b))
		if total > MaxBundleBytes {
			return nil, unsafe("bundle inflates past the %d-byte limit", MaxBundleBytes)
		}
		files[f.Name] = b
	}
	return files, nil
}

func decodeLines[T any](b []byte, name string) ([]T, error) {
	var out []T
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			return nil, unsafe("%s: %v", name, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// Import reads a bundle from r and writes it into the store in one transaction.
func Import(ctx context.Context, db DB, r io.ReaderAt, size int64, opt ImportOptions) (*ImportResult, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, unsafe("not a zip file: %v", err)
	}
	files, err := readEntries(zr)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if b, ok := files[fManifest]; !ok {
		return nil, unsafe("no manifest.json; is this a relay export?")
	} else if err := json.Unmarshal(b, &m); err != nil || m.Format != FormatID {
		return nil, unsafe("manifest.json is not a %s manifest", FormatID)
	}
	for name, b := range files {
		if name == fManifest {
			continue
		}
		want, ok := m.Files[name]
		sum := sha256.Sum256(b)
		if !ok || want != hex.EncodeToString(sum[:]) {
			return nil, unsafe("entry %q does not match the manifest's sha256", name)
		}
	}
	for name := range m.Files {
		if _, ok := files[name]; !ok {
			return nil, unsafe("entry %q listed in the manifest is missing", name)
		}
	}
	var th threadRow
	if err := json.Unmarshal(files[fThread], &th); err != nil {
		return nil, unsafe("thread.json: %v", err)
	}
	if _, err := uuid.Parse(th.ID); err != nil || th.ID != m.ThreadID {
		return nil, unsafe("thread.json id %q does not match the manifest", th.ID)
	}
	versions, err := decodeLines[versionRow](files[fVersions], fVersions)
	if err != nil {
		return nil, err
	}
	snaps, err := decodeLines[snapshotRow](files[fSnapshots], fSnapshots)
	if err != nil {
		return nil, err
	}
	arts, err := decodeLines[artifactRow](files[fArtifacts], fArtifacts)
	if err != nil {
		return nil, err
	}
	events, err := decodeLines[eventRow](files[fEvents], fEvents)
	if err != nil {
		return nil, err
	}
	calls, err := decodeLines[capability.Call](files[fCalls], fCalls)
	if err != nil {
		return nil, err
	}
	if err := checkConsistency(th, versions, snaps, arts, files); err != nil {
		return nil, err
	}

	res := &ImportResult{ThreadID: th.ID, FromThreadID: th.ID, AsNew: opt.AsNew, Versions: len(versions), Artifacts: len(arts), Events: len(events)}
	// rewrite maps old identifiers to new ones for --as-new; refs and thread ids are unique
	// hex/UUID tokens, so replacing them textually in JSON cannot hit anything else.
	rewrite := func(b []byte) []byte { return b }
	if opt.AsNew {
		res.ThreadID = uuid.NewString()
		res.RefMap = map[string]string{}
		pairs := []string{th.ID, res.ThreadID}
		now := time.Now()
		for i, a := range arts {
			nr := memory.NewRef(now.Add(time.Duration(i) * time.Millisecond))
			res.RefMap[a.Ref] = nr
			pairs = append(pairs, a.Ref, nr)
		}
		rp := strings.NewReplacer(pairs...)
		rewrite = func(b []byte) []byte { return []byte(rp.Replace(string(b))) }
	}

	err = db.WriteTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM threads WHERE id = ?`, res.ThreadID).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return &ExistsError{ThreadID: res.ThreadID}
		}
		// Events get new ids (ids are global); remember the mapping for state_versions.event_id.
		evMap := map[int64]int64{}
		var lastID int64
		for _, e := range events {
			var id int64
			if err := tx.QueryRowContext(ctx, `INSERT INTO events(thread_id, type, at, data) VALUES (?,?,?,?) RETURNING id`,
				res.ThreadID, e.Type, e.At, rewrite(e.Data)).Scan(&id); err != nil {
				return fmt.Errorf("import event: %w", err)
			}
			evMap[e.ID], lastID = id, id
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO threads(id, name, created_at, updated_at, version, artifact_count, event_count, last_event_id, cache_hits, tokens_avoided) VALUES (?,?,?,?,?,?,?,?,?,?)`,
			res.ThreadID, th.Name, th.CreatedAt, th.UpdatedAt, th.Version, len(arts), len(events), lastID, th.CacheHits, th.TokensAvoided); err != nil {
			return fmt.Errorf("import thread: %w", err)
		}
		for _, v := range versions {
			if _, err := tx.ExecContext(ctx, `INSERT INTO state_versions(thread_id, version, patch, author, created_at, event_id) VALUES (?,?,?,?,?,?)`,
				res.ThreadID, v.Version, rewrite(v.Patch), v.Author, v.CreatedAt, evMap[v.EventID]); err != nil {
				return fmt.Errorf("import state v%d: %w", v.Version, err)
			}
		}
		for _, s := range snaps {
			if _, err := tx.ExecContext(ctx, `INSERT INTO state_snapshots(thread_id, version, doc) VALUES (?,?,?)`, res.ThreadID, s.Version, rewrite(s.Doc)); err != nil {
				return fmt.Errorf("import state snapshot v%d: %w", s.Version, err)
			}
		}
		for _, a := range arts {
			content := files[artDir+a.Ref]
			ref := a.Ref
			if opt.AsNew {
				ref = res.RefMap[a.Ref]
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO artifacts(ref, thread_id, type, mime, name, size, hash, preview_text, preview_lines, preview_truncated, created_by, capability, source_refs, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
				ref, res.ThreadID, a.Type, a.Mime, a.Name, a.Size, a.Hash, a.PreviewText, a.PreviewLines, a.PreviewTruncated, a.CreatedBy, a.Capability, string(rewrite([]byte(a.SourceRefs))), a.CreatedAt)
			if err != nil {
				if strings.Contains(err.Error(), "UNIQUE") {
					return &ExistsError{ThreadID: res.ThreadID + " (artifact ref " + ref + " is already in the store)"}
				}
				return fmt.Errorf("import artifact %s: %w", ref, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO artifact_content(ref, content) VALUES (?,?)`, ref, content); err != nil {
				return fmt.Errorf("import artifact %s: %w", ref, err)
			}
			if a.Capability != search.Name {
				if err := search.Index(ctx, tx, res.ThreadID, ref, a.Type, a.Name, content); err != nil {
					return err
				}
			}
		}
		for _, c := range calls {
			c.ThreadID = res.ThreadID
			c.ArtifactRef = string(rewrite([]byte(c.ArtifactRef)))
			c.Args = rewrite(c.Args)
			if err := capability.InsertCall(ctx, tx, c); err != nil {
				return fmt.Errorf("import capability call: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	db.Forget(res.ThreadID)
	return res, nil
}

func checkConsistency(th threadRow, versions []versionRow, snaps []snapshotRow, arts []artifactRow, files map[string][]byte) error {
	if len(versions) == 0 || len(snaps) == 0 {
		return unsafe("the bundle has no state history")
	}
	for i, v := range versions {
		if v.Version != i+1 {
			return unsafe("state history has a gap at v%d", i+1)
		}
		if !json.Valid(v.Patch) {
			return unsafe("state v%d patch is not JSON", v.Version)
		}
	}
	if versions[len(versions)-1].Version != th.Version {
		return unsafe("thread is at v%d but the history ends at v%d", th.Version, len(versions))
	}
	sort.Slice(snaps, func(i, j int) bool { return snaps[i].Version < snaps[j].Version })
	if snaps[0].Version != 1 {
		return unsafe("the first state snapshot must be v1")
	}
	for _, s := range snaps {
		if s.Version > th.Version || !json.Valid(s.Doc) {
			return unsafe("state snapshot v%d is invalid", s.Version)
		}
	}
	seen := map[string]bool{}
	for _, a := range arts {
		if !memory.ValidRef(a.Ref) || seen[a.Ref] {
			return unsafe("artifact ref %q is invalid or repeated", a.Ref)
		}
		seen[a.Ref] = true
		if !memory.ValidType(a.Type) {
			return unsafe("artifact %s has unknown type %q", a.Ref, a.Type)
		}
		content, ok := files[artDir+a.Ref]
		if !ok {
			return unsafe("artifact %s has no content entry", a.Ref)
		}
		sum := sha256.Sum256(content)
		if hex.EncodeToString(sum[:]) != a.Hash || int64(len(content)) != a.Size {
			return unsafe("artifact %s content does not match its sha256/size", a.Ref)
		}
	}
	for name := range files {
		if ref, ok := strings.CutPrefix(name, artDir); ok && !seen[ref] {
			return unsafe("entry %q belongs to no artifact", name)
		}
	}
	return nil
}
