package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relaydev/relay/internal/memory"
)

const capabilitySchema = `
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

// sqlCacheGet reads the result's size with the entry: looking the artifact up on its
// own took a fifth of a cache hit's CPU through relay mcp (the hit's bookkeeping
// counts the tokens its preview saved). The entry holds the ref as the handler
// answered it, short when unique, so the join is on the short form (artifacts_short;
// a full ref must also match whole) and gives a row per artifact of the thread it
// names: the size counts when there is one (else the caller resolves the ref).
var sqlCacheGet = fmt.Sprintf(`SELECT c.capability, c.thread_id, c.artifact_ref, c.preview, c.expires_at, a.size
	FROM cap_cache c LEFT JOIN artifacts a ON %[1]s = substr(c.artifact_ref, -%[2]d) AND +a.thread_id = c.thread_id
		AND length(c.artifact_ref) IN (%[2]d, %[3]d) AND (length(c.artifact_ref) = %[2]d OR a.ref = c.artifact_ref)
	WHERE c.key = ? AND c.expires_at > ? LIMIT 2`, shortExpr, memory.ShortRefLen, memory.RefLen)

// CacheGet implements memory.CapabilityStore.
func (s *SQLite) CacheGet(ctx context.Context, key string, now time.Time) (*memory.CachedResult, error) {
	rows, err := s.readRows(ctx, sqlCacheGet, key, now.UnixNano())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return memory.CacheEntry(rows, func(c *memory.CachedResult, size **int64) error {
		var exp int64
		var prev []byte
		err := rows.Scan(&c.Capability, &c.ThreadID, &c.ArtifactRef, &prev, &exp, size)
		c.Preview, c.ExpiresAt = prev, time.Unix(0, exp)
		return err
	})
}

// The bookkeeping every capability call writes (a search's above all), prepared once on
// the writer with the other hot statements: parsing them again took a quarter of the
// call's bookkeeping CPU.
const (
	sqlCachePut = `INSERT INTO cap_cache(key, capability, thread_id, artifact_ref, preview, expires_at) VALUES(?,?,?,?,?,?)
			 ON CONFLICT(key) DO UPDATE SET artifact_ref=excluded.artifact_ref, preview=excluded.preview, expires_at=excluded.expires_at`
	sqlCacheExpire   = `DELETE FROM cap_cache WHERE expires_at <= ?`
	sqlCacheCount    = `SELECT count(*) FROM cap_cache`
	sqlCacheOverflow = `DELETE FROM cap_cache WHERE key IN (SELECT key FROM cap_cache ORDER BY expires_at LIMIT ?)`
	sqlInsertCall    = `INSERT INTO cap_calls(thread_id, capability, args, artifact_ref, cache_hit, preview_bytes, duration_ms, at) VALUES(?,?,?,?,?,?,?,?)`
)

func init() {
	hotStatements = append(hotStatements, sqlCachePut, sqlCacheExpire, sqlCacheCount, sqlCacheOverflow, sqlInsertCall, sqlThreadCount, sqlAddMetrics)
}

// CachePut implements memory.CapabilityStore.
func (s *SQLite) CachePut(ctx context.Context, key string, r memory.CachedResult, now time.Time) error {
	return s.WriteTx(ctx, func(tx Tx) error { return s.cachePut(ctx, tx, key, r, now) })
}

func (s *SQLite) cachePut(ctx context.Context, tx Tx, key string, r memory.CachedResult, now time.Time) error {
	_, err := s.exec(ctx, tx, sqlCachePut, key, r.Capability, r.ThreadID, r.ArtifactRef, []byte(r.Preview), r.ExpiresAt.UnixNano())
	if err != nil {
		return err
	}
	// Expired rows are dead weight; the size bound keeps the table from growing forever.
	// The overflow is looked for only past the bound: walking the expiry index to
	// MaxCacheEntries on every put cost more than the rest of the put.
	if _, err = s.exec(ctx, tx, sqlCacheExpire, now.UnixNano()); err != nil {
		return err
	}
	var n int
	if err := s.queryRow(ctx, tx, sqlCacheCount).Scan(&n); err != nil || n <= memory.MaxCacheEntries {
		return err
	}
	// The soonest-expiring rows past the bound, walked from that end of the expiry index:
	// skipping the MaxCacheEntries to keep instead cost a full cache's walk on every put
	// once the cache was full (1.1 ms a put at 10,000 entries).
	_, err = s.exec(ctx, tx, sqlCacheOverflow, n-memory.MaxCacheEntries)
	return err
}

// RecordCall implements memory.CapabilityStore: one write for the call log, the cache
// entry, the event and the metrics (four commits before, each with its own transaction,
// WAL append and wake-up of the thread's followers).
func (s *SQLite) RecordCall(ctx context.Context, rec memory.CallRecord) (memory.Event, error) {
	id := rec.Call.ThreadID
	touches, data, err := rec.Checked(id)
	if err != nil {
		return memory.Event{}, err
	}
	var ev memory.Event
	err = s.write(ctx, func(ctx context.Context, tx Tx, b *batch) (func(), error) {
		if rec.Cache != nil {
			if err := s.cachePut(ctx, tx, rec.CacheKey, *rec.Cache, rec.Call.At); err != nil {
				return nil, fmt.Errorf("write capability cache: %w", err)
			}
		}
		if err := s.insertCall(ctx, tx, rec.Call); err != nil {
			return nil, err
		}
		var afters []func()
		if rec.Metrics != (memory.Metrics{}) {
			after, err := s.addMetrics(ctx, tx, b, id, rec.Metrics) // finds the thread, or fails
			if err != nil {
				return nil, err
			}
			afters = append(afters, after)
		} else if touches {
			if err := s.threadExistsIn(ctx, tx, id); err != nil {
				return nil, err
			}
		}
		if rec.EventType != "" {
			e, after, err := s.appendEvent(ctx, tx, id, rec.EventType, data)
			if err != nil {
				return nil, err
			}
			ev = e
			afters = append(afters, after) // after the metrics: a follower woken by the event reads the new header
		}
		return func() {
			for _, a := range afters {
				if a != nil {
					a()
				}
			}
		}, nil
	})
	if err != nil {
		if memory.IsNotFound(err) || errors.Is(err, errClosed) || ctx.Err() != nil {
			return memory.Event{}, err
		}
		return memory.Event{}, fmt.Errorf("record capability call: %w", err)
	}
	return ev, nil
}

func (s *SQLite) insertCall(ctx context.Context, tx Tx, c memory.CapabilityCall) error {
	_, err := s.exec(ctx, tx, sqlInsertCall,
		c.ThreadID, c.Capability, []byte(c.Args), c.ArtifactRef, c.CacheHit, c.PreviewBytes, c.DurationMS, c.At.UnixNano())
	return err
}

// Calls implements memory.CapabilityStore.
func (s *SQLite) Calls(ctx context.Context, threadID string) ([]memory.CapabilityCall, error) {
	return calls(ctx, s.r, threadID)
}

func calls(ctx context.Context, q querier, threadID string) ([]memory.CapabilityCall, error) {
	rows, err := q.QueryContext(ctx,
		`SELECT thread_id, capability, args, artifact_ref, cache_hit, preview_bytes, duration_ms, at FROM cap_calls WHERE thread_id = ? ORDER BY id`, threadID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []memory.CapabilityCall
	for rows.Next() {
		var c memory.CapabilityCall
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
