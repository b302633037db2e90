package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/relaydev/relay/internal/memory"
)

const hopSchema = `
CREATE TABLE IF NOT EXISTS a2a_hops (
	thread_id TEXT PRIMARY KEY,
	hops      INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS a2a_messages (
	thread_id       TEXT NOT NULL,
	idempotency_key TEXT NOT NULL,
	msg_id          TEXT NOT NULL,
	status          TEXT NOT NULL, -- pending | done
	response        BLOB,
	received_at     INTEGER NOT NULL,
	PRIMARY KEY (thread_id, idempotency_key)
);
`

// ClaimHop implements memory.HopLedger; the hop and the pending key are one transaction,
// so concurrent senders cannot overshoot the limit.
func (s *SQLite) ClaimHop(ctx context.Context, threadID string, maxHops int, key, msgID string, at time.Time) (int, error) {
	var hops int
	err := s.WriteTx(ctx, func(tx Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO a2a_hops(thread_id, hops) VALUES (?, 1)
			ON CONFLICT(thread_id) DO UPDATE SET hops = hops + 1 WHERE hops < ? RETURNING hops`,
			threadID, maxHops).Scan(&hops)
		if errors.Is(err, sql.ErrNoRows) {
			return memory.ErrHopLimit
		}
		if err != nil || key == "" {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO a2a_messages(thread_id, idempotency_key, msg_id, status, received_at) VALUES (?,?,?,'pending',?)
			ON CONFLICT(thread_id, idempotency_key) DO UPDATE SET msg_id = excluded.msg_id, received_at = excluded.received_at`,
			threadID, key, msgID, at.UnixNano())
		return err
	})
	return hops, err
}

// IdempotentResponse implements memory.HopLedger. A pending row left by a crash reads as
// unknown, so the message runs again.
func (s *SQLite) IdempotentResponse(ctx context.Context, threadID, key string) ([]byte, error) {
	var status string
	var resp []byte
	err := s.r.QueryRowContext(ctx, `SELECT status, response FROM a2a_messages WHERE thread_id = ? AND idempotency_key = ?`,
		threadID, key).Scan(&status, &resp)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && status != "done") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read idempotency key: %w", err)
	}
	return resp, nil
}

// FinishIdempotent implements memory.HopLedger.
func (s *SQLite) FinishIdempotent(ctx context.Context, threadID, key string, response []byte) error {
	return s.WriteTx(ctx, func(tx Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE a2a_messages SET status = 'done', response = ? WHERE thread_id = ? AND idempotency_key = ?`, response, threadID, key)
		return err
	})
}

// ReleaseIdempotent implements memory.HopLedger.
func (s *SQLite) ReleaseIdempotent(ctx context.Context, threadID, key string) error {
	return s.WriteTx(ctx, func(tx Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM a2a_messages WHERE thread_id = ? AND idempotency_key = ? AND status = 'pending'`, threadID, key)
		return err
	})
}

// Hops implements memory.HopLedger.
func (s *SQLite) Hops(ctx context.Context, threadID string) (int, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT hops FROM a2a_hops WHERE thread_id = ?`, threadID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return n, err
}
