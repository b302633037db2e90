// Package postgres is the memory store on PostgreSQL (15 or newer), for teams whose agents
// run on several machines: any number of daemons serve the same threads from one database,
// and artifact bodies live in the database or in a shared bucket (package blob).
//
// One truth across daemons: every write is one transaction that first locks its thread's
// row, so versions are checked and assigned under the lock (a stale If-Match is a
// ConflictError on any daemon, never a lost update) and a thread's events are committed in
// id order (a follower resuming after id N never skips an event committed later with a
// smaller id). Each event is announced with NOTIFY in its transaction; every daemon LISTENs
// and wakes its own followers, who re-read from the database. Daemons cache decoded states
// but check the thread's version in the database on every read, catching up by replaying
// only the patches they have not seen.
package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/memory/statedoc"
)

const (
	snapshotEvery = 64      // versions between full-state snapshots
	snapshotBytes = 4 << 20 // or sooner, when replaying would touch this many document bytes
	cacheEntries  = 1024    // decoded latest states kept per daemon
	notifyChannel = "relay_events"
)

// Options tune Open.
type Options struct {
	// Blobs keeps artifact bodies outside the database (nil: in the blobs table).
	Blobs blob.Store
	// Now overrides the clock (tests).
	Now func() time.Time
	// MaxConns bounds the connection pool (0: pgxpool's default).
	MaxConns int32
}

// Store is the PostgreSQL Store.
type Store struct {
	pool   *pgxpool.Pool
	url    string // redacted
	blobs  blob.Store
	now    func() time.Time
	broker memory.Broker

	cmu   sync.Mutex
	cache map[string]*cached

	stopListen context.CancelFunc
	listenDone chan struct{}
	closeOnce  sync.Once

	lmu    sync.Mutex
	listen memory.ListenInfo
}

// cached is a thread's decoded state at one version; replaced, never mutated. size bounds
// its encoded JSON from above (exact once encoded), or is -1 when unknown.
type cached struct {
	version int
	st      *statedoc.State
	size    int
	snap    int // the thread's snap_version at this version; 0 when not known
}

// sizeBound bounds the encoded size of a state of at most old bytes after patch, without
// encoding it: an operation writes at most 6 bytes per byte of its text (worst-case
// escaping) plus separators, and the version stamp a few more. A copy can duplicate
// anything, so it has no bound (-1).
func sizeBound(old int, patch []byte) int {
	if old < 0 || bytes.Contains(patch, []byte("copy")) {
		return -1
	}
	return old + 14*len(patch) + 64
}

// Open connects to the database at url, applies pending migrations (under an advisory lock,
// so daemons starting together migrate once) and starts listening for other daemons'
// events.
func Open(ctx context.Context, url string, opt Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store URL %s: %w", blob.Redact(url), redactErr(err, url))
	}
	if opt.MaxConns > 0 {
		cfg.MaxConns = opt.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", blob.Redact(url), redactErr(err, url))
	}
	s := &Store{pool: pool, url: blob.Redact(url), blobs: opt.Blobs, now: opt.Now, cache: map[string]*cached{}}
	if s.now == nil {
		s.now = time.Now
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to %s: %w", s.url, redactErr(err, url))
	}
	var ver int
	if err := pool.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&ver); err != nil {
		pool.Close()
		return nil, fmt.Errorf("read server version of %s: %w", s.url, err)
	}
	if ver < 150000 {
		pool.Close()
		return nil, fmt.Errorf("%s runs PostgreSQL %d.%d; relay needs 15 or newer", s.url, ver/10000, ver%10000)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrate %s: %w", s.url, err)
	}
	lctx, cancel := context.WithCancel(context.Background())
	s.stopListen = cancel
	s.listenDone = make(chan struct{})
	ready := make(chan error, 1)
	go s.listenLoop(lctx, ready)
	if err := <-ready; err != nil {
		s.Close()
		return nil, fmt.Errorf("listen for events on %s: %w", s.url, err)
	}
	return s, nil
}

// redactErr keeps a password in url out of err's text (pgx quotes the connection string in
// some parse errors).
func redactErr(err error, url string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if i := strings.Index(url, "://"); i >= 0 {
		if at := strings.LastIndex(url[:max(strings.Index(url[i+3:], "/")+i+3, i+3)], "@"); at > i+3 {
			userinfo := url[i+3 : at]
			if c := strings.Index(userinfo, ":"); c >= 0 && c+1 < len(userinfo) {
				msg = strings.ReplaceAll(msg, userinfo[c+1:], "xxxxx")
			}
		}
	}
	if strings.Contains(msg, "password=") {
		msg = passwordKV().ReplaceAllString(msg, "password=xxxxx")
	}
	return errors.New(msg)
}

var passwordKV = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`password=\S+`) })

// Describe implements memory.Store.
func (s *Store) Describe() memory.StoreInfo {
	loc := s.url
	if s.blobs != nil {
		loc += " (artifacts in " + s.blobs.String() + ")"
	}
	s.lmu.Lock()
	l := s.listen
	s.lmu.Unlock()
	return memory.StoreInfo{Backend: "postgres", Location: loc, Listen: &l}
}

// setListening records that the notification connection was made or lost.
func (s *Store) setListening(up bool) {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	if up && !s.listen.Since.IsZero() {
		s.listen.Reconnects++
	}
	s.listen.Connected, s.listen.Since = up, memory.Time{Time: s.now().UTC()}
}

// Blobs returns the bucket bodies are kept in, or nil when they are in the database.
func (s *Store) Blobs() blob.Store { return s.blobs }

// Pool returns the connection pool (for extensions keeping tables in the same database).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close stops listening and closes the pool.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.stopListen != nil {
			s.stopListen()
			<-s.listenDone
		}
		s.pool.Close()
	})
	return nil
}

// listenLoop holds one connection LISTENing for event notifications from every daemon and
// wakes the local followers of the thread named in each. When the connection drops (the
// server restarted or failed over, or the network failed) every pooled connection is
// suspect too, so the pool is reset: the next requests connect afresh instead of failing
// one by one on dead connections. It then reconnects, retrying at most a second apart,
// and wakes every follower, who re-read from their last id: nothing is missed, at worst a
// follower reads once for nothing.
func (s *Store) listenLoop(ctx context.Context, ready chan<- error) {
	defer close(s.listenDone)
	first := true
	delay := 50 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := s.pool.Acquire(ctx)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+notifyChannel)
			if err != nil {
				conn.Conn().Close(context.Background())
				conn.Release()
			}
		}
		if first {
			ready <- err
			first = false
			if err != nil {
				return
			}
		}
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, time.Second)
			continue
		}
		delay = 50 * time.Millisecond
		s.setListening(true)
		s.broker.NotifyAll() // events may have been written while we were not listening
		for {
			n, err := conn.Conn().WaitForNotification(ctx)
			if err != nil {
				break
			}
			s.broker.Notify(n.Payload)
		}
		// The connection is in an unknown state (or ctx ended): do not return it to the pool.
		conn.Conn().Close(context.Background())
		conn.Release()
		if ctx.Err() == nil {
			s.setListening(false)
			s.pool.Reset()
		}
	}
}

func (s *Store) stamp() memory.Time {
	return memory.Time{Time: s.now().UTC().Truncate(time.Millisecond)}
}

// tx runs fn in a transaction; known store errors pass through, others get context.
func (s *Store) tx(ctx context.Context, what string, fn func(pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, s.pool, fn)
	if err != nil && pgconn.SafeToRetry(err) && ctx.Err() == nil {
		// Nothing reached the server (a pooled connection was found dead as BEGIN was
		// sent, typically right after a database restart): once more on a fresh one.
		err = pgx.BeginFunc(ctx, s.pool, fn)
	}
	if err == nil {
		return nil
	}
	var ce *memory.ConflictError
	var ie *memory.InvalidError
	var tl *memory.TooLargeError
	if errors.As(err, &ce) || errors.As(err, &ie) || errors.As(err, &tl) || memory.IsNotFound(err) || ctx.Err() != nil {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// lockThread takes the thread's row lock for the rest of tx and returns its version,
// snapshot version and metrics. Every transaction that adds an event takes it before the
// event's id is drawn, so a thread's events commit in id order.
func lockThread(ctx context.Context, tx pgx.Tx, id string) (version, snap int, m memory.Metrics, err error) {
	err = tx.QueryRow(ctx, `SELECT version, snap_version, cache_hits, tokens_avoided FROM threads WHERE id = $1 FOR UPDATE`, id).
		Scan(&version, &snap, &m.CacheHits, &m.TokensAvoided)
	if errors.Is(err, pgx.ErrNoRows) {
		err = &memory.NotFoundError{What: "thread", ID: id}
	}
	return
}

// insertEvent adds an event (the thread row must be locked) and announces it on commit.
func insertEvent(ctx context.Context, tx pgx.Tx, threadID, typ string, at memory.Time, data []byte) (memory.Event, error) {
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO events (thread_id, type, at, data) VALUES ($1, $2, $3, $4) RETURNING id`, threadID, typ, at.Time, data).Scan(&id); err != nil {
		return memory.Event{}, err
	}
	if _, err := tx.Exec(ctx, `UPDATE threads SET event_count = event_count + 1, last_event_id = $1, updated_at = $2 WHERE id = $3`, id, at.Time, threadID); err != nil {
		return memory.Event{}, err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, threadID); err != nil {
		return memory.Event{}, err
	}
	return memory.Event{ID: id, ThreadID: threadID, Type: typ, At: at, Data: data}, nil
}

// CreateThread implements memory.Store.
func (s *Store) CreateThread(ctx context.Context, p memory.CreateThreadParams) (memory.Thread, error) {
	if len([]rune(p.Name)) > memory.MaxNameLen {
		return memory.Thread{}, memory.BadRequest("thread name is longer than %d characters; use a shorter --name", memory.MaxNameLen)
	}
	id := uuid.NewString()
	at := s.stamp()
	doc := statedoc.NewAt(id, at.Time)
	st, err := statedoc.Parse(doc)
	if err != nil {
		return memory.Thread{}, fmt.Errorf("create thread: new state: %w", err)
	}
	if err := memory.CheckIfNameTaken(p.IfNameTaken); err != nil {
		return memory.Thread{}, err
	}
	var ev memory.Event
	var name, reuse string
	err = s.tx(ctx, "create thread", func(tx pgx.Tx) error {
		var err error
		if name, reuse, err = threadName(ctx, tx, p); err != nil || reuse != "" {
			return err
		}
		data, _ := json.Marshal(map[string]string{"name": name})
		if _, err := tx.Exec(ctx, `INSERT INTO threads (id, name, created_at, updated_at, version) VALUES ($1, $2, $3, $3, 1)`, id, name, at.Time); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO state_snapshots (thread_id, version, doc) VALUES ($1, 1, $2)`, id, doc); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM threads WHERE id = $1 FOR UPDATE`, id); err != nil {
			return err
		}
		if ev, err = insertEvent(ctx, tx, id, memory.EventThreadCreated, at, data); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO state_versions (thread_id, version, patch, author, created_at, event_id) VALUES ($1, 1, '\x5b5d', '', $2, $3)`, id, at.Time, ev.ID)
		return err
	})
	if err != nil {
		return memory.Thread{}, err
	}
	if reuse != "" {
		t, err := s.GetThread(ctx, reuse)
		t.Reused = true
		return t, err
	}
	s.setCache(id, &cached{version: 1, st: st, size: len(doc), snap: 1})
	return memory.Thread{ID: id, Name: name, CreatedAt: at, UpdatedAt: at, Version: 1, StateRef: memory.StateRef(1),
		EventCount: 1, LastEventID: ev.ID}, nil
}

// threadName is memory.ThreadName with this store's lookups, inside the creating
// transaction. Names are not unique in the schema, so creators of one name (through any
// daemon) take a transaction lock on it first.
func threadName(ctx context.Context, tx pgx.Tx, p memory.CreateThreadParams) (name, reuse string, err error) {
	if p.Name != "" {
		if err := lockName(ctx, tx, p.Name); err != nil {
			return "", "", err
		}
	}
	return memory.ThreadName(p, func(name string) (string, error) {
		var id string
		err := tx.QueryRow(ctx, `SELECT id FROM threads WHERE name = $1 ORDER BY created_at, id LIMIT 1`, name).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", nil
		}
		return id, err
	}, func(name string) (string, error) { return freeName(ctx, tx, name) })
}

const threadCols = `id, name, created_at, updated_at, version, artifact_count, event_count, last_event_id, cache_hits, tokens_avoided`

func scanThread(r pgx.Row) (memory.Thread, error) {
	var t memory.Thread
	var created, updated time.Time
	err := r.Scan(&t.ID, &t.Name, &created, &updated, &t.Version, &t.ArtifactCount, &t.EventCount, &t.LastEventID, &t.Metrics.CacheHits, &t.Metrics.TokensAvoided)
	t.CreatedAt, t.UpdatedAt, t.StateRef = memory.Time{Time: created.UTC()}, memory.Time{Time: updated.UTC()}, memory.StateRef(t.Version)
	return t, err
}

// ListThreads implements memory.Store.
func (s *Store) ListThreads(ctx context.Context, limit int) ([]memory.Thread, error) {
	if limit <= 0 {
		limit = 50
	}
	rows, err := s.pool.Query(ctx, `SELECT `+threadCols+` FROM threads ORDER BY updated_at DESC, id LIMIT $1`, limit)
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

// GetThread implements memory.Store.
func (s *Store) GetThread(ctx context.Context, id string) (memory.Thread, error) {
	if err := memory.CheckThreadID(id); err != nil {
		return memory.Thread{}, err
	}
	t, err := scanThread(s.pool.QueryRow(ctx, `SELECT `+threadCols+` FROM threads WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.Thread{}, &memory.NotFoundError{What: "thread", ID: id}
	}
	if err != nil {
		return memory.Thread{}, fmt.Errorf("read thread %s: %w", id, err)
	}
	return t, nil
}

func (s *Store) getCache(id string) *cached {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	return s.cache[id]
}

func (s *Store) setCache(id string, c *cached) {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if old := s.cache[id]; old != nil && old.version >= c.version {
		return
	}
	if len(s.cache) >= cacheEntries {
		for k := range s.cache { // drop an arbitrary entry: a miss costs one rebuild
			delete(s.cache, k)
			break
		}
	}
	s.cache[id] = c
}

type querier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
	Query(context.Context, string, ...any) (pgx.Rows, error)
}

// stateAt returns the decoded state at version v, starting from the cached state when it
// is at or below v (replaying only the newer patches), else from the nearest snapshot.
func (s *Store) stateAt(ctx context.Context, q querier, id string, v int) (*cached, error) {
	c := s.getCache(id)
	if c != nil && c.version == v {
		return c, nil
	}
	var st *statedoc.State
	from := 0
	size := 0
	if c != nil && c.version < v && v-c.version <= snapshotEvery {
		st, from, size = c.st, c.version, c.size
	} else {
		var doc []byte
		err := q.QueryRow(ctx, `SELECT version, doc FROM state_snapshots WHERE thread_id = $1 AND version <= $2 ORDER BY version DESC LIMIT 1`, id, v).Scan(&from, &doc)
		if err != nil {
			return nil, fmt.Errorf("read state snapshot of thread %s: %w", id, err)
		}
		if st, err = statedoc.Parse(doc); err != nil {
			return nil, fmt.Errorf("read state snapshot v%d of thread %s: %w", from, id, err)
		}
		size = len(doc)
	}
	if from < v {
		rows, err := q.Query(ctx, `SELECT version, patch, created_at FROM state_versions WHERE thread_id = $1 AND version > $2 AND version <= $3 ORDER BY version`, id, from, v)
		if err != nil {
			return nil, fmt.Errorf("read state history of thread %s: %w", id, err)
		}
		next := from + 1
		for rows.Next() {
			var ver int
			var patch []byte
			var at time.Time
			if err := rows.Scan(&ver, &patch, &at); err != nil {
				rows.Close()
				return nil, err
			}
			if ver != next {
				rows.Close()
				return nil, fmt.Errorf("state history of thread %s has a gap at v%d", id, next)
			}
			if st, err = st.Patch(patch, ver, at.UTC()); err != nil {
				rows.Close()
				return nil, fmt.Errorf("replay v%d of thread %s: %w", ver, id, err)
			}
			size = sizeBound(size, patch)
			next++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if next != v+1 {
			return nil, fmt.Errorf("state history of thread %s ends at v%d, want v%d", id, next-1, v)
		}
	}
	return &cached{version: v, st: st, size: size}, nil
}

// latest reads the thread's current version and metrics and returns its state.
func (s *Store) latest(ctx context.Context, id string) (*cached, memory.Metrics, error) {
	var m memory.Metrics
	if err := memory.CheckThreadID(id); err != nil {
		return nil, m, err
	}
	var v int
	err := s.pool.QueryRow(ctx, `SELECT version, cache_hits, tokens_avoided FROM threads WHERE id = $1`, id).Scan(&v, &m.CacheHits, &m.TokensAvoided)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, m, &memory.NotFoundError{What: "thread", ID: id}
	}
	if err != nil {
		return nil, m, fmt.Errorf("read thread %s: %w", id, err)
	}
	c, err := s.stateAt(ctx, s.pool, id, v)
	if err != nil {
		return nil, m, err
	}
	s.setCache(id, c)
	return c, m, nil
}

// State implements memory.Store.
func (s *Store) State(ctx context.Context, id string, version int) (memory.State, error) {
	c, _, err := s.latest(ctx, id)
	if err != nil {
		return memory.State{}, err
	}
	if version != 0 && version != c.version {
		if version < 0 || version > c.version {
			return memory.State{}, &memory.NotFoundError{What: "version", ID: fmt.Sprintf("%s of thread %s (latest is %s)", memory.StateRef(version), id, memory.StateRef(c.version))}
		}
		// An older version: built from its nearest snapshot, the cache keeps the latest.
		if c, err = s.stateAt(ctx, s.pool, id, version); err != nil {
			return memory.State{}, err
		}
	}
	doc, err := c.st.JSON()
	if err != nil {
		return memory.State{}, fmt.Errorf("encode state of thread %s: %w", id, err)
	}
	return memory.State{ThreadID: id, Version: c.version, Doc: doc}, nil
}

// Header implements memory.Store: the state's lists plus the thread's recently stored
// artifacts (those memory.InHeader admits), read from the database so a put through any
// daemon shows at once.
func (s *Store) Header(ctx context.Context, id string) (memory.Header, error) {
	c, m, err := s.latest(ctx, id)
	if err != nil {
		return memory.Header{}, err
	}
	rows, err := s.pool.Query(ctx, `SELECT ref, type, name FROM artifacts WHERE thread_id = $1 AND created_by != $2 AND capability != $3 ORDER BY ref DESC LIMIT $4`,
		id, memory.ReportAuthor, memory.SearchCapability, statedoc.MaxArtifactRefs)
	if err != nil {
		return memory.Header{}, fmt.Errorf("read recent artifacts of thread %s: %w", id, err)
	}
	var recent []statedoc.ArtifactRef
	for rows.Next() {
		var a statedoc.ArtifactRef
		if err := rows.Scan(&a.Ref, &a.Type, &a.Name); err != nil {
			rows.Close()
			return memory.Header{}, fmt.Errorf("read recent artifacts of thread %s: %w", id, err)
		}
		recent = append(recent, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return memory.Header{}, fmt.Errorf("read recent artifacts of thread %s: %w", id, err)
	}
	slices.Reverse(recent)
	name, err := memory.HeaderNames(ctx, s, c.st, recent)
	if err != nil {
		return memory.Header{}, fmt.Errorf("build header of thread %s: %w", id, err)
	}
	b, t, err := c.st.HeaderFor(statedoc.Metrics{CacheHits: m.CacheHits, TokensAvoided: m.TokensAvoided}, recent, name)
	if err != nil {
		return memory.Header{}, fmt.Errorf("build header of thread %s: %w", id, err)
	}
	return memory.Header{Version: c.version, JSON: b, Truncated: t}, nil
}

// PatchState implements memory.Store. The thread row is locked before the version check, so
// of two daemons patching against the same version exactly one wins and the other gets a
// ConflictError with the new current version.
func (s *Store) PatchState(ctx context.Context, id string, patch []byte, expected int, author string) (memory.PatchResult, error) {
	nops, compact, perr := memory.CheckPatch(id, patch, author)
	if perr != nil {
		return memory.PatchResult{}, perr
	}
	if c := s.getCache(id); c != nil && c.snap > 0 && (expected == 0 || expected == c.version) {
		res, ok, err := s.patchCached(ctx, id, c, patch, compact, nops, author)
		if err != nil || ok {
			return res, err
		}
		// Another daemon moved the version: the locked path below decides on fresh state.
	}
	var res memory.PatchResult
	var next *cached
	err := s.tx(ctx, "store patch of thread "+id, func(tx pgx.Tx) error {
		curV, snapV, _, err := lockThread(ctx, tx, id)
		if err != nil {
			return err
		}
		if expected > 0 && expected != curV {
			return &memory.ConflictError{Expected: expected, Current: curV}
		}
		cur, err := s.stateAt(ctx, tx, id, curV)
		if err != nil {
			return err
		}
		v := curV + 1
		at := s.stamp()
		st, err := cur.st.Patch(patch, v, at.Time)
		if err != nil {
			return memory.PatchError(err)
		}
		// Encode only for a snapshot, or when the bound cannot prove the size cap holds:
		// encoding a large state on every patch would cost more than the patch itself.
		since := v - snapV
		size := sizeBound(cur.size, compact)
		snap := since >= snapshotEvery || size < 0 || since*size >= snapshotBytes
		var doc []byte
		if snap || size > memory.MaxStateBytes {
			if doc, err = st.JSON(); err != nil {
				return memory.PatchError(err)
			}
			size = len(doc)
			snap = since >= snapshotEvery || since*size >= snapshotBytes
		}
		if size > memory.MaxStateBytes {
			return &memory.TooLargeError{What: "the patched state", Limit: memory.MaxStateBytes}
		}
		data, _ := json.Marshal(map[string]any{"version": v, "state_ref": memory.StateRef(v), "ops": nops, "author": author})
		newSnap := snapV
		if snap {
			if _, err := tx.Exec(ctx, `INSERT INTO state_snapshots (thread_id, version, doc) VALUES ($1, $2, $3)`, id, v, doc); err != nil {
				return err
			}
			newSnap = v
		}
		// The event, the version row, the thread row and the notification in one round
		// trip; the event id is drawn here, under the thread lock taken above.
		var evID int64
		err = tx.QueryRow(ctx, `WITH ev AS (
				INSERT INTO events (thread_id, type, at, data) VALUES ($1, $2, $3, $4) RETURNING id
			), sv AS (
				INSERT INTO state_versions (thread_id, version, patch, author, created_at, event_id)
				SELECT $1, $5, $6, $7, $3, id FROM ev
			), th AS (
				UPDATE threads SET version = $5, snap_version = $8, event_count = event_count + 1,
					last_event_id = (SELECT id FROM ev), updated_at = $3 WHERE id = $1
			)
			SELECT id, pg_notify($9, $1) FROM ev`,
			id, memory.EventStatePatched, at.Time, data, v, compact, author, newSnap, notifyChannel).Scan(&evID, nil)
		if err != nil {
			return err
		}
		next = &cached{version: v, st: st, size: size, snap: newSnap}
		res = memory.PatchResult{ThreadID: id, Version: v, StateRef: memory.StateRef(v), EventID: evID}
		return nil
	})
	if err != nil {
		return memory.PatchResult{}, err
	}
	s.setCache(id, next)
	s.broker.Notify(id) // local followers need not wait for the notification's round trip
	return res, nil
}

// patchCached is PatchState in one round trip, for the common case where this daemon's
// cached state is the latest: the patch is applied to it here and one statement (its own
// transaction: no BEGIN or COMMIT round trips) writes the event, the version, a snapshot
// when due and the thread row, guarded by the thread's version. ok is false when the guard
// found another version (another daemon patched): nothing was written.
//
// The event id is drawn in the thread row's UPDATE: when another transaction holds the row
// (it took the lock to add an event), PostgreSQL waits for it, rechecks the guard on the new
// row and evaluates the new values again, drawing a later id, so a thread's events still
// commit in id order.
func (s *Store) patchCached(ctx context.Context, id string, c *cached, patch, compact []byte, nops int, author string) (res memory.PatchResult, ok bool, err error) {
	v := c.version + 1
	at := s.stamp()
	st, err := c.st.Patch(patch, v, at.Time)
	if err != nil {
		return res, false, memory.PatchError(err)
	}
	since := v - c.snap
	size := sizeBound(c.size, compact)
	snap := since >= snapshotEvery || size < 0 || since*size >= snapshotBytes
	var doc []byte
	if snap || size > memory.MaxStateBytes {
		if doc, err = st.JSON(); err != nil {
			return res, false, memory.PatchError(err)
		}
		size = len(doc)
		snap = since >= snapshotEvery || since*size >= snapshotBytes
	}
	if size > memory.MaxStateBytes {
		return res, false, &memory.TooLargeError{What: "the patched state", Limit: memory.MaxStateBytes}
	}
	newSnap := c.snap
	if snap {
		newSnap = v
	} else {
		doc = nil
	}
	data, _ := json.Marshal(map[string]any{"version": v, "state_ref": memory.StateRef(v), "ops": nops, "author": author})
	var evID int64
	err = s.pool.QueryRow(ctx, `WITH th AS (
			UPDATE threads SET version = $5, snap_version = $8, event_count = event_count + 1,
				last_event_id = nextval(pg_get_serial_sequence('events', 'id')), updated_at = $3
			WHERE id = $1 AND version = $10 RETURNING last_event_id
		), ev AS (
			INSERT INTO events (id, thread_id, type, at, data) SELECT last_event_id, $1, $2, $3, $4 FROM th RETURNING id
		), sv AS (
			INSERT INTO state_versions (thread_id, version, patch, author, created_at, event_id)
			SELECT $1, $5, $6, $7, $3, id FROM ev
		), sn AS (
			INSERT INTO state_snapshots (thread_id, version, doc) SELECT $1, $5, $11::bytea FROM th WHERE $11::bytea IS NOT NULL
		)
		SELECT id, pg_notify($9, $1) FROM ev`,
		id, memory.EventStatePatched, at.Time, data, v, compact, author, newSnap, notifyChannel, c.version, doc).Scan(&evID, nil)
	if errors.Is(err, pgx.ErrNoRows) || (err != nil && pgconn.SafeToRetry(err) && ctx.Err() == nil) {
		return res, false, nil // moved on, or a dead pooled connection: the locked path retries
	}
	if err != nil {
		if ctx.Err() != nil {
			return res, false, err
		}
		return res, false, fmt.Errorf("store patch of thread %s: %w", id, err)
	}
	s.setCache(id, &cached{version: v, st: st, size: size, snap: newSnap})
	s.broker.Notify(id)
	return memory.PatchResult{ThreadID: id, Version: v, StateRef: memory.StateRef(v), EventID: evID}, true, nil
}

// Versions implements memory.Store.
func (s *Store) Versions(ctx context.Context, id string, after, limit int) ([]memory.Version, error) {
	if err := s.threadExists(ctx, id); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT version, patch, author, created_at, event_id FROM state_versions WHERE thread_id = $1 AND version > $2 ORDER BY version LIMIT $3`, id, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list versions of thread %s: %w", id, err)
	}
	defer rows.Close()
	out := []memory.Version{}
	for rows.Next() {
		var v memory.Version
		var at time.Time
		var patch []byte
		if err := rows.Scan(&v.Version, &patch, &v.Author, &at, &v.EventID); err != nil {
			return nil, err
		}
		v.Patch, v.CreatedAt, v.StateRef = patch, memory.Time{Time: at.UTC()}, memory.StateRef(v.Version)
		out = append(out, v)
	}
	return out, rows.Err()
}

func (s *Store) threadExists(ctx context.Context, id string) error {
	if err := memory.CheckThreadID(id); err != nil {
		return err
	}
	var ok bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM threads WHERE id = $1)`, id).Scan(&ok); err != nil {
		return fmt.Errorf("read thread %s: %w", id, err)
	}
	if !ok {
		return &memory.NotFoundError{What: "thread", ID: id}
	}
	return nil
}

// AppendEvent implements memory.Store.
func (s *Store) AppendEvent(ctx context.Context, id, typ string, data any) (memory.Event, error) {
	if err := memory.CheckThreadID(id); err != nil {
		return memory.Event{}, err
	}
	b, err := memory.EncodeEvent(typ, data)
	if err != nil {
		return memory.Event{}, err
	}
	var ev memory.Event
	err = s.tx(ctx, "append event to thread "+id, func(tx pgx.Tx) error {
		if _, _, _, err := lockThread(ctx, tx, id); err != nil {
			return err
		}
		var err error
		ev, err = insertEvent(ctx, tx, id, typ, s.stamp(), b)
		return err
	})
	if err == nil {
		s.broker.Notify(id)
	}
	return ev, err
}

// Events implements memory.Store.
func (s *Store) Events(ctx context.Context, id string, after int64, limit int) ([]memory.Event, error) {
	if err := memory.CheckThreadID(id); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	// Events are never deleted and a thread's writes are serialised on its row, so an
	// event's seq is how many of its thread's events have an id up to its own.
	var seq int64
	if after > 0 {
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE thread_id = $1 AND id <= $2`, id, after).Scan(&seq); err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT id, type, at, data FROM events WHERE thread_id = $1 AND id > $2 ORDER BY id LIMIT $3`, id, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	defer rows.Close()
	out := []memory.Event{}
	for rows.Next() {
		var e memory.Event
		var at time.Time
		var data []byte
		if err := rows.Scan(&e.ID, &e.Type, &at, &data); err != nil {
			return nil, err
		}
		seq++
		e.ThreadID, e.At, e.Data, e.Seq = id, memory.Time{Time: at.UTC()}, data, seq
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

// Subscribe implements memory.Store: the channel wakes on events written through any daemon.
func (s *Store) Subscribe(id string) (<-chan struct{}, func()) { return s.broker.Subscribe(id) }

// AddMetrics implements memory.Store.
func (s *Store) AddMetrics(ctx context.Context, id string, m memory.Metrics) error {
	if err := memory.CheckThreadID(id); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE threads SET cache_hits = cache_hits + $1, tokens_avoided = tokens_avoided + $2 WHERE id = $3`, m.CacheHits, m.TokensAvoided, id)
	if err != nil {
		return fmt.Errorf("add metrics to thread %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return &memory.NotFoundError{What: "thread", ID: id}
	}
	return nil
}

// Stats implements memory.Store.
func (s *Store) Stats(ctx context.Context) (memory.StoreStats, error) {
	st := memory.StoreStats{Path: s.url}
	err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM threads), (SELECT count(*) FROM artifacts), (SELECT coalesce(max(id), 0) FROM events), pg_database_size(current_database())`).
		Scan(&st.Threads, &st.Artifacts, &st.Events, &st.Bytes)
	if err != nil {
		return st, fmt.Errorf("read store stats: %w", err)
	}
	return st, nil
}

// Check implements memory.Store: the database answers and its schema is the one this
// build writes.
func (s *Store) Check(ctx context.Context) error {
	v, err := currentVersion(ctx, s.pool)
	if err != nil {
		return fmt.Errorf("check %s: %w", s.url, err)
	}
	if v != SchemaVersion() {
		return fmt.Errorf("%s has schema version %d, this relay writes %d; restart the daemon to migrate or upgrade relay", s.url, v, SchemaVersion())
	}
	return nil
}

// SchemaVersionOf reports the schema version of the database at url without migrating it.
func SchemaVersionOf(ctx context.Context, url string) (int, error) {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, fmt.Errorf("connect to %s: %w", blob.Redact(url), redactErr(err, url))
	}
	defer c.Close(ctx)
	var exists bool
	if err := c.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, errSchemaMissing
	}
	return currentVersion(ctx, c)
}

var _ memory.Store = (*Store)(nil)

// Probe checks the database at url without changing it: it connects, reads the schema
// version, and writes and reads back a probe thread in a transaction it rolls back (so the
// role's write privileges on the real tables are tested too).
func Probe(ctx context.Context, url string) (schema int, err error) {
	schema, err = SchemaVersionOf(ctx, url)
	if err != nil {
		return schema, err
	}
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return schema, fmt.Errorf("connect to %s: %w", blob.Redact(url), redactErr(err, url))
	}
	defer c.Close(ctx)
	tx, err := c.Begin(ctx)
	if err != nil {
		return schema, err
	}
	defer tx.Rollback(ctx)
	id := uuid.NewString()
	now := time.Now().UTC()
	if _, err := tx.Exec(ctx, `INSERT INTO threads (id, name, created_at, updated_at, version) VALUES ($1, 'relay doctor probe', $2, $2, 1)`, id, now); err != nil {
		return schema, fmt.Errorf("write a probe row: %w", err)
	}
	var name string
	if err := tx.QueryRow(ctx, `SELECT name FROM threads WHERE id = $1`, id).Scan(&name); err != nil || name != "relay doctor probe" {
		return schema, fmt.Errorf("read the probe row back: %v (got %q)", err, name)
	}
	return schema, nil
}
