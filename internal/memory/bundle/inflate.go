package bundle

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/relaydev/relay/internal/memory"
)

// Limits on what an import inflates. Vars so tests can shrink them. Only the
// metadata entries are held in memory; artifact contents are hashed as they
// stream and inflated again one at a time while they are written, so memory
// stays near MaxMetaTotal + MaxEntryBytes whatever the bundle claims.
var (
	MaxManifestBytes = int64(32) << 20
	MaxMetaBytes     = int64(64) << 20  // one of thread.json and the .jsonl files
	MaxMetaTotal     = int64(128) << 20 // all of them
)

// bundleEntries is a bundle whose every entry has been checked against the
// manifest: name, declared size, real inflated size and sha256.
type bundleEntries struct {
	meta map[string][]byte    // metadata entries, inflated
	arts map[string]*zip.File // "artifacts/<ref>" entries, not kept in memory
	size map[string]int64     // inflated size of every entry
	sum  map[string]string    // sha256 hex of every entry
}

// countingReader fails as soon as more than limit bytes come out of r: the
// zip header's size and the manifest's declared size are claims, this is the
// count.
type countingReader struct {
	r     io.Reader
	n     int64
	limit int64
	name  string
}

func (c *countingReader) Read(p []byte) (int, error) {
	if int64(len(p)) > c.limit-c.n+1 {
		p = p[:c.limit-c.n+1]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.limit {
		return n, unsafe("entry %q inflates past the %d bytes it declares (zip bomb?)", c.name, c.limit)
	}
	return n, err
}

// inflate streams entry f into w (nil: only hash it) and checks that it
// inflates to exactly size bytes; it returns the sha256 hex.
func inflate(f *zip.File, size int64, w io.Writer) (string, error) {
	rc, err := f.Open()
	if err != nil {
		return "", unsafe("entry %q: %v", f.Name, err)
	}
	defer rc.Close()
	h := sha256.New()
	dst := io.Writer(h)
	if w != nil {
		dst = io.MultiWriter(h, w)
	}
	n, err := io.Copy(dst, &countingReader{r: rc, limit: size, name: f.Name})
	if err != nil {
		if _, ok := err.(*UnsafeError); ok {
			return "", err
		}
		return "", unsafe("entry %q: %v", f.Name, err)
	}
	if n != size {
		return "", unsafe("entry %q inflates to %d bytes, not the %d it declares", f.Name, n, size)
	}
	return sumHex(h), nil
}

func sumHex(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// openEntries checks names, counts and declared sizes of every entry before
// inflating any but the manifest, then inflates each entry once through a
// counting reader and checks its sha256 against the manifest.
func openEntries(zr *zip.Reader, maxArtifact int64) (*Manifest, *bundleEntries, error) {
	// A store whose bodies stream to a bucket takes larger artifacts: its entries may be
	// that large, and the bundle's total grows by as much.
	entryLimit, totalLimit := MaxEntryBytes, MaxBundleBytes
	if extra := maxArtifact - memory.MaxArtifactSize; extra > 0 {
		entryLimit += extra
		totalLimit += extra
	}
	if len(zr.File) > MaxEntries {
		return nil, nil, unsafe("%d entries, the limit is %d", len(zr.File), MaxEntries)
	}
	byName := map[string]*zip.File{}
	for _, f := range zr.File {
		if f.Name == artDir && f.Mode().IsDir() {
			continue // a directory entry some zip tools add
		}
		if err := checkName(f); err != nil {
			return nil, nil, err
		}
		if _, dup := byName[f.Name]; dup {
			return nil, nil, unsafe("duplicate entry %q", f.Name)
		}
		byName[f.Name] = f
	}
	mf, ok := byName[fManifest]
	if !ok {
		return nil, nil, unsafe("no manifest.json; is this a relay export?")
	}
	if mf.UncompressedSize64 > uint64(MaxManifestBytes) {
		return nil, nil, unsafe("manifest.json is %d bytes, the limit is %d", mf.UncompressedSize64, MaxManifestBytes)
	}
	var mb bytes.Buffer
	if _, err := inflate(mf, int64(mf.UncompressedSize64), &mb); err != nil {
		return nil, nil, err
	}
	var m Manifest
	if err := json.Unmarshal(mb.Bytes(), &m); err != nil || m.Format != FormatID {
		return nil, nil, unsafe("manifest.json is not a %s manifest", FormatID)
	}
	for name := range byName {
		if _, ok := m.Files[name]; !ok && name != fManifest {
			return nil, nil, unsafe("entry %q is not listed in the manifest", name)
		}
	}
	for name := range m.Files {
		if _, ok := byName[name]; !ok {
			return nil, nil, unsafe("entry %q listed in the manifest is missing", name)
		}
	}
	// Every size is known and bounded before anything else is inflated.
	e := &bundleEntries{meta: map[string][]byte{}, arts: map[string]*zip.File{}, size: map[string]int64{}, sum: map[string]string{}}
	var total, meta int64
	for name, f := range byName {
		if name == fManifest {
			continue
		}
		size := int64(f.UncompressedSize64)
		if m.Sizes != nil {
			declared, ok := m.Sizes[name]
			if !ok || declared < 0 {
				return nil, nil, unsafe("the manifest declares no size for entry %q", name)
			}
			if uint64(declared) != f.UncompressedSize64 {
				return nil, nil, unsafe("entry %q: the zip says %d bytes, the manifest %d", name, f.UncompressedSize64, declared)
			}
			size = declared
		}
		limit := MaxMetaBytes
		if strings.HasPrefix(name, artDir) {
			limit = entryLimit
		} else {
			meta += size
		}
		if size > limit {
			return nil, nil, unsafe("entry %q is %d bytes, the limit is %d", name, size, limit)
		}
		total += size
		e.size[name] = size
	}
	if meta > MaxMetaTotal {
		return nil, nil, unsafe("the bundle's metadata is %d bytes, the limit is %d", meta, MaxMetaTotal)
	}
	if total > totalLimit {
		return nil, nil, unsafe("bundle inflates to %d bytes, the limit is %d", total, totalLimit)
	}
	for _, name := range []string{fThread, fVersions, fSnapshots, fArtifacts, fEvents} {
		if _, ok := byName[name]; !ok {
			return nil, nil, unsafe("no %s; is this a relay export?", name)
		}
	}
	// Metadata first: it is small, and a bundle whose metadata is refused
	// never gets its artifacts inflated (verifyArtifacts does that later).
	for name, f := range byName {
		if name == fManifest {
			continue
		}
		if strings.HasPrefix(name, artDir) {
			e.arts[name] = f
			e.sum[name] = m.Files[name] // as declared until verifyArtifacts
			continue
		}
		buf := bytes.NewBuffer(make([]byte, 0, e.size[name]))
		sum, err := inflate(f, e.size[name], buf)
		if err != nil {
			return nil, nil, err
		}
		if sum != m.Files[name] {
			return nil, nil, unsafe("entry %q does not match the manifest's sha256", name)
		}
		e.sum[name] = sum
		e.meta[name] = buf.Bytes()
	}
	return &m, e, nil
}

// verifyArtifacts inflates every artifact entry once, hashing as it streams,
// and checks it against the manifest; nothing is kept in memory.
func (e *bundleEntries) verifyArtifacts() error {
	for _, name := range slices.Sorted(maps.Keys(e.arts)) {
		sum, err := inflate(e.arts[name], e.size[name], nil)
		if err != nil {
			return err
		}
		if sum != e.sum[name] {
			return unsafe("entry %q does not match the manifest's sha256", name)
		}
	}
	return nil
}

// open inflates one artifact again as the store writes it, streaming: the reader fails
// unless the entry inflates to exactly its size and sha256 once more (the reader under the
// zip is not trusted to be stable).
func (e *bundleEntries) open(ref string) (io.ReadCloser, error) {
	name := artDir + ref
	f, ok := e.arts[name]
	if !ok {
		return nil, unsafe("artifact %s has no content entry", ref)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, unsafe("entry %q: %v", name, err)
	}
	return &entryReader{rc: rc, r: &countingReader{r: rc, limit: e.size[name], name: name}, h: sha256.New(), size: e.size[name], sum: e.sum[name], ref: ref}, nil
}

// entryReader is an artifact entry being inflated: counted, hashed, and checked at its end.
type entryReader struct {
	rc   io.ReadCloser
	r    io.Reader
	h    hash.Hash
	n    int64
	size int64
	sum  string
	ref  string
}

func (e *entryReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.h.Write(p[:n])
	e.n += int64(n)
	if err == io.EOF && (e.n != e.size || sumHex(e.h) != e.sum) {
		return n, fmt.Errorf("artifact %s changed while it was imported", e.ref)
	}
	return n, err
}

func (e *entryReader) Close() error { return e.rc.Close() }
