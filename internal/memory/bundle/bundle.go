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
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/relaydev/relay/internal/memory"
)

// FormatID names the bundle format.
const FormatID = "com.relay.bundle.v1"

// Limits for import. Vars so tests can shrink them.
var (
	MaxEntries     = 200_000
	MaxEntryBytes  = int64(memory.MaxArtifactSize) + 1<<20
	MaxBundleBytes = int64(1) << 30 // uncompressed total (CPU bound: contents stream, see inflate.go)
)

// DB is the store side of a bundle: whole threads as records (every memory.Store is one).
type DB = memory.Dumper

// Manifest is manifest.json.
type Manifest struct {
	Format     string            `json:"format"`
	ThreadID   string            `json:"thread_id"`
	ExportedAt string            `json:"exported_at"`
	Relay      string            `json:"relay_version"`
	Counts     map[string]int    `json:"counts"`
	Files      map[string]string `json:"files"` // entry name → sha256 hex
	// Sizes declares every entry's inflated size; import refuses an entry that
	// inflates to anything else. Bundles from before it have the zip's sizes only.
	Sizes map[string]int64 `json:"sizes,omitempty"`
}

// The bundle's JSON lines are the store's records.
type (
	threadRow   = memory.ThreadRecord
	versionRow  = memory.VersionRecord
	snapshotRow = memory.SnapshotRecord
	artifactRow = memory.ArtifactRecord
	eventRow    = memory.EventRecord
)

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
	var m *Manifest
	err := db.ExportThread(ctx, threadID, func(d *memory.ThreadDump, content memory.Content) error {
		var err error
		m, err = write(d, content, relayVersion, w)
		return err
	})
	return m, err
}

func write(d *memory.ThreadDump, content memory.Content, relayVersion string, w io.Writer) (*Manifest, error) {
	now := time.Now().UTC()
	m := &Manifest{Format: FormatID, ThreadID: d.Thread.ID, ExportedAt: now.Format(time.RFC3339), Relay: relayVersion,
		Counts: map[string]int{}, Files: map[string]string{}, Sizes: map[string]int64{}}
	zw := zip.NewWriter(w)
	put := func(name string, b []byte) error {
		sum := sha256.Sum256(b)
		m.Files[name] = hex.EncodeToString(sum[:])
		m.Sizes[name] = int64(len(b))
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: now})
		if err != nil {
			return err
		}
		_, err = fw.Write(b)
		return err
	}
	thb, _ := json.MarshalIndent(d.Thread, "", "  ")
	if err := put(fThread, thb); err != nil {
		return nil, err
	}
	if err := putLines(put, m, fVersions, d.Versions); err != nil {
		return nil, err
	}
	if err := putLines(put, m, fSnapshots, d.Snapshots); err != nil {
		return nil, err
	}
	if err := putLines(put, m, fArtifacts, d.Artifacts); err != nil {
		return nil, err
	}
	if err := putLines(put, m, fEvents, d.Events); err != nil {
		return nil, err
	}
	if err := putLines(put, m, fCalls, d.Calls); err != nil {
		return nil, err
	}
	// Bodies stream from the store into the zip, one at a time, never whole in memory.
	putStream := func(name string, r io.Reader) error {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: now})
		if err != nil {
			return err
		}
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(fw, h), r)
		if err != nil {
			return err
		}
		m.Files[name] = hex.EncodeToString(h.Sum(nil))
		m.Sizes[name] = n
		return nil
	}
	for _, a := range d.Artifacts {
		r, err := content(a.Ref)
		if err != nil {
			return nil, err
		}
		err = putStream(artDir+a.Ref, r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("export artifact %s: %w", a.Ref, err)
		}
	}
	mb, _ := json.MarshalIndent(m, "", "  ")
	fw, err := zw.CreateHeader(&zip.FileHeader{Name: fManifest, Method: zip.Deflate, Modified: now})
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

// putLines writes rows as one JSON document per line and counts them in the manifest.
func putLines[T any](put func(string, []byte) error, m *Manifest, name string, rows []T) error {
	var buf bytes.Buffer
	for _, r := range rows {
		b, _ := json.Marshal(r)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	m.Counts[strings.TrimSuffix(name, ".jsonl")] = len(rows)
	return put(name, buf.Bytes())
}

// ImportOptions control Import.
type ImportOptions struct {
	// AsNew imports under a fresh thread id and fresh artifact refs, named Name, or by
	// default the thread's name made unique ("demo (2)").
	AsNew bool
	Name  string
	// MaxArtifactBytes is the largest artifact the store takes (0: memory.MaxArtifactSize);
	// with a bucket, bundle entries may be that large.
	MaxArtifactBytes int64
}

// ImportResult describes an import.
type ImportResult struct {
	ThreadID     string            `json:"thread_id"`
	FromThreadID string            `json:"from_thread_id"`
	Name         string            `json:"name"`
	AsNew        bool              `json:"as_new"`
	Versions     int               `json:"versions"`
	Artifacts    int               `json:"artifacts"`
	Events       int               `json:"events"`
	RefMap       map[string]string `json:"ref_map,omitempty"`
}

// UnsafeError is a bundle refused for safety; nothing was written.
type UnsafeError struct{ Reason string }

func (e *UnsafeError) Error() string { return "refusing bundle: " + e.Reason }

// ExistsError is an import of a thread id or artifact ref that is already in the store.
type ExistsError = memory.ExistsError

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
	m, ents, err := openEntries(zr, opt.MaxArtifactBytes)
	if err != nil {
		return nil, err
	}
	files := ents.meta
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
	calls, err := decodeLines[memory.CapabilityCall](files[fCalls], fCalls)
	if err != nil {
		return nil, err
	}
	if err := checkConsistency(th, versions, snaps, arts, ents); err != nil {
		return nil, err
	}
	if err := validateContent(th, versions, snaps, arts, events); err != nil {
		return nil, err
	}
	if err := ents.verifyArtifacts(); err != nil {
		return nil, err
	}

	res := &ImportResult{ThreadID: th.ID, FromThreadID: th.ID, AsNew: opt.AsNew, Versions: len(versions), Artifacts: len(arts), Events: len(events)}
	// rewrite maps old identifiers to new ones for --as-new; refs and thread ids are unique
	// hex/UUID tokens, so replacing them textually in JSON cannot hit anything else. The
	// 6-digit ref relay shows is rewritten where it stands as a JSON string or starts one
	// ("<ref> <name>", as in headers): shorter than a full ref, it is not matched inside
	// other text.
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
			os, ns := memory.Short(a.Ref), memory.Short(nr)
			pairs = append(pairs, `"`+os+`"`, `"`+ns+`"`, `"`+os+` `, `"`+ns+` `)
		}
		rp := strings.NewReplacer(pairs...)
		rewrite = func(b []byte) []byte { return []byte(rp.Replace(string(b))) }
	}

	d := &memory.ThreadDump{Thread: th, Versions: versions, Snapshots: snaps, Events: events, Calls: calls}
	d.Thread.ID = res.ThreadID
	if opt.AsNew {
		if opt.Name != "" {
			d.Thread.Name = opt.Name
		} else {
			d.FreeName = true
		}
	}
	// Contents are inflated one at a time as the store writes them.
	fromRef := make(map[string]string, len(arts))
	for _, a := range arts {
		orig := a.Ref
		if opt.AsNew {
			a.Ref = res.RefMap[a.Ref]
		}
		fromRef[a.Ref] = orig
		a.SourceRefs = string(rewrite([]byte(a.SourceRefs)))
		d.Artifacts = append(d.Artifacts, a)
	}
	content := func(ref string) (io.ReadCloser, error) {
		orig, ok := fromRef[ref]
		if !ok {
			return nil, fmt.Errorf("import: no artifact %s in the bundle", ref)
		}
		return ents.open(orig)
	}
	for i := range d.Events {
		d.Events[i].Data = rewrite(d.Events[i].Data)
	}
	for i := range d.Versions {
		d.Versions[i].Patch = rewrite(d.Versions[i].Patch)
	}
	for i := range d.Snapshots {
		d.Snapshots[i].Doc = rewrite(d.Snapshots[i].Doc)
	}
	for i := range d.Calls {
		d.Calls[i].ThreadID = res.ThreadID
		d.Calls[i].ArtifactRef = string(rewrite([]byte(d.Calls[i].ArtifactRef)))
		d.Calls[i].Args = rewrite(d.Calls[i].Args)
	}
	if err := db.ImportThread(ctx, d, content); err != nil {
		return nil, err
	}
	res.Name = d.Thread.Name
	return res, nil
}

func checkConsistency(th threadRow, versions []versionRow, snaps []snapshotRow, arts []artifactRow, ents *bundleEntries) error {
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
		name := artDir + a.Ref
		if _, ok := ents.arts[name]; !ok {
			return unsafe("artifact %s has no content entry", a.Ref)
		}
		if ents.sum[name] != a.Hash || ents.size[name] != a.Size {
			return unsafe("artifact %s content does not match its sha256/size", a.Ref)
		}
	}
	for name := range ents.arts {
		if ref, ok := strings.CutPrefix(name, artDir); ok && !seen[ref] {
			return unsafe("entry %q belongs to no artifact", name)
		}
	}
	return nil
}
