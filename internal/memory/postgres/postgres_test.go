package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/memory/postgres"
	"github.com/relaydev/relay/internal/testsupport/pgtest"
	"github.com/relaydev/relay/internal/testsupport/s3test"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func open(t *testing.T, url string, opt postgres.Options) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func factPatch(id string) []byte {
	return []byte(`[{"op":"add","path":"/facts/-","value":{"id":"` + id + `","key":"k","value":1}}]`)
}

// Every version stays readable across snapshots, from this daemon and from a fresh one.
func TestVersionsAcrossSnapshots(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	s := open(t, url, postgres.Options{})
	th, err := s.CreateThread(ctx, memory.CreateThreadParams{Name: "versions"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 150
	docs := map[int]string{}
	st, _ := s.State(ctx, th.ID, 0)
	docs[1] = string(st.Doc)
	for i := 2; i <= n; i++ {
		res, err := s.PatchState(ctx, th.ID, factPatch(fmt.Sprintf("f%d", i)), i-1, "test")
		if err != nil {
			t.Fatalf("patch %d: %v", i, err)
		}
		if res.Version != i || res.StateRef != fmt.Sprintf("v%d", i) {
			t.Fatalf("patch %d made %+v", i, res)
		}
		st, err := s.State(ctx, th.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		docs[i] = string(st.Doc)
	}
	fresh := open(t, url, postgres.Options{})
	for _, r := range []*postgres.Store{s, fresh} {
		for v := 1; v <= n; v++ {
			st, err := r.State(ctx, th.ID, v)
			if err != nil || string(st.Doc) != docs[v] {
				t.Fatalf("version %d differs on re-read (%v)", v, err)
			}
		}
	}
	var snaps int
	c, _ := pgx.Connect(ctx, url)
	defer c.Close(ctx)
	c.QueryRow(ctx, `SELECT count(*) FROM state_snapshots WHERE thread_id = $1`, th.ID).Scan(&snaps)
	if snaps != 1+n/64 {
		t.Errorf("%d snapshots for %d versions, want one every 64 plus the first", snaps, n)
	}
	vs, err := s.Versions(ctx, th.ID, 140, 100)
	if err != nil || len(vs) != 10 || vs[0].Version != 141 || string(vs[0].Patch) != string(factPatch("f141")) || vs[0].Author != "test" {
		t.Fatalf("versions after 140: %d %v", len(vs), err)
	}
	var ce *memory.ConflictError
	if _, err := s.PatchState(ctx, th.ID, factPatch("stale"), 10, ""); !errors.As(err, &ce) || ce.Current != n || ce.Expected != 10 {
		t.Fatalf("stale patch: %v", err)
	}
	var ie *memory.InvalidError
	if _, err := s.PatchState(ctx, th.ID, []byte(`[{"op":"test","path":"/facts/0/id","value":"nope"}]`), 0, ""); !errors.As(err, &ie) || ie.Code != "test_failed" {
		t.Fatalf("failing test op: %v", err)
	}
	if _, err := s.State(ctx, th.ID, n+1); !memory.IsNotFound(err) {
		t.Fatalf("future version: %v", err)
	}
	if got, _ := s.GetThread(ctx, th.ID); got.Version != n || got.EventCount != n || got.Name != "versions" {
		t.Fatalf("thread row %+v", got)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// Daemons starting together on a new database apply each migration once.
func TestConcurrentMigration(t *testing.T) {
	url := pgtest.New(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := postgres.Open(context.Background(), url, postgres.Options{})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	v, err := postgres.SchemaVersionOf(context.Background(), url)
	if err != nil || v != postgres.SchemaVersion() {
		t.Fatalf("schema version %d, %v", v, err)
	}
	c, _ := pgx.Connect(context.Background(), url)
	defer c.Close(context.Background())
	var n int
	c.QueryRow(context.Background(), `SELECT count(*) FROM schema_migrations`).Scan(&n)
	if n != postgres.SchemaVersion() {
		t.Fatalf("%d migration rows, want %d", n, postgres.SchemaVersion())
	}
	// A database migrated by a newer relay is refused, not written with an old schema.
	c.Exec(context.Background(), `INSERT INTO schema_migrations (version, name) VALUES (999, 'future')`)
	if _, err := postgres.Open(context.Background(), url, postgres.Options{}); err == nil || !strings.Contains(err.Error(), "upgrade relay") {
		t.Fatalf("open of a newer schema: %v", err)
	}
}

// Two stores on one database: what one acknowledges the other reads at once, conflicts
// across them are refused, and concurrent writers with If-Match and retry lose nothing and
// duplicate nothing.
func TestTwoDaemonsOneTruth(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	a := open(t, url, postgres.Options{})
	b := open(t, url, postgres.Options{})
	th, err := a.CreateThread(ctx, memory.CreateThreadParams{})
	if err != nil {
		t.Fatal(err)
	}
	// b caches v1, a moves on: b must read a's version, not its cache.
	if st, err := b.State(ctx, th.ID, 0); err != nil || st.Version != 1 {
		t.Fatalf("b reads %v %v", st.Version, err)
	}
	if _, err := a.PatchState(ctx, th.ID, factPatch("from-a"), 1, ""); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.State(ctx, th.ID, 0); st.Version != 2 || !bytes.Contains(st.Doc, []byte("from-a")) {
		t.Fatalf("b did not see a's acknowledged write: v%d", st.Version)
	}
	var ce *memory.ConflictError
	if _, err := b.PatchState(ctx, th.ID, factPatch("stale-b"), 1, ""); !errors.As(err, &ce) || ce.Current != 2 {
		t.Fatalf("stale patch through b: %v", err)
	}

	const writers, each = 8, 25
	stores := []*postgres.Store{a, b}
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[string]int{}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%2]
			for i := range each {
				id := fmt.Sprintf("w%d-%d", w, i)
				for try := 0; ; try++ {
					st, err := s.State(ctx, th.ID, 0)
					if err != nil {
						t.Error(err)
						return
					}
					res, err := s.PatchState(ctx, th.ID, factPatch(id), st.Version, "")
					var conflict *memory.ConflictError
					if errors.As(err, &conflict) {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					acked[id] = res.Version
					mu.Unlock()
					break
				}
			}
		}()
	}
	wg.Wait()
	for _, s := range stores {
		st, err := s.State(ctx, th.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Facts []struct{ ID string } `json:"facts"`
		}
		json.Unmarshal(st.Doc, &doc)
		seen := map[string]int{}
		for _, f := range doc.Facts {
			seen[f.ID]++
		}
		for id := range acked {
			if seen[id] != 1 {
				t.Errorf("acknowledged %s appears %d times", id, seen[id])
			}
		}
		if len(acked) != writers*each || len(doc.Facts) != writers*each+1 || st.Version != writers*each+2 {
			t.Fatalf("acked %d, facts %d, version %d", len(acked), len(doc.Facts), st.Version)
		}
	}
}

// A follower on one daemon is woken by an event written through the other (LISTEN/NOTIFY),
// and resuming after an id returns exactly the later events, in order.
func TestEventsAcrossDaemons(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	a := open(t, url, postgres.Options{})
	b := open(t, url, postgres.Options{})
	th, _ := a.CreateThread(ctx, memory.CreateThreadParams{})
	wake, cancel := b.Subscribe(th.ID)
	defer cancel()
	first, _ := b.Events(ctx, th.ID, 0, 10)
	if len(first) != 1 || first[0].Type != memory.EventThreadCreated {
		t.Fatalf("first events %+v", first)
	}
	last := first[0].ID
	var got []string
	for i := range 20 {
		if _, err := a.AppendEvent(ctx, th.ID, "note", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(10 * time.Second)
	for len(got) < 20 {
		select {
		case <-wake:
		case <-deadline:
			t.Fatalf("b's follower saw %d of 20 events written through a", len(got))
		}
		evs, err := b.Events(ctx, th.ID, last, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.ID <= last {
				t.Fatalf("event %d after %d", e.ID, last)
			}
			last = e.ID
			got = append(got, string(e.Data))
		}
	}
	for i, d := range got {
		if d != fmt.Sprintf(`{"i":%d}`, i) {
			t.Fatalf("event %d is %s", i, d)
		}
	}
}

func TestArtifactsInDatabaseAndBucket(t *testing.T) {
	srv := s3test.Start(t)
	loc := srv.Bucket(t, "team", "relay")
	bucket, err := blob.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	for name, opt := range map[string]postgres.Options{"database": {}, "bucket": {Blobs: bucket}} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			url := pgtest.New(t)
			a := open(t, url, opt)
			b := open(t, url, opt)
			th, _ := a.CreateThread(ctx, memory.CreateThreadParams{})
			other, _ := b.CreateThread(ctx, memory.CreateThreadParams{})
			content := []byte("# Notes\nthe deploy runbook\n")
			art, err := a.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "notes.md", Content: content, CreatedBy: "agent"})
			if err != nil {
				t.Fatal(err)
			}
			if art.Type != memory.TypeMarkdown || art.Hash != blob.Sum(content) || art.Deduplicated {
				t.Fatalf("artifact %+v", art)
			}
			again, err := b.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "copy.md", Content: content})
			if err != nil || !again.Deduplicated || again.Ref != art.Ref {
				t.Fatalf("same content through the other daemon stored twice: %+v %v", again, err)
			}
			if el, _ := b.PutArtifact(ctx, other.ID, memory.PutArtifactParams{Content: content}); el.Deduplicated || el.Ref == art.Ref {
				t.Fatalf("dedupe crossed threads: %+v", el)
			}
			got, raw, err := b.ArtifactContent(ctx, th.ID, art.Ref)
			if err != nil || !bytes.Equal(raw, content) || got.Hash != art.Hash {
				t.Fatalf("content through the other daemon: %v", err)
			}
			big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
			big = append(big, "tail"...)
			sp, err := blob.Spool(bytes.NewReader(big), memory.MaxArtifactSize, 1<<20, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			ba, err := a.PutArtifactBody(ctx, th.ID, memory.PutArtifactParams{Name: "big.txt"}, sp)
			if err != nil || ba.Size != int64(len(big)) {
				t.Fatalf("big put: %+v %v", ba, err)
			}
			if _, raw, err := b.ArtifactContent(ctx, th.ID, ba.Ref); err != nil || !bytes.Equal(raw, big) {
				t.Fatalf("big body round trip: %d bytes, %v", len(raw), err)
			}
			list, _ := b.ListArtifacts(ctx, th.ID, memory.ListArtifactsOptions{})
			if len(list) != 2 {
				t.Fatalf("list %d", len(list))
			}
			if opt.Blobs != nil {
				if _, err := bucket.Stat(ctx, art.Hash); err != nil {
					t.Fatalf("body not in the bucket: %v", err)
				}
			}
			if _, err := a.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Type: "pdf", Content: []byte("x")}); err == nil {
				t.Fatal("unknown type accepted")
			}
			if _, err := a.GetArtifact(ctx, other.ID, art.Ref); !memory.IsNotFound(err) {
				t.Fatalf("artifact visible from another thread: %v", err)
			}
		})
	}
}

func TestSearch(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.New(t), postgres.Options{})
	th, _ := s.CreateThread(ctx, memory.CreateThreadParams{})
	other, _ := s.CreateThread(ctx, memory.CreateThreadParams{})
	put := func(thread, name, typ, body string) memory.Artifact {
		a, err := s.PutArtifact(ctx, thread, memory.PutArtifactParams{Name: name, Type: typ, Content: []byte(body)})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	runbook := put(th.ID, "deploy-runbook.md", "markdown", "# Deploy\nRollback the canary before the database migration. See https://github.com/relaydev/relay/issues.")
	logs := put(th.ID, "build.log", "text", "compiling packages\nrunning tests\nthe migration step failed twice")
	page := put(th.ID, "page.html", "html", "<p>Café menu: <b>crème brûlée</b></p><script>var secret = 1</script>")
	put(other.ID, "elsewhere.md", "markdown", "rollback migration canary")
	for _, tc := range []struct {
		q     string
		types []string
		want  []string
	}{
		{q: "migration", want: []string{logs.Ref, runbook.Ref}},
		{q: "rollback canary", want: []string{runbook.Ref}},
		{q: `"migration step"`, want: []string{logs.Ref}},
		{q: `"step migration"`},
		{q: "compil*", want: []string{logs.Ref}},
		{q: "runbook OR tests", want: []string{runbook.Ref, logs.Ref}},
		{q: "relaydev", want: []string{runbook.Ref}},
		{q: "creme", want: []string{page.Ref}},
		{q: "secret"},
		{q: "migration", types: []string{"text"}, want: []string{logs.Ref}},
		{q: "the", want: []string{logs.Ref, runbook.Ref}},
		{q: "deploy", want: []string{runbook.Ref}},
		{q: "ru*", want: nil},
		{q: "it's ) ( : & | ! <-> 'x':*"},
	} {
		t.Run(tc.q, func(t *testing.T) {
			hits, err := s.Search(ctx, th.ID, searchQuery(tc.q, tc.types))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hits {
				got = append(got, h.Ref)
				if h.Score <= 0 || h.Name == "" || h.Snippet == "" {
					t.Errorf("hit %+v lacks a score, name or snippet", h)
				}
			}
			if !sameSet(got, tc.want) {
				t.Fatalf("search %q = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
	hits, _ := s.Search(ctx, th.ID, searchQuery("canary", nil))
	if len(hits) != 1 || !strings.Contains(hits[0].Snippet, "**canary**") {
		t.Fatalf("snippet not highlighted: %+v", hits)
	}
	// A name match outranks a body match.
	named := put(th.ID, "failed.md", "markdown", "nothing here")
	hits, _ = s.Search(ctx, th.ID, searchQuery("failed", nil))
	if len(hits) != 2 || hits[0].Ref != named.Ref {
		t.Fatalf("name match not first: %+v", hits)
	}
	if _, err := s.Search(ctx, th.ID, searchQuery(" * \"\" ", nil)); err == nil {
		t.Fatal("a query with no words was accepted")
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

// When the listening connection is killed, the store reconnects and wakes its followers, so
// an event written meanwhile through another daemon is still seen.
func TestListenerReconnects(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	a := open(t, url, postgres.Options{})
	b := open(t, url, postgres.Options{})
	th, _ := b.CreateThread(ctx, memory.CreateThreadParams{})
	wake, cancel := a.Subscribe(th.ID)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var killed int
	if err := c.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`).Scan(&killed); err != nil || killed != 2 {
		t.Fatalf("terminated %d listening connections (%v), want the two stores'", killed, err)
	}
	ev, err := b.AppendEvent(ctx, th.ID, "after.reconnect", map[string]int{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case <-wake:
		case <-deadline:
			t.Fatal("the follower on the store whose listener was killed never saw the event")
		}
		evs, err := a.Events(ctx, th.ID, ev.ID-1, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 1 && evs[0].Type == "after.reconnect" {
			break
		}
	}
	// Listening again: a later event wakes the follower by notification.
	for {
		var n int
		c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %' AND state = 'idle'`).Scan(&n)
		if n == 2 {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("%d stores listening again after 20s", n)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Patches without a base version from two daemons: each daemon's fast path (one statement
// guarded by its cached version) loses to the other's now and then and falls back to the
// locked path; no patch is lost or applied twice, and the thread's state.patched events
// carry consecutive versions in event id order.
func TestPatchesWithoutBaseAcrossDaemons(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	a := open(t, url, postgres.Options{})
	b := open(t, url, postgres.Options{})
	th, err := a.CreateThread(ctx, memory.CreateThreadParams{})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 4, 25
	stores := []*postgres.Store{a, b}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := stores[w%2].PatchState(ctx, th.ID, factPatch(fmt.Sprintf("w%d-%d", w, i)), 0, ""); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, s := range stores {
		st, err := s.State(ctx, th.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Facts []struct{ ID string } `json:"facts"`
		}
		if err := json.Unmarshal(st.Doc, &doc); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, f := range doc.Facts {
			if seen[f.ID] {
				t.Fatalf("fact %s applied twice", f.ID)
			}
			seen[f.ID] = true
		}
		if len(doc.Facts) != writers*each || st.Version != writers*each+1 {
			t.Fatalf("facts %d, version %d; want %d, %d", len(doc.Facts), st.Version, writers*each, writers*each+1)
		}
	}
	evs, err := a.Events(ctx, th.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := 2
	for i, e := range evs {
		if i > 0 && e.ID <= evs[i-1].ID {
			t.Fatalf("event ids out of order: %d after %d", e.ID, evs[i-1].ID)
		}
		if e.Type != memory.EventStatePatched {
			continue
		}
		var d struct{ Version int }
		if err := json.Unmarshal(e.Data, &d); err != nil || d.Version != want {
			t.Fatalf("event %d: version %d, want %d (%v)", e.ID, d.Version, want, err)
		}
		want++
	}
	if want != writers*each+2 {
		t.Fatalf("%d state.patched events, want %d", want-2, writers*each)
	}
}
