package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relaydev/relay/internal/lowprio"
	"github.com/relaydev/relay/internal/memory"
)

// Search indexing runs behind the put, in a database file of its own (search.db beside
// relay.db). Tokenizing text costs about 50 µs per KB in this pure-Go SQLite; when the
// index lived in relay.db its transactions held the store's one writer, so a profile of
// 100 KB text puts showed puts blocked behind index commits for over half their time (and
// every index commit paid an fsync). Now a put commits the artifact to relay.db with
// fts_rowid NULL (to index) and returns; the indexer reads new artifacts in rowid order
// and indexes them in search.db with its own writer, never touching relay.db's lock.
//
// search.db holds only derived data: its progress mark (the last relay.db artifact rowid
// it covers) commits with the index rows, so it is consistent after any crash, and it is
// written with synchronous=NORMAL (no fsync per index commit; a power loss rolls the mark
// back and the lost tail is indexed again). A search first waits until the indexer passed
// the thread's last put (waitIndexed), so a caller always finds what it stored before it
// searched. Puts of text wait while more than maxThreadIndexLag bytes of their thread, or
// maxIndexLag bytes in all, are unindexed, which bounds that wait.

const (
	// A search waits for the batch in flight before its own thread's, so a batch stays
	// small in bytes: 1 MB batches made put→found 212 ms on average behind a backlog (56 ms
	// at 256 KB, bench/memory). In documents it may be large: each commit adds a segment
	// that merges add to, so 2 KB notes in batches of 128 instead of 32 took 16 % less of
	// the index's CPU (the same 256 KB bound holds them).
	indexBatchDocs  = 128       // artifacts per index transaction at most
	indexBatchBytes = 256 << 10 // and about this much text per transaction
	// indexCoalesce is how long the indexer lets puts gather before it indexes less than a
	// batch when no search waits: an index commit flushes a segment and merges, which cost
	// more than tokenizing a 2 KB note, so one commit per put spent a third of the
	// indexer's CPU there (gathering: 13 % less CPU for 3,000 2 KB puts, BenchmarkPutArtifact2KB).
	// 100 ms gathers most of a batch of notes put one at a time (~1,000/s).
	// A search never waits for it: it asks for its thread at once.
	indexCoalesce = 100 * time.Millisecond
	// indexAutomerge is FTS5's automerge: how many segments of a level wait before they are
	// merged into one of the next level. FTS5's 4 rewrites each document at every level;
	// at 8, indexing 10k notes of 2 KB took 24-28 % less CPU (with 128-document batches;
	// a query then seeks more segments until the idle merge below makes them one: a miss
	// 74 µs instead of 51 right after the load).
	indexAutomerge = 8
	// maxThreadIndexLag bounds how far a thread's index trails its puts, in the bytes it
	// has to tokenize: past it a text put to the thread waits for the indexer
	// (backpressure). This pure-Go FTS5 indexes 8-13 MB/s on one core of a 2-core machine,
	// a tenth of the rate one connection can put 100 KB texts at, so the bound is what a
	// burst can put at full speed: 128 MB takes 10-16 s to index, the longest a search
	// waits for its own thread's puts (a search's thread is indexed first, so other
	// threads' backlog never delays it).
	maxThreadIndexLag = 128 << 20
	// maxIndexLag bounds the backlog of all threads together, so the index catches up
	// within a minute of a burst (and of a restart that finds one) however many threads it
	// spread over. Past either bound, puts run at the indexing rate.
	maxIndexLag = 512 << 20
	// searchWait bounds how long a search waits for the indexer to reach its thread; past
	// it the search answers from the index as it is. It is above the time maxThreadIndexLag
	// takes to index, so read-your-writes holds under any load the bound admits.
	searchWait = 30 * time.Second
	// SearchDBFile is the search index's file in the store's directory.
	SearchDBFile = "search.db"
	// indexNice is the indexer thread's nice value: puts and searches get the CPU first.
	indexNice = 19
	// mergeStepPages is how much of the index one step of the idle merge rewrites (~25 ms
	// on a 2-core machine): a put or a search that wants the indexer waits at most that.
	mergeStepPages = 256
	// mergeShare: the idle merge is due once the text indexed since the last one is at
	// least mergeMinBytes and a mergeShare-th of the index's size, so the rewrite stays a
	// bounded multiple of what was indexed.
	mergeShare = 4
)

// idleMergeAfter is how long the indexer waits with nothing to index, and the store with no
// durable write (a put or a patch; a search's bookkeeping does not count), before it
// merges the index's segments, and mergeMinBytes the least text indexed since the last
// merge that makes another due (variables for tests). The wait is short because an agent
// searches right after it writes: at 2 s, the searches that followed a burst of 1,000
// notes through `relay mcp` ran on the unmerged index, seeking every segment (over a
// third of the search query's CPU in a profile). How often a merge runs is mergeDue's
// bound, not this wait's. A merge step yields to a put or a search that needs the
// indexer, and the merge stops for any durable write and resumes in the next pause: a
// burst of binary puts, which the indexer never sees, ran beside the merge's rewriting.
var (
	idleMergeAfter = 250 * time.Millisecond
	mergeMinBytes  = int64(1 << 20)
)

// maxMergeDelay bounds how long durable writes hold a due merge back: a steady stream of
// patches or binary puts, never 250 ms apart, would otherwise keep it back for good, and
// every search seeks every segment meanwhile. Past it the merge runs beside the writes.
const maxMergeDelay = 10 * time.Second

// searchSchemaVersion is search.db's layout (PRAGMA user_version); a file of another
// version, or one that belongs to another relay.db, is deleted and rebuilt.
const searchSchemaVersion = 2

// searchSchema is the index: docs maps an index rowid ((thread number << 32) + sequence in
// the thread, so the thread filter is a rowid range) to its artifact; artifact_fts is an
// external-content FTS5 index over the view src, whose body column reads the artifact's
// text from relay.db through relay_artifact_text (created at open: it names this open's
// token), so the index keeps no second copy of the text.
const searchSchema = `
CREATE TABLE IF NOT EXISTS docs (
	fts_rowid INTEGER PRIMARY KEY,
	src       INTEGER NOT NULL UNIQUE, -- the artifact's rowid in relay.db
	ref       TEXT NOT NULL,
	name      TEXT NOT NULL,
	ty        TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS fts_threads (
	thread_id TEXT PRIMARY KEY,
	n         INTEGER NOT NULL UNIQUE,
	seq       INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS progress (
	id    INTEGER PRIMARY KEY CHECK (id = 1),
	store TEXT NOT NULL,
	done  INTEGER NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS artifact_fts USING fts5(name, body, ty,
	content = 'src', content_rowid = 'fts_rowid', ` + searchTokenizer + `, prefix = '3 4');
`

// artifactTextFunc is relay_artifact_text(token, ref): the text of relay.db's artifact ref
// as the index saw it, for snippets. token names the open store (search.db's view is
// recreated with a fresh one at every open), so stores open side by side in one process
// each read their own relay.db.
const artifactTextFunc = "relay_artifact_text"

var openStores sync.Map // token → *SQLite

type indexer struct {
	kick chan struct{}
	quit chan struct{}
	done chan struct{}

	sinceMerge atomic.Int64 // bytes indexed since the index was last merged into one segment
	merges     atomic.Int64 // idle merges completed (tests wait on it)

	mark    atomic.Int64 // relay.db artifact rowid up to which the index is complete
	pending atomic.Int64 // bytes of artifacts put but not yet indexed (about)
	waiting atomic.Int64 // and how many artifacts those are

	mu       sync.Mutex
	progress chan struct{}    // closed (and replaced) after every index commit
	lastErr  error            // of the last batch: while set, puts are not held back
	prefer   map[string]int   // threads searches are waiting for, indexed first
	ahead    map[string]int64 // thread → rowid through which it was indexed ahead of mark
	behind   map[string]int64 // thread → its part of pending (threads with none are absent)
	// newest holds, for threads searched since the store opened, the rowid of the thread's
	// newest artifact the index must hold (waitIndexed reads relay.db for the others);
	// puts counts the puts recorded, so a read that raced one is not kept. This daemon is
	// relay.db's only writer, as its other caches assume.
	newest map[string]int64
	puts   uint64
}

// maxNewest bounds the threads newest remembers (cleared when full).
const maxNewest = 4096

func newIndexer() *indexer {
	return &indexer{kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		progress: make(chan struct{}), prefer: map[string]int{}, ahead: map[string]int64{}, behind: map[string]int64{},
		newest: map[string]int64{}}
}

// added counts an artifact of n bytes a put of thread left to index, committed as rowid;
// a put calls it before it is acknowledged.
func (x *indexer) added(thread string, rowid, n int64) {
	x.pending.Add(n)
	x.waiting.Add(1)
	x.mu.Lock()
	x.behind[thread] += n
	x.puts++
	if r, ok := x.newest[thread]; ok && rowid > r {
		x.newest[thread] = rowid
	}
	x.mu.Unlock()
}

// forget drops what newest holds for thread, whose artifacts changed other than by a put
// (an import).
func (x *indexer) forget(thread string) {
	x.mu.Lock()
	x.puts++
	delete(x.newest, thread)
	x.mu.Unlock()
}

// indexed takes docs artifacts of n bytes the indexer tokenized off the counts.
func (x *indexer) indexed(thread string, n, docs int64) {
	x.pending.Add(-n)
	x.waiting.Add(-docs)
	x.mu.Lock()
	if left := x.behind[thread] - n; left > 0 {
		x.behind[thread] = left
	} else {
		delete(x.behind, thread)
	}
	x.mu.Unlock()
}

// lagging reports whether a text put to thread must wait for the indexer, and the channel
// the indexer closes at its next commit. Not while the indexer fails: a broken index must
// not stop writes.
func (x *indexer) lagging(thread string) (bool, <-chan struct{}) {
	x.mu.Lock()
	defer x.mu.Unlock()
	over := x.pending.Load() > maxIndexLag || x.behind[thread] > maxThreadIndexLag
	return over && x.lastErr == nil, x.progress
}

// preferred returns a thread a search is waiting for, if any.
func (x *indexer) preferred() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	for id := range x.prefer {
		return id
	}
	return ""
}

func (x *indexer) want(id string, on bool) {
	x.mu.Lock()
	if on {
		x.prefer[id]++
	} else if x.prefer[id]--; x.prefer[id] <= 0 {
		delete(x.prefer, id)
	}
	x.mu.Unlock()
}

// covers reports whether the index has every artifact of thread up to rowid.
func (x *indexer) covers(thread string, rowid int64) bool {
	if x.mark.Load() >= rowid {
		return true
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.ahead[thread] >= rowid
}

// wake asks the indexer to look for new artifacts; it never blocks.
func (x *indexer) wake() {
	select {
	case x.kick <- struct{}{}:
	default:
	}
}

func (x *indexer) progressed() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.progress
}

func (x *indexer) signal(err error) {
	x.mu.Lock()
	close(x.progress)
	x.progress = make(chan struct{})
	x.lastErr = err
	x.mu.Unlock()
}

// openSearchDB opens (creating or rebuilding when needed) search.db for the store whose
// relay.db carries storeID, and recreates the content view for this open's token.
func (s *SQLite) openSearchDB(storeID string) error {
	path := filepath.Join(s.home, SearchDBFile)
	for attempt := 0; ; attempt++ {
		err := s.tryOpenSearchDB(path, storeID)
		if err == nil {
			return nil
		}
		if attempt > 0 {
			return fmt.Errorf("open search index %s: %w", path, err)
		}
		// The index is derived data: a damaged or foreign one is dropped and rebuilt.
		s.closeSearchDB()
		for _, suf := range []string{"", "-wal", "-shm"} {
			if rerr := os.Remove(path + suf); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				return fmt.Errorf("open search index %s: %w (and removing it failed: %v)", path, err, rerr)
			}
		}
	}
}

// errRebuild marks a search.db that must be rebuilt from relay.db.
var errRebuild = errors.New("the search index belongs to another store or layout")

func (s *SQLite) tryOpenSearchDB(path, storeID string) error {
	if err := ensurePrivate(path); err != nil {
		return err
	}
	dsn := func(extra ...string) string {
		q := url.Values{}
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)") // derived data: see the comment at the top
		q.Add("_pragma", "busy_timeout(10000)")
		for _, e := range extra {
			q.Add("_pragma", e)
		}
		return "file:" + path + "?" + q.Encode()
	}
	xw, err := sql.Open("sqlite", dsn())
	if err != nil {
		return err
	}
	xw.SetMaxOpenConns(1)
	xw.SetConnMaxIdleTime(0)
	s.xw = xw
	xr, err := sql.Open("sqlite", dsn("query_only(1)", fmt.Sprintf("cache_size(%d)", -readerCacheKB)))
	if err != nil {
		return err
	}
	xr.SetMaxOpenConns(8)
	xr.SetMaxIdleConns(idleReaders)
	xr.SetConnMaxIdleTime(30 * time.Second)
	s.xr = xr

	ctx := context.Background()
	var version int
	if err := xw.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return err
	}
	if version != 0 && version != searchSchemaVersion {
		return errRebuild
	}
	var maxRowid int64
	if err := s.r.QueryRowContext(ctx, `SELECT coalesce(max(rowid), 0) FROM artifacts`).Scan(&maxRowid); err != nil {
		return err
	}
	tok := make([]byte, 12)
	rand.Read(tok)
	s.token = hex.EncodeToString(tok)
	tx, err := xw.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, searchSchema); err != nil {
		return err
	}
	// stored in the index's own config table; set at every open so an older search.db gets it
	if _, err := tx.ExecContext(ctx, `INSERT INTO artifact_fts(artifact_fts, rank) VALUES ('automerge', ?)`, indexAutomerge); err != nil {
		return err
	}
	var store string
	var mark int64
	switch err := tx.QueryRowContext(ctx, `SELECT store, done FROM progress WHERE id = 1`).Scan(&store, &mark); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO progress(id, store, done) VALUES (1, ?, 0)`, storeID); err != nil {
			return err
		}
		store = storeID
	case err != nil:
		return err
	}
	if store != storeID || mark > maxRowid { // another relay.db, or one restored from an older copy
		return errRebuild
	}
	// The token is hex this process made, so it is safe to splice into the view.
	if _, err := tx.ExecContext(ctx, `DROP VIEW IF EXISTS src;
		CREATE VIEW src AS SELECT fts_rowid, name, `+artifactTextFunc+`('`+s.token+`', ref) AS body, ty FROM docs;
		PRAGMA user_version = `+fmt.Sprint(searchSchemaVersion)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.idx.mark.Store(mark)
	// What a previous run left unindexed, costed as the puts cost it (indexCost).
	rows, err := s.r.QueryContext(ctx, `SELECT rowid, thread_id, type, size, name FROM artifacts WHERE rowid > ? AND fts_rowid IS NULL`, mark)
	if err != nil {
		return err
	}
	for rows.Next() {
		var thread, typ, name string
		var rowid, size int64
		if err := rows.Scan(&rowid, &thread, &typ, &size, &name); err != nil {
			rows.Close()
			return err
		}
		s.idx.added(thread, rowid, indexCost(typ, size, name))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, q := range []string{sqlNextSeq, sqlIndexDoc, sqlIndexRow, sqlIndexMark, sqlIndexed} {
		st, err := xw.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", q, err)
		}
		s.xstmts[q] = st
	}
	openStores.Store(s.token, s)
	return nil
}

func (s *SQLite) closeSearchDB() error {
	if s.token != "" {
		openStores.Delete(s.token)
	}
	for q, st := range s.xstmts {
		st.Close()
		delete(s.xstmts, q)
	}
	s.xrstmts.close()
	var errs []error
	if s.xr != nil {
		errs = append(errs, s.xr.Close())
		s.xr = nil
	}
	if s.xw != nil {
		errs = append(errs, s.xw.Close())
		s.xw = nil
	}
	return errors.Join(errs...)
}

// artifactText is relay_artifact_text for the store of token.
func artifactText(token, ref string) (string, error) {
	v, ok := openStores.Load(token)
	if !ok {
		return "", nil // a stale view (another open): no snippet rather than a failed search
	}
	return v.(*SQLite).indexedText(context.Background(), ref), nil
}

// indexedText is the text of relay.db's artifact ref as the index saw it; "" when the
// artifact is missing or unreadable (the hit then has no snippet, but stands).
func (s *SQLite) indexedText(ctx context.Context, ref string) string {
	texts, err := s.indexedTexts(ctx, []string{ref})
	if err != nil {
		return ""
	}
	return texts[0]
}

// runIndexer indexes new artifacts until the store closes, and merges the index while it
// has nothing to index.
func (s *SQLite) runIndexer() {
	x := s.idx
	defer close(x.done)
	lowprio.Thread(indexNice)
	idle := time.NewTimer(idleMergeAfter)
	idle.Stop()
	defer idle.Stop()
	var held mergeHold
	for {
		select {
		case <-x.kick:
		case <-idle.C:
			now := time.Now()
			if wait := s.mergeWhileIdle(held.over(now)); wait > 0 { // puts or patches are still coming
				held.start(now)
				idle.Reset(wait)
			} else {
				held = mergeHold{}
			}
			continue
		case <-x.quit:
			return
		}
		idle.Stop()
		if !x.gather() {
			return
		}
		for {
			n, err := s.indexBatch(context.Background(), x.preferred())
			x.signal(err)
			if err != nil || n == 0 {
				break // a failed batch is retried at the next put or search
			}
			select {
			case <-x.quit:
				return
			default:
			}
		}
		if s.mergeDue() {
			idle.Reset(idleMergeAfter)
		}
	}
}

// Idle merging. Each index commit adds a segment, and FTS5's automerge keeps up to
// indexAutomerge a level, so a 10k-document index holds a dozen or more and every query
// term seeks each one: merged into one, a 10k search took 29-37 % less CPU (one term,
// two, a phrase) and a miss 62 % less (BenchmarkSearchText10k). The merge rewrites the whole index (~0.5 s of
// CPU at 10k documents of 2 KB), so it runs only after the indexer was idle for
// idleMergeAfter, in steps it stops between as soon as a put or a search needs it, and
// only once a fourth of the index's size has been indexed since the last one.

// mergeHold is how long durable writes have held a due merge back.
type mergeHold struct{ since time.Time }

// start notes that writes held the merge back at now (the first time counts).
func (h *mergeHold) start(now time.Time) {
	if h.since.IsZero() {
		h.since = now
	}
}

// over reports whether the merge has been held back maxMergeDelay by now: it then runs
// beside the writes.
func (h *mergeHold) over(now time.Time) bool {
	return !h.since.IsZero() && now.Sub(h.since) >= maxMergeDelay
}

// mergeDue reports whether enough was indexed since the last merge for another.
func (s *SQLite) mergeDue() bool {
	since := s.idx.sinceMerge.Load()
	if since < mergeMinBytes {
		return false
	}
	var pages, size int64
	if err := s.xr.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		return false
	}
	if err := s.xr.QueryRow(`PRAGMA page_size`).Scan(&size); err != nil {
		return false
	}
	return since >= pages*size/mergeShare
}

// mergeWhileIdle merges the index's segments, a step at a time, until they are one or the
// indexer is wanted (the kick is put back for the main loop). Unless forced, it stops for
// a durable write less than idleMergeAfter ago and returns how long until that pause is
// over, for the caller to try again then; 0 otherwise.
func (s *SQLite) mergeWhileIdle(force bool) time.Duration {
	x := s.idx
	for {
		select {
		case <-x.kick:
			x.wake()
			return 0
		case <-x.quit:
			return 0
		default:
		}
		if quiet := s.sinceDurable(); !force && quiet < idleMergeAfter {
			return idleMergeAfter - quiet
		}
		more, err := s.mergeStep(context.Background())
		if err != nil {
			return 0 // tried again after the next batch
		}
		if !more {
			x.sinceMerge.Store(0)
			x.merges.Add(1)
			return 0
		}
	}
}

// sinceDurable is how long ago a durable write last committed.
func (s *SQLite) sinceDurable() time.Duration {
	return time.Since(clockStart) - time.Duration(s.lastDurable.Load())
}

// clockStart anchors lastDurable to the monotonic clock: a step of the wall clock must not
// hold the merge back, nor start it during a burst.
var clockStart = time.Now()

// mergeStep rewrites about mergeStepPages of the index towards one segment and reports
// whether work remains (FTS5 changes at least two rows when a merge step did something).
func (s *SQLite) mergeStep(ctx context.Context) (bool, error) {
	c, err := s.xw.Conn(ctx) // total_changes() counts per connection
	if err != nil {
		return false, err
	}
	defer c.Close()
	var before, after int64
	if err := c.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&before); err != nil {
		return false, err
	}
	// a negative count: merge every segment, not only levels holding several
	if _, err := c.ExecContext(ctx, fmt.Sprintf(`INSERT INTO artifact_fts(artifact_fts, rank) VALUES ('merge', %d)`, -mergeStepPages)); err != nil {
		return false, fmt.Errorf("merge the search index: %w", err)
	}
	if err := c.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&after); err != nil {
		return false, err
	}
	return after-before >= 2, nil
}

// gather waits up to indexCoalesce for a batch's worth of puts, returning early when a
// search waits for a thread; false when the store closes meanwhile.
func (x *indexer) gather() bool {
	t := time.NewTimer(indexCoalesce)
	defer t.Stop()
	for x.preferred() == "" && x.pending.Load() < indexBatchBytes {
		select {
		case <-x.kick:
		case <-t.C:
			return true
		case <-x.quit:
			return false
		}
	}
	return true
}

type pendingDoc struct {
	rowid, size         int64
	threadID, typ, name string
	ref                 string
}

// The indexer's statements on search.db, prepared once at open (parsing them took more
// CPU than the insert itself).
const (
	sqlNextSeq = `INSERT INTO fts_threads(thread_id, n, seq)
		VALUES (?, (SELECT coalesce(max(n), 0) + 1 FROM fts_threads), 1)
		ON CONFLICT(thread_id) DO UPDATE SET seq = seq + 1 RETURNING n, seq`
	sqlIndexDoc  = `INSERT INTO docs(fts_rowid, src, ref, name, ty) VALUES (?,?,?,?,?)`
	sqlIndexed   = `SELECT count(*) FROM docs WHERE src = ?`
	sqlIndexRow  = `INSERT INTO artifact_fts(rowid, name, body, ty) VALUES (?,?,?,?)`
	sqlIndexMark = `UPDATE progress SET done = ? WHERE id = 1`
)

// indexBatch indexes up to indexBatchDocs new artifacts in one search.db transaction and
// returns how many it read (0: the index is complete). Artifacts go in relay.db's rowid
// order, except that those of thread (one a search waits for), when given, go first: the
// artifacts of a thread are always indexed in their own order, and one indexed ahead is
// skipped when the mark reaches it.
func (s *SQLite) indexBatch(ctx context.Context, thread string) (int, error) {
	mark := s.idx.mark.Load()
	// A binary body is never tokenized, so it is not read either (25 pages per 100 KB).
	q := `SELECT a.rowid, a.thread_id, a.type, a.name, a.ref, a.size, ` + sqlIndexedContent + `, c.enc
		FROM artifacts a JOIN artifact_content c ON c.ref = a.ref
		WHERE a.rowid > ? AND a.fts_rowid IS NULL ORDER BY a.rowid LIMIT ?`
	args := []any{mark, indexBatchDocs}
	if thread != "" {
		s.idx.mu.Lock()
		from := max(mark, s.idx.ahead[thread])
		s.idx.mu.Unlock()
		q = `SELECT a.rowid, a.thread_id, a.type, a.name, a.ref, a.size, ` + sqlIndexedContent + `, c.enc
		FROM artifacts a JOIN artifact_content c ON c.ref = a.ref
		WHERE a.thread_id = ? AND a.rowid > ? AND a.fts_rowid IS NULL ORDER BY a.rowid LIMIT ?`
		args = []any{thread, from, indexBatchDocs}
	}
	rows, err := s.readRows(ctx, q, args...) // prepared: parsing it cost a batch of binary puts a third of its CPU
	if err != nil {
		return 0, fmt.Errorf("read artifacts to index: %w", err)
	}
	var docs []pendingDoc
	var bodies []string
	total := 0
	for rows.Next() && total < indexBatchBytes {
		var d pendingDoc
		var content sql.RawBytes // the driver's copy, read before the next row: searchText copies the text out
		var enc int
		if err := rows.Scan(&d.rowid, &d.threadID, &d.typ, &d.name, &d.ref, &d.size, &content, &enc); err != nil {
			rows.Close()
			return 0, fmt.Errorf("read artifacts to index: %w", err)
		}
		body, err := searchText(d.typ, content, enc)
		if err != nil {
			body = "" // undecodable content stays findable by name
		}
		docs = append(docs, d)
		bodies = append(bodies, body)
		total += len(body) + len(d.name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read artifacts to index: %w", err)
	}
	if len(docs) == 0 && thread != "" {
		return s.indexBatch(ctx, "") // the preferred thread is done; go on with the rest
	}
	if len(docs) == 0 {
		// Caught up. The byte counts are kept by hand (puts add, batches subtract); squaring
		// them here stops drift, at worst forgetting a put that committed during this read.
		s.idx.mu.Lock()
		s.idx.pending.Store(0)
		s.idx.waiting.Store(0)
		clear(s.idx.behind)
		s.idx.mu.Unlock()
		return 0, nil
	}
	tx, err := s.xw.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("index artifacts: %w", err)
	}
	defer tx.Rollback()
	st := func(q string) *sql.Stmt { return tx.StmtContext(ctx, s.xstmts[q]) }
	type work struct{ bytes, docs int64 }
	tokenized := map[string]work{} // what this batch indexes, by thread
	type row struct {
		rowid      int64
		name, body string
		ty         string
	}
	var fts []row
	// The plain tables are written first and the FTS5 rows after them: a write that opens a
	// statement savepoint (the upsert of fts_threads) makes FTS5 flush what it holds in
	// memory as a segment of its own, so interleaved, every artifact became a segment and
	// merging them cost more than tokenizing (2 KB texts indexed 1.6x faster in this order).
	for i, d := range docs {
		var done int
		if err := st(sqlIndexed).QueryRowContext(ctx, d.rowid).Scan(&done); err != nil {
			return 0, fmt.Errorf("index artifact: %w", err)
		}
		if done > 0 {
			continue // indexed ahead, for a search of its thread
		}
		var n, seq int64
		if err := st(sqlNextSeq).QueryRowContext(ctx, d.threadID).Scan(&n, &seq); err != nil {
			return 0, fmt.Errorf("index artifact: %w", err)
		}
		lo, _ := threadRange(n)
		if _, err := st(sqlIndexDoc).ExecContext(ctx, lo+seq, d.rowid, d.ref, d.name, d.typ); err != nil {
			return 0, fmt.Errorf("index artifact: %w", err)
		}
		fts = append(fts, row{lo + seq, d.name, bodies[i], d.typ})
		w := tokenized[d.threadID]
		tokenized[d.threadID] = work{w.bytes + indexCost(d.typ, d.size, d.name), w.docs + 1}
	}
	last := docs[len(docs)-1].rowid
	if thread == "" {
		if _, err := st(sqlIndexMark).ExecContext(ctx, last); err != nil {
			return 0, fmt.Errorf("index artifacts: %w", err)
		}
	}
	for _, r := range fts {
		if _, err := st(sqlIndexRow).ExecContext(ctx, r.rowid, r.name, r.body, r.ty); err != nil {
			return 0, fmt.Errorf("index artifact: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("index artifacts: %w", err)
	}
	if thread == "" {
		s.idx.mark.Store(last)
		s.idx.mu.Lock()
		for t, r := range s.idx.ahead {
			if r <= last {
				delete(s.idx.ahead, t) // the mark covers it now
			}
		}
		s.idx.mu.Unlock()
	} else {
		s.idx.mu.Lock()
		s.idx.ahead[thread] = last
		s.idx.mu.Unlock()
	}
	for t, w := range tokenized {
		s.idx.indexed(t, w.bytes, w.docs)
		s.idx.sinceMerge.Add(w.bytes)
	}
	return len(docs), nil
}

// waitIndexed waits until every artifact of the thread committed before the call is in
// the search index, or searchWait passed (then the search answers from the index as it is).
func (s *SQLite) waitIndexed(ctx context.Context, threadID string) error {
	need, err := s.newestIndexable(ctx, threadID)
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}
	if need <= s.idx.mark.Load() {
		return nil
	}
	deadline := time.NewTimer(searchWait)
	defer deadline.Stop()
	wanted := false
	defer func() {
		if wanted {
			s.idx.want(threadID, false)
		}
	}()
	for {
		ch := s.idx.progressed()
		if s.idx.covers(threadID, need) {
			return nil
		}
		if !wanted {
			s.idx.want(threadID, true)
			wanted = true
		}
		s.idx.wake()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return nil
		}
	}
}

// newestIndexable returns the rowid of thread's newest artifact the index must hold (0:
// none), from memory once a search has read it: every search asks, twice with the cache
// key, and the read cost a twelfth of an MCP search's daemon CPU (each search's writes
// emptied the reader's page cache, so it read its pages from the file again).
func (s *SQLite) newestIndexable(ctx context.Context, thread string) (int64, error) {
	return s.idx.newestOr(thread, func() (int64, error) {
		var need sql.NullInt64
		// prepared: every search ran it, and parsing cost ~0.3 ms of a search's CPU
		err := s.readRow(ctx, `SELECT max(rowid) FROM artifacts WHERE thread_id = ? AND fts_rowid IS NULL`, thread).Scan(&need)
		return need.Int64, err
	})
}

// newestOr returns newest's rowid for thread, or what read returns, kept for next time
// only if no put was recorded during the read: the read may have missed it. (A put recorded
// before the read began committed before it.)
func (x *indexer) newestOr(thread string, read func() (int64, error)) (int64, error) {
	x.mu.Lock()
	r, ok := x.newest[thread]
	puts := x.puts
	x.mu.Unlock()
	if ok {
		return r, nil
	}
	r, err := read()
	if err != nil {
		return 0, err
	}
	x.mu.Lock()
	if x.puts == puts {
		if len(x.newest) >= maxNewest {
			clear(x.newest)
		}
		x.newest[thread] = r
	}
	x.mu.Unlock()
	return r, nil
}

// sqlIndexedContent selects the content the indexer tokenizes: none for a binary artifact.
const sqlIndexedContent = `CASE WHEN a.type = '` + memory.TypeBinary + `' THEN x'' ELSE c.content END`

// indexCost is what an artifact adds to the index lag: the text the indexer tokenizes (a
// binary body is never tokenized, so binary puts neither count towards the lag nor wait
// for it) and its name.
func indexCost(typ string, size int64, name string) int64 {
	if typ == memory.TypeBinary {
		return int64(len(name))
	}
	return min(size, MaxIndexedBytes) + int64(len(name))
}

// waitIndexRoom holds a text put to thread while its index trails by more than
// maxThreadIndexLag bytes, or all threads' by more than maxIndexLag.
func (s *SQLite) waitIndexRoom(ctx context.Context, thread string) error {
	for {
		wait, ch := s.idx.lagging(thread)
		if !wait {
			return nil
		}
		s.idx.wake()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.idx.quit:
			return errClosed
		}
	}
}

// IndexPending reports how many artifacts wait for the search index (stats, doctor): the
// indexer's own count, so a status poll costs no scan of the artifacts.
func (s *SQLite) IndexPending(ctx context.Context) (int, error) {
	return int(max(0, s.idx.waiting.Load())), nil
}
