package sqlite

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/klauspost/compress/s2"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/statedoc"
)

// TestContentStoredCompressed: text is stored s2-compressed and reads back exactly; random
// binary is stored as it came; both are found (binary by name).
func TestContentStoredCompressed(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	tid := newThread(t, st)
	text := strings.Repeat("func handlePatch(w http.ResponseWriter, r *http.Request) error { // zebra\n", 1500)
	bin := make([]byte, 64<<10)
	rand.Read(bin)
	tref := put(t, st, tid, "code.go", "text", text)
	a, err := st.PutArtifact(ctx, tid, memory.PutArtifactParams{Name: "blob-okapi.bin", Type: "binary", Content: bin})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ref  string
		want []byte
		enc  int
	}{{tref, []byte(text), encS2}, {a.Ref, bin, encRaw}} {
		var stored []byte
		var enc int
		if err := st.r.QueryRow(`SELECT content, enc FROM artifact_content WHERE ref = ?`, c.ref).Scan(&stored, &enc); err != nil {
			t.Fatal(err)
		}
		if enc != c.enc || (enc == encS2 && len(stored) > len(c.want)/4) {
			t.Errorf("%s stored as enc %d, %d bytes for %d", c.ref, enc, len(stored), len(c.want))
		}
		_, got, err := st.ArtifactContent(ctx, tid, c.ref)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s reads back %d bytes (%v), want %d", c.ref, len(got), err, len(c.want))
		}
	}
	if hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: "zebra"}); err != nil || len(hits) != 1 || !strings.Contains(hits[0].Snippet, "**zebra**") {
		t.Errorf("search in compressed text: %+v %v", hits, err)
	}
	if hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: "okapi"}); err != nil || len(hits) != 1 || hits[0].Ref != a.Ref {
		t.Errorf("binary by name: %+v %v", hits, err)
	}
}

// TestDecodeContentRefusesHostileRows: the database file is data, not trust.
func TestDecodeContentRefusesHostileRows(t *testing.T) {
	huge := s2.Encode(nil, bytes.Repeat([]byte{'a'}, 1<<20))
	huge = append([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, huge[3:]...) // claims ~4 GB
	for name, c := range map[string]struct {
		enc    int
		stored []byte
	}{
		"corrupt":   {encS2, []byte("not s2 at all")},
		"too large": {encS2, huge},
		"unknown":   {7, []byte("x")},
	} {
		if b, err := decodeContent(c.enc, c.stored); err == nil {
			t.Errorf("%s: decoded %d bytes, want an error", name, len(b))
		}
	}
}

// TestEncodeReusesReleasedBuffers: once released, a compression buffer serves the next put
// (larger and smaller ones included), each result decoding to its own input; random bytes
// stay raw; the indexer's text comes out whole although its buffer is reused.
func TestEncodeReusesReleasedBuffers(t *testing.T) {
	random := make([]byte, 50<<10)
	rand.Read(random)
	held := []byte(strings.Repeat("held until the end; ", 5000))
	_, heldStored, heldRelease := encodeContent(held) // not released: no later put may get its buffer
	defer heldRelease()
	for i, size := range []int{100 << 10, 2 << 10, 300 << 10, 1 << 10, 100 << 10} {
		in := []byte(strings.Repeat(fmt.Sprintf("line %d of a log that repeats itself\n", i), size/40))
		enc, stored, release := encodeContent(in)
		if enc != encS2 {
			t.Fatalf("%d bytes of text stored as %d, want s2", len(in), enc)
		}
		text, err := searchText(memory.TypeText, stored, enc)
		if err != nil || text != string(in) {
			t.Fatalf("%d bytes: the indexer read %d bytes back, %v", len(in), len(text), err)
		}
		release()
		release() // twice is harmless
		if enc, stored, release := encodeContent(random); enc != encRaw || !bytes.Equal(stored, random) {
			t.Fatalf("random bytes stored as %d", enc)
		} else {
			release()
		}
	}
	if out, err := decodeContent(encS2, heldStored); err != nil || !bytes.Equal(out, held) {
		t.Fatalf("content not yet released was overwritten: %d bytes back, %v", len(out), err)
	}
}

func FuzzDecodeContent(f *testing.F) {
	f.Add(s2.Encode(nil, []byte(strings.Repeat("hello relay ", 100))))
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x01})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := decodeContent(encS2, b)
		if err == nil && len(out) > memory.MaxArtifactSize {
			t.Fatalf("decoded %d bytes past the limit", len(out))
		}
	})
}

// TestIndexTextCutsOnRuneBoundary: past MaxIndexedBytes the text is cut without splitting
// a rune (the index would otherwise get invalid UTF-8).
func TestIndexTextCutsOnRuneBoundary(t *testing.T) {
	s := strings.Repeat("a", MaxIndexedBytes-1) + "é and more"
	got := indexText("text", []byte(s))
	if !utf8.ValidString(got) || len(got) != MaxIndexedBytes-1 {
		t.Errorf("cut at %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if indexText("binary", []byte("words")) != "" || indexText("text", []byte{0xff, 'a'}) != "" {
		t.Error("binary or invalid UTF-8 content was indexed")
	}
	if got := indexText("html", []byte("<p>hello <b>world</b></p><script>var x</script>")); strings.Contains(got, "<") || strings.Contains(got, "var") {
		t.Errorf("html indexed as %q", got)
	}
}

// TestUpgradeFromSyncIndex: a store written by the previous layout (text copied into the
// index inside each put, contents uncompressed) opens, is re-indexed in the background,
// and reads and searches as before.
func TestUpgradeFromSyncIndex(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(home, "relay.db")+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations {
		if m.name >= "0200" {
			break
		}
		if _, err := db.Exec(m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		db.Exec(`INSERT INTO schema_migrations VALUES (?, '2026-01-01T00:00:00Z')`, m.name)
	}
	tid := "0b6f1b8e-4a4f-4c47-9d3e-2f6c3b7a9e10"
	at := "2026-01-01T00:00:00.000Z"
	db.Exec(`INSERT INTO threads(id, name, created_at, updated_at, version) VALUES (?, 'old', ?, ?, 1)`, tid, at, at)
	db.Exec(`INSERT INTO state_snapshots(thread_id, version, doc) VALUES (?, 1, ?)`, tid, statedoc.New(tid))
	db.Exec(`INSERT INTO state_versions(thread_id, version, patch, created_at) VALUES (?, 1, '[]', ?)`, tid, at)
	for i := range 3 {
		ref := fmt.Sprintf("%026x", i+1)
		body := fmt.Sprintf("old note %d about the quagga", i)
		if _, err := db.Exec(`INSERT INTO artifacts(ref, thread_id, type, mime, name, size, hash, preview_text, preview_lines, preview_truncated, created_at)
			VALUES (?, ?, 'text', 'text/plain', ?, ?, ?, ?, 1, 0, ?)`, ref, tid, fmt.Sprintf("n%d.txt", i), len(body), fmt.Sprintf("%064x", i), body, at); err != nil {
			t.Fatal(err)
		}
		db.Exec(`INSERT INTO artifact_content(ref, content) VALUES (?, ?)`, ref, []byte(body))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := OpenSQLite(home, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: "quagga"})
	if err != nil || len(hits) != 3 || !strings.Contains(hits[0].Snippet, "**quagga**") {
		t.Fatalf("search after upgrade: %+v %v", hits, err)
	}
	_, b, err := st.ArtifactContent(ctx, tid, fmt.Sprintf("%026x", 2))
	if err != nil || string(b) != "old note 1 about the quagga" {
		t.Fatalf("old content: %q %v", b, err)
	}
	put(t, st, tid, "new.txt", "text", "a new quagga sighting")
	if hits, _ := st.Search(ctx, tid, memory.SearchQuery{Query: "quagga"}); len(hits) != 4 {
		t.Fatalf("after a new put: %v", refs(hits))
	}
}

// TestSearchSeesEveryEarlierPut: a burst of puts is searchable as soon as each is
// acknowledged (the search waits for the indexer), in every thread.
func TestSearchSeesEveryEarlierPut(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	a, b := newThread(t, st), newThread(t, st)
	for i := range 200 {
		tid := a
		if i%2 == 1 {
			tid = b
		}
		put(t, st, tid, fmt.Sprintf("d%d.md", i), "markdown", fmt.Sprintf("note %d: word%d and the narwhal", i, i))
		if i%37 == 0 {
			hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: fmt.Sprintf("word%d", i)})
			if err != nil || len(hits) != 1 {
				t.Fatalf("put %d not found right after: %v %v", i, refs(hits), err)
			}
		}
	}
	for _, tid := range []string{a, b} {
		hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: "narwhal", Limit: 50})
		if err != nil || len(hits) != 50 {
			t.Fatalf("thread %s: %d hits %v", tid, len(hits), err)
		}
	}
	if n, err := st.IndexPending(ctx); err != nil || n != 0 {
		t.Fatalf("pending after searches: %d %v", n, err)
	}
}
