package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/memory/blobgc"
	"github.com/relaydev/relay/internal/memory/storetest"
	"github.com/relaydev/relay/internal/testsupport/s3test"
)

// TestConformanceWithBucket runs the conformance tests of artifact bodies with the bodies
// in a directory store, as with --artifacts file:///dir.
func TestConformanceWithBucket(t *testing.T) {
	storetest.RunOnly(t, func(t *testing.T) memory.Store {
		bs, err := blob.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		s, err := OpenSQLite(t.TempDir(), Options{Blobs: bs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, storetest.Bodies...)
}

// TestBodiesInBucket: with --artifacts s3://… the SQLite store keeps bodies in the bucket
// (versitygw) and only their search text in relay.db; large bodies stream; artifacts
// stored before the bucket stay readable; a store opened without its bucket says how to
// fix it.
func TestBodiesInBucket(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	bs, err := blob.Open(ctx, srv.Bucket(t, "solo", "relay"))
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()

	// Before the bucket: a body in the database.
	s, err := OpenSQLite(home, Options{})
	if err != nil {
		t.Fatal(err)
	}
	th, _ := s.CreateThread(ctx, memory.CreateThreadParams{Name: "bucket"})
	early, err := s.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "early.md", Content: []byte("# Early\nkept in the database\n")})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = OpenSQLite(home, Options{Blobs: bs})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	note := []byte("<html><body><p>The <b>zeppelin</b> hangar</p></body></html>")
	a, err := s.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "page.html", Content: note})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bs.Stat(ctx, a.Hash); err != nil {
		t.Fatalf("the body is not in the bucket: %v", err)
	}
	var stored []byte
	var enc int
	if err := s.r.QueryRow(`SELECT content, enc FROM artifact_content WHERE ref = ?`, a.Ref).Scan(&stored, &enc); err != nil {
		t.Fatal(err)
	}
	if enc != encBucket || strings.Contains(string(stored), "<b>") || !strings.Contains(string(stored), "zeppelin") {
		t.Fatalf("relay.db keeps enc %d %q, want only the search text", enc, stored)
	}
	if hits, err := s.Search(ctx, th.ID, memory.SearchQuery{Query: "zeppelin"}); err != nil || len(hits) != 1 || !strings.Contains(hits[0].Snippet, "zeppelin") {
		t.Fatalf("search in a bucket body: %+v %v", hits, err)
	}

	// A 24 MiB body streams from its spool file to the bucket and back.
	big := bytes.Repeat([]byte("line of a long build log\n"), 1<<20)
	sp, err := blob.Spool(bytes.NewReader(big), s.MaxArtifactBytes(), 1<<20, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	ba, err := s.PutArtifactBody(ctx, th.ID, memory.PutArtifactParams{Name: "build.log"}, sp)
	if err != nil || ba.Size != int64(len(big)) || ba.Type != memory.TypeText {
		t.Fatalf("big put: %+v %v", ba, err)
	}
	_, r, err := s.OpenArtifact(ctx, th.ID, ba.Ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("big body round trip: %d bytes, %v", len(got), err)
	}
	for _, ref := range []string{early.Ref, a.Ref} {
		if _, b, err := s.ArtifactContent(ctx, th.ID, ref); err != nil || len(b) == 0 {
			t.Fatalf("content of %s: %v", ref, err)
		}
	}
	if again, err := s.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Content: note}); err != nil || !again.Deduplicated {
		t.Fatalf("same bytes again: %+v %v", again, err)
	}

	// Opened without the bucket: the database's bodies read, the bucket's say what to do.
	s.Close()
	s, err = OpenSQLite(home, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ArtifactContent(ctx, th.ID, early.Ref); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ArtifactContent(ctx, th.ID, a.Ref); err == nil || !strings.Contains(err.Error(), "--artifacts") {
		t.Fatalf("a bucket body without the bucket: %v", err)
	}
}

// TestSweepWhilePutting: sweeps of a directory bucket (grace none) back to back while 4
// writers put bodies that another party keeps uploading without artifacts: every
// acknowledged artifact reads back, and a last sweep leaves exactly the referenced bodies.
func TestSweepWhilePutting(t *testing.T) {
	ctx := context.Background()
	bs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenSQLite(t.TempDir(), Options{Blobs: bs, Sync: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const writers, each = 4, 10
	body := func(w, i int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("writer %d note %d: the quick brown fox\n", w, i)), 2000)
	}
	var next [writers]atomic.Int64
	stop := make(chan struct{})
	var bg sync.WaitGroup
	var deleted atomic.Int64
	bg.Add(2)
	go func() { // the uploader
		defer bg.Done()
		for {
			for w := range writers {
				select {
				case <-stop:
					return
				default:
				}
				if i := int(next[w].Load()); i < each {
					b := body(w, i)
					if _, err := bs.Put(ctx, blob.Sum(b), int64(len(b)), bytes.NewReader(b)); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}
	}()
	go func() { // the sweeper
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			rep, err := s.SweepBlobs(ctx, blobgc.Options{Grace: -1})
			if err != nil {
				t.Error(err)
				return
			}
			deleted.Add(int64(rep.Deleted))
		}
	}()
	type put struct{ thread, ref string }
	var mu sync.Mutex
	var puts []put
	var wg sync.WaitGroup
	for w := range writers {
		th, err := s.CreateThread(ctx, memory.CreateThreadParams{})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				a, err := s.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "n.txt", Content: body(w, i)})
				next[w].Add(1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				puts = append(puts, put{th.ID, a.Ref})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	if t.Failed() {
		return
	}
	for _, p := range puts {
		if _, _, err := s.ArtifactContent(ctx, p.thread, p.ref); err != nil {
			t.Fatalf("acknowledged artifact %s after %d deletions: %v", p.ref, deleted.Load(), err)
		}
	}
	rep, err := s.SweepBlobs(ctx, blobgc.Options{Grace: -1})
	if err != nil || rep.Objects != len(puts) || rep.Orphans != 0 {
		t.Fatalf("last sweep: %+v %v (want %d bodies, no orphans)", rep, err, len(puts))
	}
}

// TestHashIndexOnlyWithBucket: the index of artifacts by body hash exists once a store has
// opened with a bucket (its garbage collection reads it) and not before.
func TestHashIndexOnlyWithBucket(t *testing.T) {
	home := t.TempDir()
	hasIndex := func(s *SQLite) bool {
		t.Helper()
		var n int
		if err := s.r.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'artifacts_hash'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	s, err := OpenSQLite(home, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if hasIndex(s) {
		t.Error("a store without a bucket keeps the hash index")
	}
	s.Close()
	bs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err = OpenSQLite(home, Options{Blobs: bs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !hasIndex(s) {
		t.Error("a store opened with a bucket has no hash index")
	}
	var plan string
	var a, b, c int
	if err := s.r.QueryRow(`EXPLAIN QUERY PLAN SELECT DISTINCT hash FROM artifacts WHERE hash IN (?, ?)`, "x", "y").Scan(&a, &b, &c, &plan); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "artifacts_hash") {
		t.Errorf("the collector's lookup does not use the index: %s", plan)
	}
}
