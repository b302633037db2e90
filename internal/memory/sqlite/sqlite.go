// Package sqlite is the embedded memory store: memory.Store on SQLite (modernc.org/sqlite,
// pure Go, WAL, synchronous=FULL by default, FTS5 for search). It is the source of truth;
// a human-readable mirror under $RELAY_HOME/threads/<id>/ is written after each commit and
// never read back.
package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relaydev/relay/internal/relayhome"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/blob"

	"github.com/google/uuid"
	"github.com/relaydev/relay/internal/memory/statedoc"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// A snapshot (the whole document) is stored once the patches since the last one add up
// to the document's size, or after snapshotMaxVersions of them: snapshots then take about
// as much room as the patches, and rebuilding a version reads at most about twice the
// document. (Snapshotting by replay cost alone stored a 1 MB document every few versions
// of a 10,000-fact state: 6x the disk, and patches slowed as the state grew.)
var (
	snapshotMaxVersions = 2048     // a var: tests lower it
	snapshotMinBytes    = 64 << 10 // small documents are not snapshotted more often than this
)

// readerCacheKB is each read connection's SQLite page cache.
const readerCacheKB = 512

// idleReaders is how many read connections each pool keeps open between requests.
const idleReaders = 2

// cacheBytes bounds the state cache, in encoded JSON; the decoded states take a few times this.
const cacheBytes = 16 << 20

// SQLite is the SQLite-backed Store. All writes run one batch at a time on one connection
// (batch.go), so version checks, event ids and mirror order are serialized and concurrent
// writers share fsyncs; reads use a separate pool.
type SQLite struct {
	home     string
	path     string
	w, r, ck *sql.DB // writer, readers, checkpointer
	known    knownThreads
	wc       *sql.Conn // the writer's one connection, held open (Tx)
	mirror   *mirror
	broker   memory.Broker
	now      func() time.Time

	wmu     sync.Mutex // held by the writer running a batch (batch.go)
	qmu     sync.Mutex
	queue   []*writeReq // writes waiting for the next batch (under qmu)
	leading bool        // under qmu: a writer leads (batch.go); set whenever queue is non-empty
	shut    bool        // under wmu: Close refuses further writes
	// batches and batchedOps count the write batches and the ops they ran (benchmarks
	// report ops per batch: how well group commit shares fsyncs; the checkpointer counts
	// the commits that land during a copy).
	batches, batchedOps atomic.Int64
	// lastDurable is when a durable write last committed (ns after clockStart): a put or a
	// patch, not bookkeeping; the search index's idle merge waits for a pause in them.
	lastDurable atomic.Int64
	stmts       map[string]*sql.Stmt
	// syncMode is the store's synchronous setting; commitSync, under wmu, what the writer
	// connection has now (batch.go lowers it for deferred writes).
	syncMode, commitSync string

	cmu        sync.RWMutex
	cache      map[string]*cached // latest state per thread
	cacheBytes int
	cacheLimit int          // cacheBytes at most this (tests lower it)
	cacheTick  atomic.Int64 // use counter for least-recently-used eviction
	closed     atomic.Bool

	ckKick, ckLazy, ckQuit, ckDone chan struct{}
	ckKicked, ckLazyKicked         atomic.Bool // a kick of that kind is pending (checkpoint.go)
	afterCopy                      func()      // tests: runs after each WAL copy made without the writer

	stopRepair func()
	repairDone chan struct{}

	idx        *indexer // the background search indexer (indexer.go)
	idxRunning bool
	xw, xr     *sql.DB              // search.db: the indexer's writer, the searches' readers
	xstmts     map[string]*sql.Stmt // the indexer's prepared statements
	xrstmts    stmtCache            // the searches' prepared statements on xr
	rstmts     stmtCache            // prepared statements of hot reads on r (snippet text)
	token      string               // names this open in search.db's content view

	blobs   blob.Store     // bodies outside the database (nil: in artifact_content)
	pinMu   sync.Mutex     // held by a sweep while it checks and deletes a batch (bucket.go)
	pins    map[string]int // hashes of bodies being put to the bucket
	sweepMu sync.Mutex     // one sweep at a time
}

// cached is an immutable snapshot of a thread's latest state; replaced, never mutated
// (except the lazily computed header and encoding). It holds the decoded document so a
// patch costs about what it changes; the JSON is encoded only when someone needs it.
type cached struct {
	version    int
	st         *statedoc.State
	size       int // upper bound of len(JSON), exact when it was encoded at creation
	sinceSnap  int // versions since the last stored snapshot
	sinceBytes int // bytes of the patches since the last stored snapshot
	metrics    memory.Metrics
	header     atomic.Pointer[builtHeader]
	used       atomic.Int64 // cacheTick at the last use
	puts       atomic.Int64 // artifacts stored since this entry: a header built before is stale
}

// builtHeader is a header and the artifact-put count of its entry when it was built.
type builtHeader struct {
	memory.Header
	puts int64
}

// newCached wraps a parsed state whose JSON is doc (nil: not encoded yet, size is a bound).
func newCached(version int, st *statedoc.State, doc []byte, size, sinceSnap, sinceBytes int, m memory.Metrics) *cached {
	if doc != nil {
		size = len(doc)
	}
	return &cached{version: version, st: st, size: size, sinceSnap: sinceSnap, sinceBytes: sinceBytes, metrics: m}
}

// json is the compact document (encoded once per version).
func (c *cached) json() ([]byte, error) { return c.st.JSON() }

// sizeBound bounds the encoded size of the state after patch is applied to a state of at
// most old bytes, without encoding it: an add/replace/move writes at most 6 bytes per byte
// of its operation (worst-case escaping) plus separators, and stamping the version and time
// adds a few bytes. A copy can duplicate anything, so it has no bound (-1).
func sizeBound(old int, patch []byte, nops int) int {
	if bytes.Contains(patch, []byte("copy")) {
		return -1
	}
	return old + 6*len(patch) + 8*nops + 64
}

// Options tune OpenSQLite.
type Options struct {
	// Now overrides the clock (tests).
	Now func() time.Time
	// Sync is "full" (default: every commit is fsynced before it is acknowledged) or
	// "normal" (commits survive a process crash such as kill -9, but the last ones may be
	// lost if the machine loses power).
	Sync string
	// Mirror writes the human-readable copy under $RELAY_HOME/threads (state.json,
	// events.log, artifacts/) after each commit. Off by default: it doubles the disk used.
	Mirror bool
	// Blobs keeps artifact bodies outside the database, in a bucket or directory (nil: in
	// the database). The database then keeps each artifact's metadata, preview and the
	// text search indexes, not its body.
	Blobs blob.Store
}

// OpenSQLite opens (creating if needed) the store in home ($RELAY_HOME).
func OpenSQLite(home string, opt Options) (*SQLite, error) {
	if err := registerFuncs(); err != nil {
		return nil, fmt.Errorf("open store: register SQL functions: %w", err)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("create store directory %s: %w", home, err)
	}
	path := filepath.Join(home, relayhome.DBFile)
	// The store is private to its user: SQLite creates -wal and -shm with the
	// database's mode, so making relay.db 0600 first covers all three.
	if err := ensurePrivate(path); err != nil {
		return nil, err
	}
	syncMode := "FULL"
	switch strings.ToLower(opt.Sync) {
	case "", "full":
	case "normal":
		syncMode = "NORMAL"
	default:
		return nil, fmt.Errorf("unknown sync mode %q; use full or normal", opt.Sync)
	}
	dsn := func(extra ...string) string {
		q := url.Values{}
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous("+syncMode+")")
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "foreign_keys(1)")
		for _, e := range extra {
			q.Add("_pragma", e)
		}
		q.Set("_txlock", "immediate")
		return "file:" + path + "?" + q.Encode()
	}
	// The checkpointer (checkpoint.go) copies the WAL into the database off the commit path;
	// the writer checkpoints by itself only if it falls far behind.
	w, err := sql.Open("sqlite", dsn(fmt.Sprintf("wal_autocheckpoint(%d)", fallbackCheckpointPages)))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	// The writer's one connection, held for the store's life: runBatch begins and ends its
	// transactions on it with SQL (see Tx).
	wc, err := w.Conn(context.Background())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// Readers keep a small page cache each (SQLite's default is 2 MB per connection) and
	// close when idle: the daemon's memory after a burst of reads goes back down.
	r, err := sql.Open("sqlite", dsn("query_only(1)", fmt.Sprintf("cache_size(%d)", -readerCacheKB)))
	if err != nil {
		wc.Close()
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(idleReaders)
	r.SetConnMaxIdleTime(30 * time.Second)
	ck, err := sql.Open("sqlite", dsn())
	if err != nil {
		wc.Close()
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	ck.SetMaxOpenConns(1)
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	s := &SQLite{home: home, path: path, w: w, wc: wc, r: r, ck: ck, now: now, syncMode: syncMode, commitSync: syncMode, blobs: opt.Blobs, pins: map[string]int{},
		cache: map[string]*cached{}, cacheLimit: cacheBytes, mirror: newMirror(filepath.Join(home, relayhome.ThreadsDir), opt.Mirror), idx: newIndexer(),
		stmts: map[string]*sql.Stmt{}, xstmts: map[string]*sql.Stmt{}, ckKick: make(chan struct{}, 1), ckLazy: make(chan struct{}, 1), ckQuit: make(chan struct{}), ckDone: make(chan struct{})}
	go s.checkpointer()
	if err := s.migrate(); err != nil {
		s.Close()
		return nil, err
	}
	if s.blobs != nil {
		ctx := context.Background()
		if err := s.WriteTx(ctx, func(tx Tx) error {
			_, err := tx.ExecContext(ctx, bucketHashIndex)
			return err
		}); err != nil {
			s.Close()
			return nil, fmt.Errorf("open store %s: index artifacts by body: %w", path, err)
		}
	}
	if err := s.prepare(context.Background()); err != nil {
		s.Close()
		return nil, err
	}
	var storeID string
	if err := s.r.QueryRow(`SELECT value FROM store_meta WHERE key = 'id'`).Scan(&storeID); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: read its id: %w", path, err)
	}
	if err := s.openSearchDB(storeID); err != nil {
		s.Close()
		return nil, err
	}
	s.idxRunning = true
	go s.runIndexer()
	s.idx.wake() // artifacts a previous run left unindexed
	rctx, cancel := context.WithCancel(context.Background())
	s.stopRepair = cancel
	s.repairDone = make(chan struct{})
	go func() {
		defer close(s.repairDone)
		s.repairMirror(rctx)
	}()
	return s, nil
}

// ensurePrivate creates path as an empty 0600 file when missing and takes
// group and other access away from it and its -wal and -shm when present
// (stores created before were 0644).
func ensurePrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open store %s: %w", path, err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, fi.Mode().Perm()&0o700); err != nil {
				return fmt.Errorf("make %s private: %w", p, err)
			}
		}
	}
	return nil
}

func (s *SQLite) migrate() error {
	ctx := context.Background()
	// Through the writer, like every use of its connection: the checkpointer may be writing.
	if err := s.WriteTx(ctx, func(tx Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`)
		return err
	}); err != nil {
		return fmt.Errorf("open store %s: %w (is it a relay database? move it away and retry)", s.path, err)
	}
	for _, m := range migrations {
		err := s.WriteTx(ctx, func(tx Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE name = ?`, m.name).Scan(&n); err != nil || n > 0 {
				return err
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(name, applied_at) VALUES (?, ?)`, m.name, s.stamp().String())
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate store %s (%s): %w", s.path, m.name, err)
		}
	}
	return nil
}

// Path returns the database file path.
func (s *SQLite) Path() string { return s.path }

// ReadDB returns the read-only connection pool.
func (s *SQLite) ReadDB() *sql.DB { return s.r }

// Describe implements memory.Store.
func (s *SQLite) Describe() memory.StoreInfo {
	return memory.StoreInfo{Backend: "sqlite", Location: s.path, MirrorError: s.mirror.Err()}
}

// WriteTx runs fn in a transaction on the single writer connection (it may share the
// transaction with other writes; fn's changes commit or roll back as a unit). fn must not
// call back into the store's write methods.
func (s *SQLite) WriteTx(ctx context.Context, fn func(Tx) error) error {
	return s.write(ctx, func(ctx context.Context, tx Tx, b *batch) (func(), error) {
		return nil, fn(tx)
	})
}

// Forget drops the cached state of a thread (after writing core tables directly).
func (s *SQLite) Forget(threadID string) {
	s.cmu.Lock()
	if c := s.cache[threadID]; c != nil {
		s.cacheBytes -= c.size
		delete(s.cache, threadID)
	}
	s.cmu.Unlock()
}

// Close flushes the mirror and closes the database.
func (s *SQLite) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.stopReaders()
	s.shutWrites()
	close(s.ckQuit)
	<-s.ckDone
	for _, st := range s.stmts {
		st.Close()
	}
	s.mirror.close()
	s.rstmts.close()
	return errors.Join(s.closeSearchDB(), s.ck.Close(), s.r.Close(), s.wc.Close(), s.w.Close())
}

// stopReaders stops the goroutines that read the database in the background (the mirror's
// repair, the indexer): Close does first, and a test that needs the WAL to itself may.
func (s *SQLite) stopReaders() {
	if s.stopRepair != nil {
		s.stopRepair()
		<-s.repairDone
		s.stopRepair = nil
	}
	if s.idxRunning {
		close(s.idx.quit)
		<-s.idx.done
		s.idxRunning = false
	}
}

// stamp is the current time truncated to milliseconds, so replayed versions stamp the same text.
func (s *SQLite) stamp() memory.Time {
	return memory.Time{Time: s.now().UTC().Truncate(time.Millisecond)}
}

func (s *SQLite) insertEvent(ctx context.Context, tx Tx, threadID, typ string, at memory.Time, data []byte) (memory.Event, error) {
	res, err := s.exec(ctx, tx, `INSERT INTO events(thread_id, type, at, data) VALUES (?, ?, ?, ?)`, threadID, typ, at.String(), data)
	if err != nil {
		return memory.Event{}, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return memory.Event{}, err
	}
	_, err = s.exec(ctx, tx, `UPDATE threads SET event_count = event_count + 1, last_event_id = ?, updated_at = ? WHERE id = ?`, id, at.String(), threadID)
	return memory.Event{ID: id, ThreadID: threadID, Type: typ, At: at, Data: data}, err
}

// CreateThread implements Store.
func (s *SQLite) CreateThread(ctx context.Context, p memory.CreateThreadParams) (memory.Thread, error) {
	if len([]rune(p.Name)) > memory.MaxNameLen {
		return memory.Thread{}, memory.BadRequest("thread name is longer than %d characters; use a shorter --name", memory.MaxNameLen)
	}
	id := uuid.NewString()
	doc := statedoc.New(id)
	if doc == nil {
		return memory.Thread{}, errors.New("statedoc.New returned no document")
	}
	st, err := statedoc.Parse(doc)
	if err != nil {
		return memory.Thread{}, fmt.Errorf("create thread: new state: %w", err)
	}
	if err := memory.CheckIfNameTaken(p.IfNameTaken); err != nil {
		return memory.Thread{}, err
	}
	var at memory.Time
	var ev memory.Event
	var name, reuse string
	err = s.write(ctx, func(ctx context.Context, tx Tx, b *batch) (func(), error) {
		var err error
		if name, reuse, err = threadName(ctx, tx, p); err != nil || reuse != "" {
			return nil, err
		}
		data, _ := json.Marshal(map[string]string{"name": name})
		at = s.stamp()
		if _, err := tx.ExecContext(ctx, `INSERT INTO threads(id, name, created_at, updated_at, version) VALUES (?, ?, ?, ?, 1)`, id, name, at.String(), at.String()); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO state_snapshots(thread_id, version, doc) VALUES (?, 1, ?)`, id, doc); err != nil {
			return nil, err
		}
		if ev, err = s.insertEvent(ctx, tx, id, memory.EventThreadCreated, at, data); err != nil {
			return nil, err
		}
		if _, err = tx.ExecContext(ctx, `INSERT INTO state_versions(thread_id, version, patch, author, created_at, event_id) VALUES (?, 1, '[]', '', ?, ?)`, id, at.String(), ev.ID); err != nil {
			return nil, err
		}
		c := newCached(1, st, nil, len(doc), 0, 0, memory.Metrics{})
		b.pending[id] = c
		return func() {
			s.setCache(id, c)
			s.mirror.event(ev)
			s.mirrorState(id)
			s.broker.Notify(id)
		}, nil
	})
	if err != nil {
		return memory.Thread{}, fmt.Errorf("create thread: %w", err)
	}
	if reuse != "" {
		t, err := s.GetThread(ctx, reuse)
		t.Reused = true
		return t, err
	}
	return memory.Thread{ID: id, Name: name, CreatedAt: at, UpdatedAt: at, Version: 1, StateRef: memory.StateRef(1),
		EventCount: 1, LastEventID: ev.ID}, nil
}

// threadName is memory.ThreadName with this store's lookups, inside the creating transaction.
func threadName(ctx context.Context, tx Tx, p memory.CreateThreadParams) (name, reuse string, err error) {
	return memory.ThreadName(p, func(name string) (string, error) {
		var id string
		err := tx.QueryRowContext(ctx, `SELECT id FROM threads WHERE name = ? ORDER BY created_at, id LIMIT 1`, name).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return "", nil
		}
		return id, err
	}, func(name string) (string, error) { return freeName(ctx, tx, name) })
}

func (s *SQLite) mirrorState(id string) {
	s.mirror.state(id, func() []byte {
		s.cmu.RLock()
		c := s.cache[id]
		s.cmu.RUnlock()
		if c == nil { // evicted since: read it back rather than leave state.json stale
			var err error
			if c, err = s.load(context.Background(), s.r, id); err != nil {
				s.mirror.fail(err)
				return nil
			}
		}
		doc, err := c.json()
		if err != nil {
			s.mirror.fail(err)
			return nil
		}
		return doc
	})
}

const threadCols = `id, name, created_at, updated_at, version, artifact_count, event_count, last_event_id, cache_hits, tokens_avoided`

type scanner interface{ Scan(dest ...any) error }

func scanThread(r scanner) (memory.Thread, error) {
	var t memory.Thread
	var created, updated string
	err := r.Scan(&t.ID, &t.Name, &created, &updated, &t.Version, &t.ArtifactCount, &t.EventCount, &t.LastEventID, &t.Metrics.CacheHits, &t.Metrics.TokensAvoided)
	t.CreatedAt, t.UpdatedAt, t.StateRef = memory.ParseTime(created), memory.ParseTime(updated), memory.StateRef(t.Version)
	return t, err
}

// ListThreads implements Store. Ordering by updated_at's minute first is the same order
// (a prefix decides wherever it differs) through an index that is cheap to keep (schema.go).
// INDEXED BY: left to itself the planner sorted the whole table (31 ms at 10,000 threads).
func (s *SQLite) ListThreads(ctx context.Context, limit int) ([]memory.Thread, error) {
	if limit <= 0 {
		limit = 50
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+threadCols+` FROM threads INDEXED BY threads_minute ORDER BY substr(updated_at, 1, 16) DESC, updated_at DESC, id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	defer rows.Close()
	out := []memory.Thread{}
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, fmt.Errorf("list threads: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// GetThread implements Store.
func (s *SQLite) GetThread(ctx context.Context, id string) (memory.Thread, error) {
	if err := memory.CheckThreadID(id); err != nil {
		return memory.Thread{}, err
	}
	t, err := scanThread(s.readRow(ctx, `SELECT `+threadCols+` FROM threads WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return memory.Thread{}, &memory.NotFoundError{What: "thread", ID: id}
	}
	if err != nil {
		return memory.Thread{}, fmt.Errorf("read thread %s: %w", id, err)
	}
	return t, nil
}

// setCache stores a committed state (writers, after their commit). A reader's load uses
// fillCache instead, which never replaces an entry of the same version: the writer's entry
// may carry newer metrics.
func (s *SQLite) setCache(id string, c *cached) { s.putCache(id, c, false) }

func (s *SQLite) fillCache(id string, c *cached) { s.putCache(id, c, true) }

func (s *SQLite) putCache(id string, c *cached, fill bool) {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if old := s.cache[id]; old != nil {
		if old.version > c.version || fill && old.version == c.version {
			return // a writer already stored this version or a newer one
		}
		s.cacheBytes -= old.size
		delete(s.cache, id)
	}
	for s.cacheBytes+c.size > s.cacheLimit && len(s.cache) > 0 { // evict the least recently used
		var lru string
		var min int64
		for k, v := range s.cache {
			if u := v.used.Load(); lru == "" || u < min {
				lru, min = k, u
			}
		}
		s.cacheBytes -= s.cache[lru].size
		delete(s.cache, lru)
	}
	c.used.Store(s.cacheTick.Add(1))
	s.cache[id] = c
	s.cacheBytes += c.size
}

// latest returns the cached latest state, rebuilding it from the database on a miss.
func (s *SQLite) latest(ctx context.Context, id string) (*cached, error) {
	if err := memory.CheckThreadID(id); err != nil {
		return nil, err
	}
	s.cmu.RLock()
	c := s.cache[id]
	s.cmu.RUnlock()
	if c != nil {
		c.used.Store(s.cacheTick.Add(1))
		return c, nil
	}
	c, err := s.load(ctx, s.r, id)
	if err != nil {
		return nil, err
	}
	s.fillCache(id, c)
	return c, nil
}

// load reads a thread's latest state from the database (q is the read pool, or the write
// transaction so uncommitted changes of the batch count).
func (s *SQLite) load(ctx context.Context, q querier, id string) (*cached, error) {
	var version int
	var m memory.Metrics
	err := q.QueryRowContext(ctx, `SELECT version, cache_hits, tokens_avoided FROM threads WHERE id = ?`, id).Scan(&version, &m.CacheHits, &m.TokensAvoided)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &memory.NotFoundError{What: "thread", ID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("read thread %s: %w", id, err)
	}
	st, doc, snapV, patchBytes, err := s.rebuild(ctx, q, id, version)
	if err != nil {
		return nil, err
	}
	if doc == nil { // the size bound of later patches starts from the exact size
		if doc, err = st.JSON(); err != nil {
			return nil, fmt.Errorf("encode state of thread %s: %w", id, err)
		}
	}
	return newCached(version, st, doc, 0, version-snapV, patchBytes, m), nil
}

// rebuild reconstructs version v from the nearest snapshot and the patches after it,
// decoding the snapshot once. doc is its JSON when v is the snapshot itself, else nil;
// patchBytes is the size of the patches replayed.
func (s *SQLite) rebuild(ctx context.Context, q querier, id string, v int) (st *statedoc.State, doc []byte, snapV, patchBytes int, err error) {
	err = q.QueryRowContext(ctx, `SELECT version, doc FROM state_snapshots WHERE thread_id = ? AND version <= ? ORDER BY version DESC LIMIT 1`, id, v).Scan(&snapV, &doc)
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("read state snapshot of thread %s: %w", id, err)
	}
	if st, err = statedoc.Parse(doc); err != nil {
		return nil, nil, 0, 0, &memory.CorruptError{ThreadID: id, Msg: fmt.Sprintf("state snapshot v%d is not a valid state document", snapV), Err: err}
	}
	if snapV == v {
		return st, doc, snapV, 0, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT version, patch, created_at FROM state_versions WHERE thread_id = ? AND version > ? AND version <= ? ORDER BY version`, id, snapV, v)
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("read state history of thread %s: %w", id, err)
	}
	defer rows.Close()
	next := snapV + 1
	for rows.Next() {
		var ver int
		var patch []byte
		var at string
		if err := rows.Scan(&ver, &patch, &at); err != nil {
			return nil, nil, 0, 0, err
		}
		if ver != next {
			return nil, nil, 0, 0, &memory.CorruptError{ThreadID: id, Msg: fmt.Sprintf("state history has a gap at v%d", next)}
		}
		patchBytes += len(patch)
		if st, err = st.Patch(patch, ver, memory.ParseTime(at).Time); err != nil {
			return nil, nil, 0, 0, &memory.CorruptError{ThreadID: id, Msg: fmt.Sprintf("state v%d does not apply to v%d", ver, ver-1), Err: err}
		}
		next++
	}
	if err := rows.Err(); err != nil {
		return nil, nil, 0, 0, err
	}
	if next != v+1 {
		return nil, nil, 0, 0, fmt.Errorf("state history of thread %s ends at v%d, want v%d", id, next-1, v)
	}
	return st, nil, snapV, patchBytes, nil
}

// State implements Store.
func (s *SQLite) State(ctx context.Context, id string, version int) (memory.State, error) {
	c, err := s.latest(ctx, id)
	if err != nil {
		return memory.State{}, err
	}
	if version == 0 || version == c.version {
		doc, err := c.json()
		if err != nil {
			return memory.State{}, fmt.Errorf("encode state of thread %s: %w", id, err)
		}
		return memory.State{ThreadID: id, Version: c.version, Doc: doc}, nil
	}
	if version < 0 || version > c.version {
		return memory.State{}, &memory.NotFoundError{What: "version", ID: fmt.Sprintf("%s of thread %s (latest is %s)", memory.StateRef(version), id, memory.StateRef(c.version))}
	}
	st, doc, _, _, err := s.rebuild(ctx, s.r, id, version)
	if err != nil {
		return memory.State{}, err
	}
	if doc == nil {
		if doc, err = st.JSON(); err != nil {
			return memory.State{}, fmt.Errorf("encode state of thread %s: %w", id, err)
		}
	}
	return memory.State{ThreadID: id, Version: version, Doc: doc}, nil
}

// Header implements Store.
func (s *SQLite) Header(ctx context.Context, id string) (memory.Header, error) {
	c, err := s.latest(ctx, id)
	if err != nil {
		return memory.Header{}, err
	}
	// Read before the artifacts: a put committed meanwhile makes this header stale, never
	// leaves a stale one looking current.
	puts := c.puts.Load()
	if h := c.header.Load(); h != nil && h.puts == puts {
		return h.Header, nil
	}
	recent, err := s.recentArtifacts(ctx, id)
	if err != nil {
		return memory.Header{}, err
	}
	name, err := memory.HeaderNames(ctx, s, c.st, recent)
	if err != nil {
		return memory.Header{}, fmt.Errorf("build header of thread %s: %w", id, err)
	}
	b, t, err := c.st.HeaderFor(statedoc.Metrics{CacheHits: c.metrics.CacheHits, TokensAvoided: c.metrics.TokensAvoided}, recent, name)
	if err != nil {
		return memory.Header{}, fmt.Errorf("build header of thread %s: %w", id, err)
	}
	h := &builtHeader{Header: memory.Header{Version: c.version, JSON: b, Truncated: t}, puts: puts}
	c.header.Store(h)
	return h.Header, nil
}

// recentArtifacts returns the thread's newest stored artifacts, oldest first, for the
// header's artifact_refs (refs sort by creation time): those memory.InHeader admits.
func (s *SQLite) recentArtifacts(ctx context.Context, id string) ([]statedoc.ArtifactRef, error) {
	rows, err := s.readRows(ctx, `SELECT ref, type, name FROM artifacts WHERE thread_id = ? AND created_by != ? AND capability != ? ORDER BY ref DESC LIMIT ?`,
		id, memory.ReportAuthor, memory.SearchCapability, statedoc.MaxArtifactRefs)
	if err != nil {
		return nil, fmt.Errorf("read recent artifacts of thread %s: %w", id, err)
	}
	defer rows.Close()
	var out []statedoc.ArtifactRef
	for rows.Next() {
		var a statedoc.ArtifactRef
		if err := rows.Scan(&a.Ref, &a.Type, &a.Name); err != nil {
			return nil, fmt.Errorf("read recent artifacts of thread %s: %w", id, err)
		}
		out = append(out, a)
	}
	slices.Reverse(out)
	return out, rows.Err()
}

// PatchState implements Store.
func (s *SQLite) PatchState(ctx context.Context, id string, patch []byte, expected int, author string) (memory.PatchResult, error) {
	nops, compact, perr := memory.CheckPatch(id, patch, author)
	if perr != nil {
		return memory.PatchResult{}, perr
	}
	// A version the cache already knows is stale is refused without queuing for the writer.
	if expected > 0 {
		s.cmu.RLock()
		c := s.cache[id]
		s.cmu.RUnlock()
		if c != nil && c.version > expected {
			return memory.PatchResult{}, &memory.ConflictError{Expected: expected, Current: c.version}
		}
	}
	var res memory.PatchResult
	err := s.writeChecked(ctx, func(ctx context.Context, tx Tx, b *batch) (func(), error) {
		cur, err := s.latestForWrite(ctx, tx, b, id)
		if err != nil {
			return nil, err
		}
		if expected > 0 && expected != cur.version {
			return nil, &memory.ConflictError{Expected: expected, Current: cur.version}
		}
		v := cur.version + 1
		at := s.stamp()
		st, err := cur.st.Patch(patch, v, at.Time)
		if err != nil {
			return nil, memory.PatchError(err)
		}
		// Encode only when the size bound cannot prove the cap holds, or for a snapshot.
		var doc []byte
		size := sizeBound(cur.size, patch, nops)
		sinceBytes := cur.sinceBytes + len(compact)
		snap := cur.sinceSnap+1 >= snapshotMaxVersions || size < 0 || sinceBytes >= max(size, snapshotMinBytes)
		if snap || size > memory.MaxStateBytes {
			if doc, err = st.JSON(); err != nil {
				return nil, memory.PatchError(err)
			}
			size = len(doc)
			snap = cur.sinceSnap+1 >= snapshotMaxVersions || sinceBytes >= max(size, snapshotMinBytes)
		}
		if size > memory.MaxStateBytes {
			return nil, &memory.TooLargeError{What: "the patched state", Limit: memory.MaxStateBytes}
		}
		data := patchedEventData(v, nops, author)
		b.writing() // every check above changed nothing
		r, err := s.exec(ctx, tx, `INSERT INTO events(thread_id, type, at, data) VALUES (?, ?, ?, ?)`, id, memory.EventStatePatched, at.String(), data)
		if err != nil {
			return nil, err
		}
		evID, err := r.LastInsertId()
		if err != nil {
			return nil, err
		}
		ev := memory.Event{ID: evID, ThreadID: id, Type: memory.EventStatePatched, At: at, Data: data}
		if _, err := s.exec(ctx, tx, `INSERT INTO state_versions(thread_id, version, patch, author, created_at, event_id) VALUES (?, ?, ?, ?, ?, ?)`, id, v, compact, author, at.String(), ev.ID); err != nil {
			return nil, err
		}
		if snap {
			if _, err := tx.ExecContext(ctx, `INSERT INTO state_snapshots(thread_id, version, doc) VALUES (?, ?, ?)`, id, v, doc); err != nil {
				return nil, err
			}
		}
		// One statement moves the version and the event counters; the version guard makes a
		// writer that bypassed this store fail instead of forking history.
		r, err = s.exec(ctx, tx, `UPDATE threads SET version = ?, event_count = event_count + 1, last_event_id = ?, updated_at = ? WHERE id = ? AND version = ?`,
			v, ev.ID, at.String(), id, cur.version)
		if err != nil {
			return nil, err
		}
		if n, _ := r.RowsAffected(); n != 1 {
			s.Forget(id) // the cache was bypassed; rebuild on next read
			return nil, fmt.Errorf("thread %s changed outside this store; retry", id)
		}
		since := cur.sinceSnap + 1
		if snap {
			since, sinceBytes = 0, 0
		}
		c := newCached(v, st, doc, size, since, sinceBytes, cur.metrics)
		b.pending[id] = c
		res = memory.PatchResult{ThreadID: id, Version: v, StateRef: memory.StateRef(v), EventID: ev.ID}
		return func() {
			s.setCache(id, c)
			s.mirror.event(ev)
			s.mirrorState(id)
			s.broker.Notify(id)
		}, nil
	})
	if err != nil {
		var ce *memory.ConflictError
		var ie *memory.InvalidError
		var tl *memory.TooLargeError
		if errors.As(err, &ce) || errors.As(err, &ie) || errors.As(err, &tl) || memory.IsNotFound(err) || errors.Is(err, errClosed) || ctx.Err() != nil {
			return memory.PatchResult{}, err
		}
		return memory.PatchResult{}, fmt.Errorf("store patch of thread %s: %w", id, err)
	}
	return res, nil
}

// patchedEventData is the state.patched event's data, byte for byte what json.Marshal
// makes of {"version", "state_ref", "ops", "author"} (keys sorted), without the map and
// reflection json.Marshal costs every patch.
func patchedEventData(v, nops int, author string) []byte {
	a, _ := json.Marshal(author) // a string always encodes
	b := make([]byte, 0, 64+len(a))
	b = append(b, `{"author":`...)
	b = append(b, a...)
	b = strconv.AppendInt(append(b, `,"ops":`...), int64(nops), 10)
	b = append(append(b, `,"state_ref":"`...), memory.StateRef(v)...)
	b = strconv.AppendInt(append(b, `","version":`...), int64(v), 10)
	return append(b, '}')
}

// Versions implements Store.
func (s *SQLite) Versions(ctx context.Context, id string, after, limit int) ([]memory.Version, error) {
	if _, err := s.latest(ctx, id); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.readRows(ctx, `SELECT version, patch, author, created_at, event_id FROM state_versions WHERE thread_id = ? AND version > ? ORDER BY version LIMIT ?`, id, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list versions of thread %s: %w", id, err)
	}
	defer rows.Close()
	out := []memory.Version{}
	for rows.Next() {
		var v memory.Version
		var at string
		var patch []byte
		if err := rows.Scan(&v.Version, &patch, &v.Author, &at, &v.EventID); err != nil {
			return nil, err
		}
		v.Patch, v.CreatedAt, v.StateRef = patch, memory.ParseTime(at), memory.StateRef(v.Version)
		out = append(out, v)
	}
	return out, rows.Err()
}

// PutArtifact implements Store.
func (s *SQLite) PutArtifact(ctx context.Context, id string, p memory.PutArtifactParams) (memory.Artifact, error) {
	if err := memory.CheckThreadID(id); err != nil {
		return memory.Artifact{}, err
	}
	if s.blobs != nil {
		if int64(len(p.Content)) > s.MaxArtifactBytes() {
			return memory.Artifact{}, &memory.TooLargeError{What: "the artifact", Limit: s.MaxArtifactBytes()}
		}
		return s.PutArtifactBody(ctx, id, p, blob.FromBytes(p.Content))
	}
	typ, refs, err := memory.CheckPut(p, int64(len(p.Content)), p.Content)
	if err != nil {
		return memory.Artifact{}, err
	}
	if p.Sum == "" {
		sum := sha256.Sum256(p.Content)
		p.Sum = hex.EncodeToString(sum[:])
	}
	a := memory.Artifact{ThreadID: id, Type: typ, Mime: memory.MimeFor(typ, p.Content), Name: p.Name, Size: int64(len(p.Content)),
		Hash: p.Sum, Preview: memory.MakePreview(typ, p.Content),
		Provenance: memory.Provenance{CreatedBy: p.CreatedBy, SourceRefs: refs, Capability: p.Capability}}
	// Search result lists are never indexed; binary bodies add almost nothing to index.
	if p.Capability != memory.SearchCapability && typ != memory.TypeBinary {
		if err := s.waitIndexRoom(ctx, id); err != nil {
			return memory.Artifact{}, err
		}
	}
	enc, stored, release := encodeContent(p.Content) // before taking the writer: compression runs in parallel
	defer release()
	return s.storeArtifact(ctx, a, enc, stored, p.Content)
}

// storeArtifact commits an artifact whose content row is stored (as enc); mirrored is the
// body for the file mirror (nil: none).
func (s *SQLite) storeArtifact(ctx context.Context, a memory.Artifact, enc int, stored, mirrored []byte) (memory.Artifact, error) {
	id := a.ThreadID
	srcRefs, _ := json.Marshal(a.Provenance.SourceRefs)
	indexed := a.Provenance.Capability != memory.SearchCapability
	var out memory.Artifact
	err := s.write(ctx, func(ctx context.Context, tx Tx, b *batch) (func(), error) {
		// An artifact found by (thread, hash) proves the thread exists; otherwise the
		// counter's UPDATE below finding no thread does (one statement fewer per put).
		if old, err := scanArtifact(s.queryRow(ctx, tx, sqlArtifactByHash, id, a.Hash)); err == nil {
			old.Deduplicated = true
			out = old
			return nil, nil
		} else if !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("look up artifact hash: %w", err)
		}
		a := a
		at := s.stamp()
		a.CreatedAt, a.Provenance.CreatedAt = at, at
		if r, err := s.exec(ctx, tx, `UPDATE threads SET artifact_count = artifact_count + 1 WHERE id = ?`, id); err != nil {
			return nil, err
		} else if n, _ := r.RowsAffected(); n == 0 {
			return nil, &memory.NotFoundError{What: "thread", ID: id}
		}
		// The ref's short form names it store-wide: draw again while another artifact has it.
		for i := 0; i < memory.MaxRefDraws && !a.ShortUnique; i++ {
			a.Ref = memory.NewRef(at.Time)
			taken, err := s.shortTaken(ctx, tx, a.Ref)
			if err != nil {
				return nil, fmt.Errorf("check ref %s: %w", a.Ref, err)
			}
			a.ShortUnique = !taken
		}
		// The event carries the ref as relay shows it (unique: it was just drawn so).
		data := memory.StoredEventData(a)
		res, err := s.exec(ctx, tx, sqlInsertArtifact,
			a.Ref, id, a.Type, a.Mime, a.Name, a.Size, a.Hash, a.Preview.Text, a.Preview.LineCount, a.Preview.Truncated, a.Provenance.CreatedBy, a.Provenance.Capability, string(srcRefs), at.String(),
			ftsRowidFor(a.Provenance.Capability))
		if err != nil {
			return nil, err
		}
		rowid, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		if _, err := s.exec(ctx, tx, sqlInsertContent, a.Ref, stored, enc); err != nil {
			return nil, err
		}
		ev, err := s.insertEvent(ctx, tx, id, memory.EventArtifactStored, at, data)
		if err != nil {
			return nil, err
		}
		out = a
		return func() {
			s.cmu.RLock()
			if c := s.cache[id]; c != nil && memory.InHeader(a) {
				c.puts.Add(1) // its header lists recent artifacts
			}
			s.cmu.RUnlock()
			if mirrored != nil || a.Size == 0 {
				s.mirror.artifact(a, mirrored)
			}
			s.mirror.event(ev)
			s.broker.Notify(id)
			if indexed {
				s.idx.added(id, rowid, indexCost(a.Type, a.Size, a.Name))
				s.idx.wake()
			}
		}, nil
	})
	if err != nil {
		if memory.IsNotFound(err) || errors.Is(err, errClosed) || ctx.Err() != nil {
			return memory.Artifact{}, err
		}
		return memory.Artifact{}, fmt.Errorf("store artifact in thread %s: %w", id, err)
	}
	return out, nil
}

const artifactCols = `ref, thread_id, type, mime, name, size, hash, preview_text, preview_lines, preview_truncated, created_by, capability, source_refs, created_at`

func scanArtifact(r scanner) (memory.Artifact, error) {
	var a memory.Artifact
	var refs, at string
	err := r.Scan(&a.Ref, &a.ThreadID, &a.Type, &a.Mime, &a.Name, &a.Size, &a.Hash, &a.Preview.Text, &a.Preview.LineCount, &a.Preview.Truncated,
		&a.Provenance.CreatedBy, &a.Provenance.Capability, &refs, &at)
	if err != nil {
		return a, err
	}
	a.Preview.Size = a.Size
	a.CreatedAt = memory.ParseTime(at)
	a.Provenance.CreatedAt = a.CreatedAt
	if json.Unmarshal([]byte(refs), &a.Provenance.SourceRefs) != nil || a.Provenance.SourceRefs == nil {
		a.Provenance.SourceRefs = []string{}
	}
	return a, nil
}

// ThreadExists reports a memory.NotFoundError when the store has no thread id: the check
// a request makes before it acts on a thread, cheaper than GetThread.
func (s *SQLite) ThreadExists(ctx context.Context, id string) error { return s.threadExists(ctx, id) }

func (s *SQLite) threadExists(ctx context.Context, id string) error {
	if err := memory.CheckThreadID(id); err != nil {
		return err
	}
	if s.known.has(id) {
		return nil
	}
	var n int
	if err := s.readRow(ctx, `SELECT count(*) FROM threads WHERE id = ?`, id).Scan(&n); err != nil {
		return fmt.Errorf("read thread %s: %w", id, err)
	}
	if n == 0 {
		return &memory.NotFoundError{What: "thread", ID: id}
	}
	s.known.add(id)
	return nil
}

// knownThreads remembers threads found to exist. A store never deletes a thread, so one
// found once is there for good, and the check that artifact reads and every capability
// call make needs no query after the first.
type knownThreads struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

// maxKnownThreads bounds the set (36-byte ids): past it, it starts over.
const maxKnownThreads = 4096

func (k *knownThreads) has(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.ids[id]
	return ok
}

func (k *knownThreads) add(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ids == nil || len(k.ids) >= maxKnownThreads {
		k.ids = make(map[string]struct{})
	}
	k.ids[id] = struct{}{}
}

// GetArtifact implements Store.
func (s *SQLite) GetArtifact(ctx context.Context, id, ref string) (memory.Artifact, error) {
	if err := s.threadExists(ctx, id); err != nil {
		return memory.Artifact{}, err
	}
	ref, err := s.resolveRef(ctx, id, ref)
	if err != nil {
		return memory.Artifact{}, err
	}
	a, err := scanArtifact(s.readRow(ctx, `SELECT `+artifactCols+` FROM artifacts WHERE ref = ? AND thread_id = ?`, ref, id))
	if errors.Is(err, sql.ErrNoRows) {
		return memory.Artifact{}, &memory.NotFoundError{What: "artifact", ID: ref}
	}
	if err != nil {
		return memory.Artifact{}, fmt.Errorf("read artifact %s: %w", ref, err)
	}
	return a, nil
}

// ArtifactContent implements Store.
func (s *SQLite) ArtifactContent(ctx context.Context, id, ref string) (memory.Artifact, []byte, error) {
	a, err := s.GetArtifact(ctx, id, ref)
	if err != nil {
		return a, nil, err
	}
	var b []byte
	var enc int
	if err := s.readRow(ctx, `SELECT content, enc FROM artifact_content WHERE ref = ?`, a.Ref).Scan(&b, &enc); err != nil {
		return a, nil, fmt.Errorf("read content of artifact %s: %w", a.Ref, err)
	}
	if enc == encBucket {
		return s.bucketContent(ctx, a)
	}
	if b, err = decodeContent(enc, b); err != nil {
		return a, nil, fmt.Errorf("read content of artifact %s: %w", a.Ref, err)
	}
	return a, b, nil
}

// ListArtifacts implements Store.
func (s *SQLite) ListArtifacts(ctx context.Context, id string, opt memory.ListArtifactsOptions) ([]memory.Artifact, error) {
	if err := s.threadExists(ctx, id); err != nil {
		return nil, err
	}
	if opt.Type != "" && !memory.ValidType(opt.Type) {
		return nil, memory.BadRequest("unknown artifact type %q; use one of %s", opt.Type, strings.Join(memory.ArtifactTypes, ", "))
	}
	if opt.After != "" && !memory.ValidRef(opt.After) {
		return nil, memory.BadRequest("after=%q is not an artifact ref", opt.After)
	}
	if opt.Before != "" && !memory.ValidRef(opt.Before) {
		return nil, memory.BadRequest("before=%q is not an artifact ref", opt.Before)
	}
	if opt.Limit <= 0 {
		opt.Limit = 100
	}
	q := `SELECT ` + artifactCols + ` FROM artifacts WHERE thread_id = ? AND ref > ? AND (? = '' OR type = ?) ORDER BY ref LIMIT ?`
	args := []any{id, opt.After, opt.Type, opt.Type, opt.Limit}
	if opt.Before != "" {
		q = `SELECT ` + artifactCols + ` FROM artifacts WHERE thread_id = ? AND ref > ? AND ref < ? AND (? = '' OR type = ?) ORDER BY ref DESC LIMIT ?`
		args = []any{id, opt.After, opt.Before, opt.Type, opt.Type, opt.Limit}
	}
	rows, err := s.readRows(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list artifacts: %w", err)
	}
	defer rows.Close()
	out := []memory.Artifact{}
	for rows.Next() {
		a, err := scanArtifact(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// AppendEvent implements Store.
func (s *SQLite) AppendEvent(ctx context.Context, id, typ string, data any) (memory.Event, error) {
	if err := memory.CheckThreadID(id); err != nil {
		return memory.Event{}, err
	}
	b, err := memory.EncodeEvent(typ, data)
	if err != nil {
		return memory.Event{}, err
	}
	var ev memory.Event
	err = s.write(ctx, func(ctx context.Context, tx Tx, bt *batch) (after func(), err error) {
		if err := s.threadExistsIn(ctx, tx, id); err != nil {
			return nil, err
		}
		ev, after, err = s.appendEvent(ctx, tx, id, typ, b)
		return after, err
	})
	if err != nil {
		if memory.IsNotFound(err) || errors.Is(err, errClosed) || ctx.Err() != nil {
			return memory.Event{}, err
		}
		return memory.Event{}, fmt.Errorf("append event to thread %s: %w", id, err)
	}
	return ev, nil
}

// appendEvent appends an event to a thread that exists, in tx; after publishes it (the
// mirror, the thread's followers) once tx is committed.
func (s *SQLite) appendEvent(ctx context.Context, tx Tx, id, typ string, data []byte) (memory.Event, func(), error) {
	e, err := s.insertEvent(ctx, tx, id, typ, s.stamp(), data)
	if err != nil {
		return memory.Event{}, nil, err
	}
	return e, func() {
		s.mirror.event(e)
		s.broker.Notify(id)
	}, nil
}

const sqlThreadCount = `SELECT count(*) FROM threads WHERE id = ?`

// threadExistsIn is threadExists in a write transaction.
func (s *SQLite) threadExistsIn(ctx context.Context, tx Tx, id string) error {
	var n int
	if err := s.queryRow(ctx, tx, sqlThreadCount, id).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return &memory.NotFoundError{What: "thread", ID: id}
	}
	return nil
}

// Events implements Store.
func (s *SQLite) Events(ctx context.Context, id string, after int64, limit int) ([]memory.Event, error) {
	if err := memory.CheckThreadID(id); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	// Events are never deleted, so an event's seq is how many of its thread's events have an
	// id up to its own: the thread's event count less those after it, then consecutive.
	// Counting the events up to it instead cost a follower (an event stream, relay mcp's
	// watch) a walk of the whole thread on every new event; and the count rides on the same
	// statement (one read transaction a wake, not two).
	q, args := sqlEventsFirst, []any{id, after, limit}
	if after > 0 {
		q = sqlEventsAfter
	}
	rows, err := s.readRows(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	defer rows.Close()
	out := []memory.Event{}
	var seq int64
	for rows.Next() {
		var e memory.Event
		var at string
		var data []byte
		var base sql.NullInt64
		if err := rows.Scan(&e.ID, &e.Type, &at, &data, &base); err != nil {
			return nil, err
		}
		if len(out) == 0 {
			seq = base.Int64
		}
		seq++
		e.ThreadID, e.At, e.Data, e.Seq = id, memory.ParseTime(at), data, seq
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		if err := s.threadExists(ctx, id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sqlEventsAfter lists thread ?1's events after id ?2 (at most ?3), each row with the seq of
// event ?2 (the number of the thread's events up to it): SQLite computes that subquery once.
const sqlEventsAfter = `SELECT id, type, at, data,
	(SELECT t.event_count - (SELECT count(*) FROM events x WHERE x.thread_id = t.id AND x.id > ?2) FROM threads t WHERE t.id = ?1)
	FROM events WHERE thread_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3`

// sqlEventsFirst lists a thread's first events (?2 is 0: the seq before them is 0).
const sqlEventsFirst = `SELECT id, type, at, data, 0 FROM events WHERE thread_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3`

// Subscribe implements Store.
func (s *SQLite) Subscribe(id string) (<-chan struct{}, func()) { return s.broker.Subscribe(id) }

// AddMetrics implements Store.
func (s *SQLite) AddMetrics(ctx context.Context, id string, m memory.Metrics) error {
	if err := memory.CheckThreadID(id); err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, tx Tx, b *batch) (func(), error) {
		return s.addMetrics(ctx, tx, b, id, m)
	})
}

const sqlAddMetrics = `UPDATE threads SET cache_hits = cache_hits + ?, tokens_avoided = tokens_avoided + ? WHERE id = ? RETURNING cache_hits, tokens_avoided`

// addMetrics adds m to the thread's counters in tx (a *NotFoundError when there is no such
// thread); after updates the cached header once tx is committed.
func (s *SQLite) addMetrics(ctx context.Context, tx Tx, b *batch, id string, m memory.Metrics) (func(), error) {
	var cur memory.Metrics
	err := s.queryRow(ctx, tx, sqlAddMetrics, m.CacheHits, m.TokensAvoided, id).Scan(&cur.CacheHits, &cur.TokensAvoided)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &memory.NotFoundError{What: "thread", ID: id}
	}
	if err != nil {
		return nil, err
	}
	base := b.pending[id]
	if base == nil {
		s.cmu.RLock()
		base = s.cache[id]
		s.cmu.RUnlock()
	}
	if base == nil {
		return nil, nil // not cached: the next load reads the new counters
	}
	// A new entry (not a mutation): the old one's cached header has the old metrics.
	c := &cached{version: base.version, st: base.st, size: base.size, sinceSnap: base.sinceSnap, sinceBytes: base.sinceBytes, metrics: cur}
	b.pending[id] = c
	return func() { s.setCache(id, c) }, nil
}

// Stats implements Store.
func (s *SQLite) Stats(ctx context.Context) (memory.StoreStats, error) {
	st := memory.StoreStats{Path: s.path}
	err := s.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM threads), (SELECT count(*) FROM artifacts), (SELECT coalesce(max(id), 0) FROM events)`).Scan(&st.Threads, &st.Artifacts, &st.Events)
	if err != nil {
		return st, fmt.Errorf("read store stats: %w", err)
	}
	n, err := s.IndexPending(ctx)
	if err != nil {
		return st, fmt.Errorf("read store stats: %w", err)
	}
	st.IndexPending, st.IndexPendingBytes = int64(n), max(0, s.idx.pending.Load())
	st.IndexMergeDue = s.mergeDue()
	for _, p := range []string{s.path, filepath.Join(s.home, SearchDBFile)} {
		for _, suf := range []string{"", "-wal", "-shm"} {
			if fi, err := os.Stat(p + suf); err == nil {
				st.Bytes += fi.Size()
			}
		}
	}
	return st, nil
}

// Check implements Store: PRAGMA integrity_check must say ok.
func (s *SQLite) Check(ctx context.Context) error {
	rows, err := s.r.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return err
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(msgs) != 1 || msgs[0] != "ok" {
		return fmt.Errorf("integrity check of %s failed: %s", s.path, strings.Join(msgs, "; "))
	}
	return nil
}

var _ memory.Store = (*SQLite)(nil)

// QuickCheck opens home's store read-only (safe while the daemon runs) and runs
// PRAGMA quick_check. A missing store is an fs.ErrNotExist error.
func QuickCheck(ctx context.Context, home string) error {
	path := filepath.Join(home, relayhome.DBFile)
	if _, err := os.Stat(path); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return err
	}
	defer db.Close()
	var res string
	if err := db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&res); err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if res != "ok" {
		return fmt.Errorf("%s is damaged: %s", path, res)
	}
	return nil
}
