package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/memory"
)

// TestPutsDoNotWaitForTheIndexer: with the indexer's writer held (an index commit that never
// ends), puts still commit; the search after them waits for the index and finds them all.
func TestPutsDoNotWaitForTheIndexer(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	tid := newThread(t, st)
	tx, err := st.xw.BeginTx(ctx, nil) // database/sql hands this, the only writer connection, to no one else
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`UPDATE progress SET done = done`); err != nil { // take search.db's write lock
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, w := range []string{"alpha", "bravo", "charlie"} {
		if _, err := st.PutArtifact(pctx, tid, memory.PutArtifactParams{Name: w + ".md", Type: "markdown", Content: []byte("the word " + w)}); err != nil {
			t.Fatalf("put while the index is busy: %v", err)
		}
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"alpha", "bravo", "charlie"} {
		hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: w})
		if err != nil || len(hits) != 1 || hits[0].Name != w+".md" || !strings.Contains(hits[0].Snippet, w) {
			t.Fatalf("search %s: %+v %v", w, hits, err)
		}
	}
}

// TestIndexLagHoldsPuts: past maxThreadIndexLag unindexed bytes of its thread, or
// maxIndexLag bytes in all, a text put waits for the indexer (here until its deadline, the
// indexer being held), and goes through once the index catches up.
func TestIndexLagHoldsPuts(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	tid, other := newThread(t, st), newThread(t, st)
	tx, err := st.xw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() // a failure below must not leave the indexer held
	if _, err := tx.Exec(`UPDATE progress SET done = done`); err != nil {
		t.Fatal(err)
	}
	held := func(thread, what string) {
		t.Helper()
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := st.PutArtifact(short, thread, memory.PutArtifactParams{Name: "held.md", Type: "markdown", Content: []byte("held")})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("put %s: %v, want it held until its deadline", what, err)
		}
	}
	// One artifact to index, so the indexer is stuck on the held writer, and the thread's
	// count past its bound: its puts wait, another thread's go through.
	put(t, st, tid, "first.md", "markdown", "first")
	if n, err := st.IndexPending(ctx); err != nil || n != 1 {
		t.Fatalf("IndexPending with one put held = %d, %v; want 1", n, err)
	}
	st.idx.added(tid, 0, maxThreadIndexLag)
	held(tid, "to a thread past its lag bound")
	bounded, cancelBounded := context.WithTimeout(ctx, 10*time.Second)
	defer cancelBounded()
	if _, err := st.PutArtifact(bounded, other, memory.PutArtifactParams{Name: "other.md", Type: "markdown", Content: []byte("other")}); err != nil {
		t.Fatalf("put to a thread within its bound while another is past its own: %v, want it through at once", err)
	}
	// Past the bound of all threads together, every text put waits.
	st.idx.added(other, 0, maxIndexLag)
	held(other, "past the lag bound of all threads")
	// A binary body is never tokenized: its put neither waits for the index nor adds its
	// size to the lag, and its name is still found once the index catches up.
	before := st.idx.pending.Load()
	if _, err := st.PutArtifact(bounded, tid, memory.PutArtifactParams{Name: "blob.bin", Type: memory.TypeBinary, Content: make([]byte, 100<<10)}); err != nil {
		t.Fatalf("binary put past the lag bound: %v, want it through at once", err)
	}
	if got := st.idx.pending.Load() - before; got != int64(len("blob.bin")) {
		t.Fatalf("a 100 KB binary put added %d bytes to the index lag, want only its name's %d", got, len("blob.bin"))
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	// The indexer finds nothing to do, squares its count and lets the put through.
	if _, err := st.PutArtifact(ctx, tid, memory.PutArtifactParams{Name: "free.md", Type: "markdown", Content: []byte("free")}); err != nil {
		t.Fatal(err)
	}
	if hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: "free"}); err != nil || len(hits) != 1 {
		t.Fatalf("search: %v %v", refs(hits), err)
	}
	if hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: "blob"}); err != nil || len(hits) != 1 {
		t.Fatalf("search by a binary artifact's name: %v %v", refs(hits), err)
	}
}

// TestSearchIndexRebuilt: search.db is derived data. Deleted, or copied from another store,
// it is rebuilt from relay.db at open; a store reopened keeps using its own.
func TestSearchIndexRebuilt(t *testing.T) {
	ctx := context.Background()
	homeA, homeB := t.TempDir(), t.TempDir()
	open := func(home string) *SQLite {
		st, err := OpenSQLite(home, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	a, b := open(homeA), open(homeB)
	ta, tb := newThread(t, a), newThread(t, b)
	put(t, a, ta, "a.md", "markdown", "zebra from a")
	put(t, b, tb, "b.md", "markdown", "zebra from b")
	for _, c := range []struct {
		st  *SQLite
		tid string
	}{{a, ta}, {b, tb}} {
		if hits, err := c.st.Search(ctx, c.tid, memory.SearchQuery{Query: "zebra"}); err != nil || len(hits) != 1 {
			t.Fatalf("search: %v %v", refs(hits), err)
		}
	}
	a.Close()
	b.Close()
	// B's index file put in A's home: A must not use it.
	for _, suf := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(homeA, SearchDBFile+suf))
		if data, err := os.ReadFile(filepath.Join(homeB, SearchDBFile+suf)); err == nil {
			if err := os.WriteFile(filepath.Join(homeA, SearchDBFile+suf), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	a = open(homeA)
	hits, err := a.Search(ctx, ta, memory.SearchQuery{Query: "zebra"})
	if err != nil || len(hits) != 1 || hits[0].Name != "a.md" || !strings.Contains(hits[0].Snippet, "from a") {
		t.Fatalf("A with B's index: %+v %v", hits, err)
	}
	a.Close()
	for _, suf := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(homeA, SearchDBFile+suf))
	}
	a = open(homeA)
	hits, err = a.Search(ctx, ta, memory.SearchQuery{Query: "zebra"})
	if err != nil || len(hits) != 1 || hits[0].Name != "a.md" {
		t.Fatalf("A with its index deleted: %+v %v", hits, err)
	}
	put(t, a, ta, "a2.md", "markdown", "zebra again")
	a.Close()
	a = open(homeA)
	defer a.Close()
	if hits, err := a.Search(ctx, ta, memory.SearchQuery{Query: "zebra"}); err != nil || len(hits) != 2 {
		t.Fatalf("A reopened: %v %v", refs(hits), err)
	}
}

// TestDeferredCommitSkipsSync: a batch of only deferred writes commits with
// synchronous=NORMAL (no fsync); any durable write in it, and every write after, commits FULL.
func TestDeferredCommitSkipsSync(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	syncOf := func(ctx context.Context) int { // -1: the write failed
		mode := -1
		if err := st.WriteTx(ctx, func(tx Tx) error {
			return tx.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&mode)
		}); err != nil {
			return -1
		}
		return mode
	}
	const normal, full = 1, 2
	if m := syncOf(ctx); m != full {
		t.Fatalf("durable write: synchronous=%d, want FULL", m)
	}
	if m := syncOf(memory.Deferred(ctx)); m != normal {
		t.Fatalf("deferred write: synchronous=%d, want NORMAL", m)
	}
	if m := syncOf(ctx); m != full {
		t.Fatalf("durable write after a deferred one: synchronous=%d, want FULL", m)
	}
	// A batch of one deferred and one durable write is durable: run both as one batch by
	// queueing them behind a write that holds the writer.
	hold, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = st.WriteTx(ctx, func(tx Tx) error { close(hold); <-release; return nil })
	}()
	<-hold
	modes := make(chan int, 2)
	for _, c := range []context.Context{memory.Deferred(ctx), ctx} {
		go func() { modes <- syncOf(c) }()
	}
	for { // both queued before the writer is released
		st.qmu.Lock()
		n := len(st.queue)
		st.qmu.Unlock()
		if n == 2 {
			break
		}
		runtime.Gosched()
	}
	close(release)
	if a, b := <-modes, <-modes; a != full || b != full {
		t.Fatalf("mixed batch: synchronous=%d,%d, want FULL for both", a, b)
	}
}

// copyWAL copies st's WAL as far as readers allow (a PASSIVE checkpoint, as the
// checkpointer's) and returns its busy flag, the WAL's length in frames and those copied.
func copyWAL(t *testing.T, st *SQLite) (busy, frames, done int) {
	t.Helper()
	if err := st.ck.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &done); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	return busy, frames, done
}

// walRestarts counts the rewinds restartWAL has written.
func walRestarts(t *testing.T, st *SQLite) int {
	t.Helper()
	var n int
	if err := st.r.QueryRow(`SELECT coalesce((SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = 'wal_restarts'), 0)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCheckpointerConnectionWorks: the background checkpointer's connection opens and runs
// its checkpoint (its DSN once carried an empty pragma, every checkpoint failed, and the
// writer checkpointed 8,000 pages at a time inside commits instead).
func TestCheckpointerConnectionWorks(t *testing.T) {
	st := openStore(t)
	put(t, st, newThread(t, st), "a.md", "markdown", "some text")
	if busy, log, done := copyWAL(t, st); busy != 0 || done != log {
		t.Fatalf("checkpoint: busy %d, %d of %d frames", busy, done, log)
	}
}

// TestQuietCheckpointKeepsTheRewind: after deferred commits alone (searches' bookkeeping)
// the checkpoint copies the WAL without holding the writer, yet no request's commit may
// rewind the WAL, as the rewind fsyncs. A commit after a complete copy rewinds it (the
// control); with pinWAL's reader opened before the copy it appends instead; and
// checkpoint(true) then copies
// the rest and rewinds the WAL with its own write.
func TestQuietCheckpointKeepsTheRewind(t *testing.T) {
	st := openStore(t)
	// Nothing else may read or copy the WAL meanwhile: a background reader's snapshot holds
	// a copy back and keeps any commit from rewinding, which the control below asserts.
	stopCheckpointer(st)
	st.stopReaders()
	ctx := memory.Deferred(context.Background())
	tid := newThread(t, st)
	n := 0
	// search results, as searches write them
	commit := func() {
		t.Helper()
		n++
		if _, err := st.PutArtifact(ctx, tid, memory.PutArtifactParams{Name: fmt.Sprintf("n%d.md", n), Type: "markdown", Content: []byte(fmt.Sprintf("note %d", n)),
			Capability: memory.SearchCapability}); err != nil {
			t.Fatal(err)
		}
	}
	// walFrames copies the WAL (as far as readers allow) and returns its length in frames.
	walFrames := func() int {
		t.Helper()
		busy, frames, done := copyWAL(t, st)
		t.Logf("checkpoint: busy %d, %d of %d frames", busy, done, frames)
		return frames
	}
	for range 5 {
		commit()
	}
	long := walFrames()
	commit()
	if got := walFrames(); got >= long {
		t.Fatalf("control: a commit after a complete copy left %d frames (had %d): it did not rewind the WAL", got, long)
	}
	for range 5 {
		commit()
	}
	// pinned before the copy, as checkpoint pins it: the reader's snapshot uses the WAL
	pin, err := st.pinWAL(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	long = walFrames()
	commit()
	if got := walFrames(); got <= long {
		pin.Rollback()
		t.Fatalf("with the WAL pinned a commit left %d frames (had %d): it rewound the WAL", got, long)
	}
	pin.Rollback()
	before := walRestarts(t, st)
	commit()
	st.checkpoint(true)
	if after := walRestarts(t, st); after != before+1 {
		t.Fatalf("wal_restarts %d -> %d: the quiet checkpoint did not rewind the WAL itself", before, after)
	}
	if got := walFrames(); got > long {
		t.Fatalf("after the quiet checkpoint the WAL holds %d frames: it was not rewound", got)
	}
}

// TestCheckpointRewindsUnderWrites: a commit that lands between a copy of the WAL and the
// rewind must not keep the checkpoint from rewinding it. The rewind was tried on a WAL
// that such a commit had made longer than the copy, so SQLite appended instead: under a
// stream of sequential patches (a commit lands during nearly every copy) the WAL grew by
// 20 MB between rewinds. When writes outpace the copies, the checkpoint gives up rather
// than hold the writer through a long one.
func TestCheckpointRewindsUnderWrites(t *testing.T) {
	st := openStore(t)
	stopCheckpointer(st)
	st.stopReaders()
	ctx := context.Background()
	tid := newThread(t, st)
	v := 1
	patch := func(n int) {
		t.Helper()
		for range n {
			if _, err := st.PatchState(ctx, tid, factPatch(v), v, ""); err != nil {
				t.Fatal(err)
			}
			v++
		}
	}
	// walFrames copies the WAL to its end and returns its length in frames
	walFrames := func() int {
		t.Helper()
		busy, frames, done := copyWAL(t, st)
		if busy != 0 || done != frames {
			t.Fatalf("checkpoint: busy %d, %d of %d frames", busy, done, frames)
		}
		return frames
	}
	walFrames()
	patch(1) // the first commit after a complete copy rewinds the WAL
	one := walFrames()

	t.Run("a commit after the copy", func(t *testing.T) {
		patch(20)
		long := walFrames()
		copies := 0
		st.afterCopy = func() { copies++; patch(1) }
		st.checkpoint(false)
		st.afterCopy = nil
		if copies == 0 {
			t.Fatal("the checkpoint made no copy without the writer")
		}
		// The commit after the copy rewound the WAL itself; the rewind must then copy it
		// and rewind again, leaving only the rewind's own write.
		if got := walFrames(); got >= one {
			t.Fatalf("after the checkpoint the WAL holds %d frames (a patch writes %d, %d before): the commit after the copy stayed, it was not rewound", got, one, long)
		}
	})
	t.Run("writes outpace the copies", func(t *testing.T) {
		before, copies := walRestarts(t, st), 0
		st.afterCopy = func() { copies++; patch(catchUpCommits + 1) }
		st.checkpoint(false)
		st.afterCopy = nil
		if copies != catchUpCopies {
			t.Errorf("%d copies without the writer, want %d", copies, catchUpCopies)
		}
		if after := walRestarts(t, st); after != before {
			t.Errorf("wal_restarts %d -> %d: the checkpoint copied a long WAL under the writer", before, after)
		}
	})
}

// stopCheckpointer stops s's background checkpointer for a test whose writes or WAL
// copies it would race with (its WAL restart is a write batch of its own); Close still works.
func stopCheckpointer(s *SQLite) {
	close(s.ckQuit)
	<-s.ckDone
	s.ckQuit = make(chan struct{})
}

// TestIdleMerge: once the indexer has had nothing to index for idleMergeAfter, it merges
// the index's segments into one (a merge step then finds nothing to do), and a search finds
// exactly the artifacts holding its word, before the merge as after it.
func TestIdleMerge(t *testing.T) {
	// restored after the store's Close (cleanups run last first): its indexer reads them
	d, n := idleMergeAfter, mergeMinBytes
	t.Cleanup(func() { idleMergeAfter, mergeMinBytes = d, n })
	idleMergeAfter, mergeMinBytes = time.Millisecond, 32<<10
	st := openStore(t)
	tid := newThread(t, st)
	ctx := context.Background()
	var want []string    // the artifacts holding "kind3"
	for i := range 150 { // puts gathered in batches: more than one segment
		body := fmt.Sprintf("note %d of kind%d\n%s", i, i%7, filler(2000)) // 300 KB: over one batch
		ref := put(t, st, tid, fmt.Sprintf("n%03d.md", i), "markdown", body)
		if i%7 == 3 {
			want = append(want, ref)
		}
	}
	found := func() []string {
		t.Helper()
		hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: "kind3", Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		var refs []string
		for _, h := range hits {
			refs = append(refs, h.Ref)
		}
		slices.Sort(refs)
		return refs
	}
	slices.Sort(want)
	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	// the indexer runs at nice 19: on a loaded machine it may take longer than a search
	// waits for it (searchWait), so the test waits for it itself
	for st.idx.waiting.Load() > 0 {
		if time.Now().After(deadline.Add(-5 * time.Second)) {
			t.Fatalf("%d artifacts still unindexed", st.idx.waiting.Load())
		}
		runtime.Gosched()
	}
	if got := found(); !slices.Equal(got, want) {
		t.Fatalf("before the merge: %d hits, want the %d artifacts holding the word", len(got), len(want))
	}
	for st.idx.merges.Load() == 0 {
		if time.Now().After(deadline.Add(-5 * time.Second)) {
			t.Fatalf("no idle merge (%d bytes indexed since the last)", st.idx.sinceMerge.Load())
		}
		runtime.Gosched()
	}
	if more, err := st.mergeStep(ctx); err != nil || more {
		t.Fatalf("after the idle merge a merge step did work (%v, %v): the index was not one segment", more, err)
	}
	if got := found(); !slices.Equal(got, want) {
		t.Fatalf("after the merge: %d hits, want the %d artifacts holding the word", len(got), len(want))
	}
}

// TestIndexAutomerge: the index merges a level once indexAutomerge segments wait there,
// in a new search.db and in one an older relay made (FTS5's own 4).
func TestIndexAutomerge(t *testing.T) {
	home := t.TempDir()
	automerge := func(st *SQLite) int {
		t.Helper()
		var v int
		if err := st.xr.QueryRow(`SELECT v FROM artifact_fts_config WHERE k = 'automerge'`).Scan(&v); err != nil {
			t.Fatalf("automerge is not set: %v", err)
		}
		return v
	}
	st, err := OpenSQLite(home, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // Close is idempotent; this closes whichever is open
	if got := automerge(st); got != indexAutomerge {
		t.Fatalf("automerge %d in a new index, want %d", got, indexAutomerge)
	}
	if _, err := st.xw.Exec(`INSERT INTO artifact_fts(artifact_fts, rank) VALUES ('automerge', 4)`); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = OpenSQLite(home, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := automerge(st); got != indexAutomerge {
		t.Fatalf("automerge %d after reopening an index set to 4, want %d", got, indexAutomerge)
	}
}

// TestMergeWaitsForWrites: the idle merge does not start, nor take another step, within
// idleMergeAfter of a durable write (a burst of puts of any type, say binary ones that the
// indexer never sees), unless forced (held back past maxMergeDelay), while bookkeeping (a
// search's result and call log) does not hold it.
func TestMergeWaitsForWrites(t *testing.T) {
	d, n := idleMergeAfter, mergeMinBytes
	t.Cleanup(func() { idleMergeAfter, mergeMinBytes = d, n })
	idleMergeAfter, mergeMinBytes = time.Hour, 32<<10 // the indexer never merges on its own here
	st := openStore(t)
	tid := newThread(t, st)
	ctx := context.Background()
	for i := range 150 {
		put(t, st, tid, fmt.Sprintf("n%03d.md", i), "markdown", fmt.Sprintf("note %d\n%s", i, filler(2000)))
	}
	if _, err := st.Search(ctx, tid, memory.SearchQuery{Query: "note"}); err != nil { // waits for the index
		t.Fatal(err)
	}
	if st.sinceDurable() >= idleMergeAfter {
		t.Fatalf("the puts left no durable write time: %v since", st.sinceDurable())
	}
	// A kick left by the puts or the search makes the merge give way to the indexer (and
	// report it did not stop for a write): take it, as the indexer would have.
	drainKicks := func() {
		for {
			select {
			case <-st.idx.kick:
			default:
				return
			}
		}
	}
	drainKicks()
	if wait := st.mergeWhileIdle(false); wait <= 0 || wait > idleMergeAfter || st.idx.merges.Load() != 0 {
		t.Fatalf("the merge ran within %v of a put (or asked to wait %v)", idleMergeAfter, wait)
	}
	before := st.lastDurable.Load()
	if _, err := st.RecordCall(memory.Deferred(ctx), memory.CallRecord{Call: memory.CapabilityCall{ThreadID: tid, Capability: "c",
		Args: []byte(`{}`), At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if st.lastDurable.Load() != before {
		t.Fatal("a call's deferred bookkeeping counted as a durable write")
	}
	// Held back past maxMergeDelay, the merge runs beside the writes.
	drainKicks()
	if wait := st.mergeWhileIdle(true); wait != 0 || st.idx.merges.Load() != 1 {
		t.Fatalf("a forced merge did not run to its end beside a recent write (waits %v, %d merges)", wait, st.idx.merges.Load())
	}
	// The next one is due once enough is indexed again; after the writes' pause it runs.
	for i := range 150 {
		put(t, st, tid, fmt.Sprintf("m%03d.md", i), "markdown", fmt.Sprintf("note %d\n%s", i, filler(2000)))
	}
	if _, err := st.Search(ctx, tid, memory.SearchQuery{Query: "note"}); err != nil {
		t.Fatal(err)
	}
	st.lastDurable.Store(-int64(2 * idleMergeAfter)) // the writes' pause is over
	drainKicks()
	if wait := st.mergeWhileIdle(false); wait != 0 || st.idx.merges.Load() != 2 {
		t.Fatalf("after the pause the merge did not run to its end (waits %v, %d merges)", wait, st.idx.merges.Load())
	}
}

// TestMergeHold: writes hold a due merge back for maxMergeDelay from the first time they
// did, however often they do again; a merge that ran (or gave way to the indexer) starts
// the count over.
func TestMergeHold(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var h mergeHold
	if h.over(t0.Add(time.Hour)) {
		t.Fatal("a merge nothing held back is forced")
	}
	h.start(t0)
	h.start(t0.Add(maxMergeDelay / 2)) // held again: the count goes on from t0
	if h.over(t0.Add(maxMergeDelay - time.Millisecond)) {
		t.Fatal("forced before maxMergeDelay")
	}
	if !h.over(t0.Add(maxMergeDelay)) {
		t.Fatal("not forced after maxMergeDelay of writes")
	}
	h = mergeHold{} // the merge ran
	h.start(t0.Add(maxMergeDelay))
	if h.over(t0.Add(maxMergeDelay + time.Second)) {
		t.Fatal("a new hold counts from the old one")
	}
}

// TestNewestIndexable: what a search must wait for is read from relay.db once, then kept
// up to date by puts; a read that a put raced is not kept, and an import forgets the thread.
func TestNewestIndexable(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	tid := newThread(t, st)
	sqlNewest := func() int64 {
		t.Helper()
		var r sql.NullInt64
		if err := st.r.QueryRow(`SELECT max(rowid) FROM artifacts WHERE thread_id = ? AND fts_rowid IS NULL`, tid).Scan(&r); err != nil {
			t.Fatal(err)
		}
		return r.Int64
	}
	if got, err := st.newestIndexable(ctx, tid); err != nil || got != 0 {
		t.Fatalf("empty thread: %d, %v", got, err)
	}
	for i := range 3 {
		put(t, st, tid, fmt.Sprintf("n%d.md", i), "markdown", fmt.Sprintf("note %d", i))
		got, err := st.newestIndexable(ctx, tid)
		if want := sqlNewest(); err != nil || got != want || want == 0 {
			t.Fatalf("after put %d: %d, %v; relay.db says %d", i, got, err, want)
		}
	}
	// A search's own result is never indexed, so it is not waited for.
	before, _ := st.newestIndexable(ctx, tid)
	if _, err := st.PutArtifact(ctx, tid, memory.PutArtifactParams{Type: memory.TypeJSON, Content: []byte(`{"hits":[]}`), Capability: memory.SearchCapability}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.newestIndexable(ctx, tid); got != before {
		t.Fatalf("a search result moved the newest indexable artifact from %d to %d", before, got)
	}

	// A put recorded while the read runs: the read's answer is used once, not kept.
	x := newIndexer() // the cache alone, beside no store
	reads := 0
	read := func() (int64, error) {
		reads++
		x.added("other", 1, 0)
		return 7, nil
	}
	if got, _ := x.newestOr("raced", read); got != 7 {
		t.Fatalf("raced read answered %d", got)
	}
	if x.newestOr("raced", read); reads != 2 {
		t.Fatalf("a raced read was kept (%d reads)", reads)
	}
	x.newestOr("quiet", func() (int64, error) { return 5, nil })
	x.added("quiet", 9, 0)
	if got, _ := x.newestOr("quiet", read); got != 9 {
		t.Fatalf("after a put of rowid 9: %d", got)
	}
	x.forget("quiet")
	if got, _ := x.newestOr("quiet", func() (int64, error) { return 3, nil }); got != 3 {
		t.Fatalf("after forget: %d, want a new read", got)
	}
}
