package capability

import (
	"context"
	"database/sql"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/relaydev/relay/internal/memory"
)

// CachedResult is one cache entry.
type CachedResult struct {
	Capability  string
	ThreadID    string
	ArtifactRef string
	Preview     json.RawMessage
	ExpiresAt   time.Time
}

// Call is one entry of the per-thread capability call log.
type Call struct {
	ThreadID     string          `json:"thread_id"`
	Capability   string          `json:"capability"`
	Args         json.RawMessage `json:"args"`
	ArtifactRef  string          `json:"artifact_ref"`
	CacheHit     bool            `json:"cache_hit"`
	PreviewBytes int             `json:"preview_bytes"`
	DurationMS   int64           `json:"duration_ms"`
	At           time.Time       `json:"at"`
}

// Store persists the cache and the call log.
type Store interface {
	// CacheGet returns nil, nil on a miss or an expired entry.
	CacheGet(ctx context.Context, key string, now time.Time) (*CachedResult, error)
	CachePut(ctx context.Context, key string, r CachedResult, now time.Time) error
	RecordCall(ctx context.Context, c Call) error
	Calls(ctx context.Context, threadID string) ([]Call, error)
}

// MaxCacheEntries bounds the cache so it cannot grow without limit; the soonest-expiring go first.
const MaxCacheEntries = 10000

// MemStore is an in-memory Store for tests and embedding.
type MemStore struct {
	mu    sync.Mutex
	cache map[string]CachedResult
	calls []Call
}

func NewMemStore() *MemStore { return &MemStore{cache: map[string]CachedResult{}} }

func (m *MemStore) CacheGet(_ context.Context, key string, now time.Time) (*CachedResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.cache[key]
	if !ok || !now.Before(c.ExpiresAt) {
		delete(m.cache, key)
		return nil, nil
	}
	return &c, nil
}

func (m *MemStore) CachePut(_ context.Context, key string, r CachedResult, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.cache) >= MaxCacheEntries {
		type kv struct {
			k string
			t time.Time
		}
		all := make([]kv, 0, len(m.cache))
		for k, v := range m.cache {
			all = append(all, kv{k, v.ExpiresAt})
		}
		sort.Slice(all, func(i, j int) bool { return all[i].t.Before(all[j].t) })
		for _, e := range all[:len(all)-MaxCacheEntries+1] {
			delete(m.cache, e.k)
		}
	}
	m.cache[key] = r
	return nil
}

func (m *MemStore) RecordCall(_ context.Context, c Call) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, c)
	return nil
}

func (m *MemStore) Calls(_ context.Context, threadID string) ([]Call, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Call
	for _, c := range m.calls {
		if c.ThreadID == threadID {
			out = append(out, c)
		}
	}
	return out, nil
}

func init() { memory.RegisterMigration("0100_capability_cache_calls", Schema) }

// Schema creates the SQLite tables the SQLStore uses. Safe to run repeatedly.
const Schema = `
CREATE TABLE IF NOT EXISTS cap_cache (
	key          TEXT PRIMARY KEY,
	capability   TEXT NOT NULL,
	thread_id    TEXT NOT NULL,
	artifact_ref TEXT NOT NULL,
	preview      BLOB NOT NULL,
	expires_at   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS cap_cache_expires ON cap_cache(expires_at);
CREATE TABLE IF NOT EXISTS cap_calls (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	thread_id     TEXT NOT NULL,
	capability    TEXT NOT NULL,
	args          BLOB NOT NULL,
	artifact_ref  TEXT NOT NULL,
	cache_hit     INTEGER NOT NULL,
	preview_bytes INTEGER NOT NULL,
	duration_ms   INTEGER NOT NULL,
	at            INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS cap_calls_thread ON cap_calls(thread_id, id);
`

// DB is the store's SQL access: a read pool and the single serialized writer
// (memory.SQLite implements it).
type DB interface {
	ReadDB() *sql.DB
	WriteTx(ctx context.Context, fn func(*sql.Tx) error) error
}

// SQLStore keeps the cache and call log in SQLite (relay.db); the tables come from Schema,
// registered as a store migration.
type SQLStore struct{ db DB }

// NewSQLStore returns a Store over db; the tables must exist (see Schema).
func NewSQLStore(db DB) *SQLStore { return &SQLStore{db: db} }

func (s *SQLStore) CacheGet(ctx context.Context, key string, now time.Time) (*CachedResult, error) {
	var c CachedResult
	var exp int64
	var prev []byte
	err := s.db.ReadDB().QueryRowContext(ctx,
		`SELECT capability, thread_id, artifact_ref, preview, expires_at FROM cap_cache WHERE key = ? AND expires_at > ?`,
		key, now.UnixNano()).Scan(&c.Capability, &c.ThreadID, &c.ArtifactRef, &prev, &exp)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.Preview = prev
	c.ExpiresAt = time.Unix(0, exp)
	return &c, nil
}

func (s *SQLStore) CachePut(ctx context.Context, key string, r CachedResult, now time.Time) error {
	return s.db.WriteTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO cap_cache(key, capability, thread_id, artifact_ref, preview, expires_at) VALUES(?,?,?,?,?,?)
			 ON CONFLICT(key) DO UPDATE SET artifact_ref=excluded.artifact_ref, preview=excluded.preview, expires_at=excluded.expires_at`,
			key, r.Capability, r.ThreadID, r.ArtifactRef, []byte(r.Preview), r.ExpiresAt.UnixNano())
		if err != nil {
			return err
		}
		// Expired rows are dead weight; the size bound keeps the table from growing forever.
		_, err = tx.ExecContext(ctx,
			`DELETE FROM cap_cache WHERE expires_at <= ? OR key IN (
				SELECT key FROM cap_cache ORDER BY expires_at DESC LIMIT -1 OFFSET ?)`,
			now.UnixNano(), MaxCacheEntries)
		return err
	})
}

func (s *SQLStore) RecordCall(ctx context.Context, c Call) error {
	return s.db.WriteTx(ctx, func(tx *sql.Tx) error { return InsertCall(ctx, tx, c) })
}

// InsertCall writes one call-log row inside tx (also used by bundle import).
func InsertCall(ctx context.Context, tx *sql.Tx, c Call) error {
	_, err := tx.ExecContext(ctx,
		`INSERT INTO cap_calls(thread_id, capability, args, artifact_ref, cache_hit, preview_bytes, duration_ms, at) VALUES(?,?,?,?,?,?,?,?)`,
		c.ThreadID, c.Capability, []byte(c.Args), c.ArtifactRef, c.CacheHit, c.PreviewBytes, c.DurationMS, c.At.UnixNano())
	return err
}

func (s *SQLStore) Calls(ctx context.Context, threadID string) ([]Call, error) {
	rows, err := s.db.ReadDB().QueryContext(ctx,
		`SELECT thread_id, capability, args, artifact_ref, cache_hit, preview_bytes, duration_ms, at FROM cap_calls WHERE thread_id = ? ORDER BY id`, threadID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Call
	for rows.Next() {
		var c Call
		var args []byte
		var at int64
		if err := rows.Scan(&c.ThreadID, &c.Capability, &args, &c.ArtifactRef, &c.CacheHit, &c.PreviewBytes, &c.DurationMS, &at); err != nil {
			return nil, err
		}
		c.Args = args
		c.At = time.Unix(0, at).UTC()
		out = append(out, c)
	}
	return out, rows.Err()
}
