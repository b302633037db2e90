package bundle

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/memory/sqlite"

	"github.com/google/go-cmp/cmp"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/capability"
)

func open(t *testing.T) *sqlite.SQLite {
	t.Helper()
	st, err := sqlite.OpenSQLite(t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fill makes a thread with several versions, artifacts (one derived), events and a call.
func fill(t *testing.T, st *sqlite.SQLite) string {
	t.Helper()
	ctx := context.Background()
	th, err := st.CreateThread(ctx, memory.CreateThreadParams{Name: "exported"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "notes.md", Type: "markdown", Content: []byte("# Notes\nHello, relay zebra.")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "blob.bin", Type: "binary", Content: []byte{0, 1, 2, 255}, SourceRefs: []string{a.Ref}, CreatedBy: "agent-a"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 70 { // past a snapshot boundary
		p := fmt.Sprintf(`[{"op":"add","path":"/facts/-","value":{"id":"f%d","key":"k","value":%d}}]`, i, i)
		if i == 3 {
			p = fmt.Sprintf(`[{"op":"add","path":"/artifacts/-","value":{"ref":%q,"type":"markdown"}},{"op":"add","path":"/artifacts/-","value":{"ref":%q,"type":"binary"}}]`, a.Ref, b.Ref)
		}
		if _, err := st.PatchState(ctx, th.ID, []byte(p), 0, "agent-a"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.AppendEvent(ctx, th.ID, "cap.invoked", map[string]any{"artifact_ref": a.Ref}); err != nil {
		t.Fatal(err)
	}
	if err := st.AddMetrics(ctx, th.ID, memory.Metrics{CacheHits: 3, TokensAvoided: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordCall(ctx, memory.CallRecord{Call: capability.Call{ThreadID: th.ID, Capability: "retrieval.search", Args: json.RawMessage(`{"query":"zebra"}`), ArtifactRef: a.Ref, CacheHit: true, At: time.Now().UTC().Truncate(time.Microsecond)}}); err != nil {
		t.Fatal(err)
	}
	return th.ID
}

type snapshot struct {
	Thread    memory.Thread
	States    []string
	Artifacts []memory.Artifact
	Contents  [][]byte
	Events    []memory.Event
	Calls     []capability.Call
}

func take(t *testing.T, st *sqlite.SQLite, id string) snapshot {
	t.Helper()
	ctx := context.Background()
	var s snapshot
	var err error
	if s.Thread, err = st.GetThread(ctx, id); err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= s.Thread.Version; v++ {
		state, err := st.State(ctx, id, v)
		if err != nil {
			t.Fatal(err)
		}
		s.States = append(s.States, string(state.Doc))
	}
	if s.Artifacts, err = st.ListArtifacts(ctx, id, memory.ListArtifactsOptions{Limit: 1000}); err != nil {
		t.Fatal(err)
	}
	for _, a := range s.Artifacts {
		_, c, err := st.ArtifactContent(ctx, id, a.Ref)
		if err != nil {
			t.Fatal(err)
		}
		s.Contents = append(s.Contents, c)
	}
	if s.Events, err = st.Events(ctx, id, 0, 1000); err != nil {
		t.Fatal(err)
	}
	if s.Calls, err = st.Calls(ctx, id); err != nil {
		t.Fatal(err)
	}
	return s
}

func export(t *testing.T, st *sqlite.SQLite, id string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Export(context.Background(), st, id, "test", &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTripExact(t *testing.T) {
	src := open(t)
	id := fill(t, src)
	zipb := export(t, src, id)
	before := take(t, src, id)

	dst := open(t)
	res, err := Import(context.Background(), dst, bytes.NewReader(zipb), int64(len(zipb)), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ThreadID != id || res.Versions != 71 || res.Artifacts != 2 {
		t.Fatalf("result = %+v", res)
	}
	after := take(t, dst, id)
	// Event ids are store-global, so only their order, types, times and data must survive.
	ignoreIDs := cmp.Transformer("noID", func(e memory.Event) memory.Event { e.ID = 0; return e })
	ignoreThreadEv := cmp.Transformer("noLast", func(th memory.Thread) memory.Thread { th.LastEventID = 0; return th })
	if d := cmp.Diff(before, after, ignoreIDs, ignoreThreadEv); d != "" {
		t.Fatalf("round trip differs (-before +after):\n%s", d)
	}
	hits, err := dst.Search(context.Background(), id, memory.SearchQuery{Query: "zebra"})
	if err != nil || len(hits) != 1 {
		t.Fatalf("imported artifacts not searchable: %v %v", hits, err)
	}
	// The imported thread keeps working: a new patch lands on top of the imported history.
	if _, err := dst.PatchState(context.Background(), id, []byte(`[{"op":"add","path":"/facts/-","value":{"id":"new","key":"k","value":1}}]`), 71, "t"); err != nil {
		t.Fatal(err)
	}

	// Exporting the import gives the same content again.
	again := export(t, dst, id)
	if a, b := entries(t, zipb), entries(t, again); !cmp.Equal(a, b, cmp.FilterPath(func(p cmp.Path) bool {
		return strings.Contains(p.GoString(), "events.jsonl") || strings.Contains(p.GoString(), "versions.jsonl") || strings.Contains(p.GoString(), "thread.json") || strings.Contains(p.GoString(), "snapshots.jsonl")
	}, cmp.Ignore())) {
		t.Fatalf("re-export differs:\n%s", cmp.Diff(a, b))
	}
}

func entries(t *testing.T, b []byte) map[string]string {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range zr.File {
		if f.Name == fManifest {
			continue
		}
		rc, _ := f.Open()
		c, _ := io.ReadAll(rc)
		rc.Close()
		out[f.Name] = string(c)
	}
	return out
}

func TestImportExistingNeedsAsNew(t *testing.T) {
	st := open(t)
	id := fill(t, st)
	zipb := export(t, st, id)
	before := take(t, st, id)
	_, err := Import(context.Background(), st, bytes.NewReader(zipb), int64(len(zipb)), ImportOptions{})
	var ee *ExistsError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "--as-new") {
		t.Fatalf("err = %v", err)
	}
	res, err := Import(context.Background(), st, bytes.NewReader(zipb), int64(len(zipb)), ImportOptions{AsNew: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.ThreadID == id || len(res.RefMap) != 2 {
		t.Fatalf("res = %+v", res)
	}
	cp := take(t, st, res.ThreadID)
	if len(cp.States) != len(before.States) || len(cp.Artifacts) != 2 || cp.Thread.Name != "exported (2)" || res.Name != "exported (2)" {
		t.Fatalf("copy = %+v (named %q)", cp.Thread, res.Name)
	}
	// Copies take the next free name, also of a copy; --name is used as given.
	for _, tt := range []struct{ name, want string }{{"", "exported (3)"}, {"mine", "mine"}} {
		r, err := Import(context.Background(), st, bytes.NewReader(zipb), int64(len(zipb)), ImportOptions{AsNew: true, Name: tt.name})
		if err != nil || r.Name != tt.want {
			t.Fatalf("copy named %q: %+v, %v (want %q)", tt.name, r, err, tt.want)
		}
	}
	for i, a := range before.Artifacts {
		got := cp.Artifacts[i]
		if got.Ref != res.RefMap[a.Ref] || got.Hash != a.Hash || !bytes.Equal(cp.Contents[i], before.Contents[i]) {
			t.Fatalf("artifact %d: %+v vs %+v", i, got, a)
		}
	}
	last := cp.States[len(cp.States)-1]
	if strings.Contains(last, id) || !strings.Contains(last, res.ThreadID) || strings.Contains(last, before.Artifacts[0].Ref) {
		t.Fatalf("state not remapped: %s", last)
	}
	// The original is untouched.
	if d := cmp.Diff(before, take(t, st, id)); d != "" {
		t.Fatalf("original changed:\n%s", d)
	}
}

// zipOf builds a zip from entries; a name ending in "@link" is written as a symlink.
func zipOf(t *testing.T, entries map[string][]byte, withManifest bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	m := Manifest{Format: FormatID, ThreadID: "550e8400-e29b-41d4-a716-446655440000", Files: map[string]string{}}
	for name, b := range entries {
		h := &zip.FileHeader{Name: strings.TrimSuffix(name, "@link"), Method: zip.Deflate}
		if strings.HasSuffix(name, "@link") {
			h.SetMode(os.ModeSymlink | 0o777)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
		sum := sha256.Sum256(b)
		m.Files[h.Name] = hex.EncodeToString(sum[:])
	}
	if withManifest {
		mb, _ := json.Marshal(m)
		w, _ := zw.Create(fManifest)
		w.Write(mb)
	}
	zw.Close()
	return buf.Bytes()
}

func TestImportRefusesUnsafe(t *testing.T) {
	st := open(t)
	good := export(t, st, fill(t, st))
	ctx := context.Background()
	tamper := func(name string, fn func([]byte) []byte) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for n, c := range entries(t, good) {
			if n == name {
				c = string(fn([]byte(c)))
			}
			w, _ := zw.Create(n)
			w.Write([]byte(c))
		}
		zr, _ := zip.NewReader(bytes.NewReader(good), int64(len(good)))
		for _, f := range zr.File {
			if f.Name == fManifest {
				rc, _ := f.Open()
				mb, _ := io.ReadAll(rc)
				w, _ := zw.Create(fManifest)
				w.Write(mb)
			}
		}
		zw.Close()
		return buf.Bytes()
	}
	tests := []struct {
		name string
		zip  []byte
		want string
	}{
		{"dotdot", zipOf(t, map[string][]byte{"../evil": []byte("x")}, true), "unsafe path"},
		{"nested dotdot", zipOf(t, map[string][]byte{"artifacts/../../evil": []byte("x")}, true), "unsafe path"},
		{"absolute", zipOf(t, map[string][]byte{"/etc/passwd": []byte("x")}, true), "unsafe path"},
		{"backslash", zipOf(t, map[string][]byte{`..\evil`: []byte("x")}, true), "unsafe path"},
		{"symlink", zipOf(t, map[string][]byte{"thread.json@link": []byte("/etc/passwd")}, true), "not a regular file"},
		{"unknown entry", zipOf(t, map[string][]byte{"run.sh": []byte("x")}, true), "unexpected entry"},
		{"no manifest", zipOf(t, map[string][]byte{"thread.json": []byte("{}")}, false), "no manifest"},
		{"not a zip", []byte("hello"), "not a zip"},
		{"content tampered", tamper("artifacts.jsonl", func(b []byte) []byte { return bytes.Replace(b, []byte("notes.md"), []byte("NOTES.md"), 1) }), "does not match the manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Import(ctx, open(t), bytes.NewReader(tt.zip), int64(len(tt.zip)), ImportOptions{})
			var ue *UnsafeError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want UnsafeError containing %q", err, tt.want)
			}
		})
	}
}

func TestImportLimits(t *testing.T) {
	st := open(t)
	good := export(t, st, fill(t, st))
	ctx := context.Background()
	defer func(e, b, m int64, n int) { MaxEntryBytes, MaxBundleBytes, MaxMetaBytes, MaxEntries = e, b, m, n }(MaxEntryBytes, MaxBundleBytes, MaxMetaBytes, MaxEntries)

	MaxEntryBytes, MaxMetaBytes = 1000, 1000
	bomb := zipOf(t, map[string][]byte{"thread.json": bytes.Repeat([]byte{' '}, 5000)}, true)
	if _, err := Import(ctx, open(t), bytes.NewReader(bomb), int64(len(bomb)), ImportOptions{}); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("oversized entry: %v", err)
	}
	MaxEntryBytes, MaxMetaBytes = 1<<30, 1<<30
	MaxBundleBytes = 100
	if _, err := Import(ctx, open(t), bytes.NewReader(good), int64(len(good)), ImportOptions{}); err == nil || !strings.Contains(err.Error(), "bundle inflates to") {
		t.Fatalf("oversized bundle: %v", err)
	}
	MaxBundleBytes = 1 << 30
	MaxEntries = 3
	if _, err := Import(ctx, open(t), bytes.NewReader(good), int64(len(good)), ImportOptions{}); err == nil || !strings.Contains(err.Error(), "entries") {
		t.Fatalf("too many entries: %v", err)
	}
}

// A lying header (small declared size, big real content) must still be caught.
func TestImportLyingSizeHeader(t *testing.T) {
	defer func(e int64) { MaxEntryBytes = e }(MaxEntryBytes)
	MaxEntryBytes = 1000
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.CreateRaw(&zip.FileHeader{Name: "thread.json", Method: zip.Store, CompressedSize64: 5000, UncompressedSize64: 10})
	w.Write(bytes.Repeat([]byte{'a'}, 5000))
	zw.Close()
	b := buf.Bytes()
	_, err := Import(context.Background(), open(t), bytes.NewReader(b), int64(len(b)), ImportOptions{})
	var ue *UnsafeError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v", err)
	}
}

func FuzzImport(f *testing.F) {
	f.Add(zipOfF(map[string][]byte{"thread.json": []byte("{}")}))
	f.Add([]byte("PK\x03\x04garbage"))
	dir := f.TempDir()
	st, err := sqlite.OpenSQLite(dir, sqlite.Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer st.Close()
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := Import(context.Background(), st, bytes.NewReader(b), int64(len(b)), ImportOptions{AsNew: true})
		if err == nil {
			return
		}
		var ue *UnsafeError
		if !errors.As(err, &ue) {
			t.Fatalf("non-UnsafeError for garbage input: %v", err)
		}
	})
}

func zipOfF(entries map[string][]byte) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for n, b := range entries {
		w, _ := zw.Create(n)
		w.Write(b)
	}
	zw.Close()
	return buf.Bytes()
}

// Every entry, manifest.json included, is dated when the export ran (an entry without a
// date shows as 1980-00-00 in unzip -l).
func TestExportEntryDates(t *testing.T) {
	st := open(t)
	id := fill(t, st)
	before := time.Now().Add(-2 * time.Second) // DOS times have 2 s resolution
	var buf bytes.Buffer
	if _, err := Export(context.Background(), st, id, "test", &buf); err != nil {
		t.Fatal(err)
	}
	after := time.Now().Add(2 * time.Second)
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	sawManifest := false
	for _, f := range zr.File {
		sawManifest = sawManifest || f.Name == fManifest
		if m := f.Modified; m.Before(before) || m.After(after) {
			t.Errorf("%s is dated %v, want the export time (between %v and %v)", f.Name, m, before, after)
		}
	}
	if !sawManifest {
		t.Fatal("no manifest.json in the export")
	}
}
