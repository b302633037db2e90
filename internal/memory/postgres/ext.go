package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/relaydev/relay/internal/memory"
)

// sqlCacheGet reads a cache entry with its result's size, joined as the SQLite store joins
// it (one round trip).
var sqlCacheGet = fmt.Sprintf(`SELECT c.capability, c.thread_id, c.artifact_ref, c.preview, c.expires_at, a.size
	FROM cap_cache c LEFT JOIN artifacts a ON %[1]s = right(c.artifact_ref, %[2]d) AND a.thread_id = c.thread_id
		AND length(c.artifact_ref) IN (%[2]d, %[3]d) AND (length(c.artifact_ref) = %[2]d OR a.ref = c.artifact_ref)
	WHERE c.key = $1 AND c.expires_at > $2 LIMIT 2`, shortExpr, memory.ShortRefLen, memory.RefLen)

// CacheGet implements memory.CapabilityStore.
func (s *Store) CacheGet(ctx context.Context, key string, now time.Time) (*memory.CachedResult, error) {
	rows, err := s.pool.Query(ctx, sqlCacheGet, key, now)
	if err != nil {
		return nil, fmt.Errorf("read capability cache: %w", err)
	}
	defer rows.Close()
	c, err := memory.CacheEntry(rows, func(c *memory.CachedResult, size **int64) error {
		var prev []byte
		err := rows.Scan(&c.Capability, &c.ThreadID, &c.ArtifactRef, &prev, &c.ExpiresAt, size)
		c.Preview = prev
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read capability cache: %w", err)
	}
	return c, nil
}

// CachePut implements memory.CapabilityStore.
func (s *Store) CachePut(ctx context.Context, key string, r memory.CachedResult, now time.Time) error {
	return s.tx(ctx, "write capability cache", func(tx pgx.Tx) error { return cachePut(ctx, tx, key, r, now) })
}

func cachePut(ctx context.Context, tx pgx.Tx, key string, r memory.CachedResult, now time.Time) error {
	_, err := tx.Exec(ctx,
		`INSERT INTO cap_cache (key, capability, thread_id, artifact_ref, preview, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
		 ON CONFLICT (key) DO UPDATE SET artifact_ref = excluded.artifact_ref, preview = excluded.preview, expires_at = excluded.expires_at`,
		key, r.Capability, r.ThreadID, r.ArtifactRef, []byte(r.Preview), r.ExpiresAt)
	if err != nil {
		return err
	}
	// Expired rows are dead weight; the size bound keeps the table from growing forever.
	_, err = tx.Exec(ctx,
		`DELETE FROM cap_cache WHERE expires_at <= $1 OR key IN (
			SELECT key FROM cap_cache ORDER BY expires_at DESC OFFSET $2)`,
		now, memory.MaxCacheEntries)
	return err
}

// RecordCall implements memory.CapabilityStore: the call log, the cache entry, the event
// and the metrics in one transaction.
func (s *Store) RecordCall(ctx context.Context, rec memory.CallRecord) (memory.Event, error) {
	id := rec.Call.ThreadID
	touches, data, err := rec.Checked(id)
	if err != nil {
		return memory.Event{}, err
	}
	var ev memory.Event
	err = s.tx(ctx, "record capability call", func(tx pgx.Tx) error {
		if touches { // the thread's row lock first, as every write that adds an event takes it
			if _, _, _, err := lockThread(ctx, tx, id); err != nil {
				return err
			}
		}
		if rec.Cache != nil {
			if err := cachePut(ctx, tx, rec.CacheKey, *rec.Cache, rec.Call.At); err != nil {
				return fmt.Errorf("write capability cache: %w", err)
			}
		}
		c := rec.Call
		if _, err := tx.Exec(ctx,
			`INSERT INTO cap_calls (thread_id, capability, args, artifact_ref, cache_hit, preview_bytes, duration_ms, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			c.ThreadID, c.Capability, []byte(c.Args), c.ArtifactRef, c.CacheHit, c.PreviewBytes, c.DurationMS, c.At); err != nil {
			return err
		}
		if m := rec.Metrics; m != (memory.Metrics{}) {
			if _, err := tx.Exec(ctx, `UPDATE threads SET cache_hits = cache_hits + $1, tokens_avoided = tokens_avoided + $2 WHERE id = $3`, m.CacheHits, m.TokensAvoided, id); err != nil {
				return err
			}
		}
		if rec.EventType != "" {
			var err error
			ev, err = insertEvent(ctx, tx, id, rec.EventType, s.stamp(), data)
			return err
		}
		return nil
	})
	if err != nil {
		return memory.Event{}, err
	}
	if rec.EventType != "" {
		s.broker.Notify(id)
	}
	return ev, nil
}

// Calls implements memory.CapabilityStore.
func (s *Store) Calls(ctx context.Context, threadID string) ([]memory.CapabilityCall, error) {
	return calls(ctx, s.pool, threadID)
}

func calls(ctx context.Context, q querier, threadID string) ([]memory.CapabilityCall, error) {
	rows, err := q.Query(ctx,
		`SELECT thread_id, capability, args, artifact_ref, cache_hit, preview_bytes, duration_ms, at FROM cap_calls WHERE thread_id = $1 ORDER BY id`, threadID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []memory.CapabilityCall
	for rows.Next() {
		var c memory.CapabilityCall
		var args []byte
		if err := rows.Scan(&c.ThreadID, &c.Capability, &args, &c.ArtifactRef, &c.CacheHit, &c.PreviewBytes, &c.DurationMS, &c.At); err != nil {
			return nil, err
		}
		c.Args = args
		c.At = c.At.UTC()
		out = append(out, c)
	}
	return out, rows.Err()
}

// ClaimHop implements memory.HopLedger; the hop and the pending key are one transaction and
// the counter row is updated in place, so senders on any daemon cannot overshoot the limit.
func (s *Store) ClaimHop(ctx context.Context, threadID string, maxHops int, key, msgID string, at time.Time) (int, error) {
	var hops int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO a2a_hops (thread_id, hops) VALUES ($1, 1)
			ON CONFLICT (thread_id) DO UPDATE SET hops = a2a_hops.hops + 1 WHERE a2a_hops.hops < $2 RETURNING hops`,
			threadID, maxHops).Scan(&hops)
		if errors.Is(err, pgx.ErrNoRows) {
			return memory.ErrHopLimit
		}
		if err != nil || key == "" {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO a2a_messages (thread_id, idempotency_key, msg_id, status, received_at) VALUES ($1, $2, $3, 'pending', $4)
			ON CONFLICT (thread_id, idempotency_key) DO UPDATE SET msg_id = excluded.msg_id, received_at = excluded.received_at`,
			threadID, key, msgID, at)
		return err
	})
	if err != nil && !errors.Is(err, memory.ErrHopLimit) {
		return 0, fmt.Errorf("count hop: %w", err)
	}
	return hops, err
}

// IdempotentResponse implements memory.HopLedger. A pending row left by a crash reads as
// unknown, so the message runs again.
func (s *Store) IdempotentResponse(ctx context.Context, threadID, key string) ([]byte, error) {
	var status string
	var resp []byte
	err := s.pool.QueryRow(ctx, `SELECT status, response FROM a2a_messages WHERE thread_id = $1 AND idempotency_key = $2`,
		threadID, key).Scan(&status, &resp)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && status != "done") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read idempotency key: %w", err)
	}
	return resp, nil
}

// FinishIdempotent implements memory.HopLedger.
func (s *Store) FinishIdempotent(ctx context.Context, threadID, key string, response []byte) error {
	_, err := s.pool.Exec(ctx, `UPDATE a2a_messages SET status = 'done', response = $1 WHERE thread_id = $2 AND idempotency_key = $3`, response, threadID, key)
	if err != nil {
		return fmt.Errorf("store idempotent response: %w", err)
	}
	return nil
}

// ReleaseIdempotent implements memory.HopLedger.
func (s *Store) ReleaseIdempotent(ctx context.Context, threadID, key string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM a2a_messages WHERE thread_id = $1 AND idempotency_key = $2 AND status = 'pending'`, threadID, key)
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// Hops implements memory.HopLedger.
func (s *Store) Hops(ctx context.Context, threadID string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT hops FROM a2a_hops WHERE thread_id = $1`, threadID).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return n, err
}
