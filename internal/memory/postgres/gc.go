package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/memory/blobgc"
)

// Bucket garbage collection (package blobgc): puts pin the hash of their body in
// blob_pins before they touch the bucket, under a shared advisory lock on the hash; a
// sweep takes the same locks exclusively for a batch, checks artifacts and live pins, and
// deletes the unreferenced objects before it commits. Any number of daemons may put while
// one sweeps.

const (
	// pinLockSpace is the first key of the per-hash advisory locks ("rlyb").
	pinLockSpace = 0x726c7962
	// sweepLockKey is held by the daemon sweeping the bucket, so two never sweep at once
	// ("relay.gc" in ASCII).
	sweepLockKey int64 = 0x72656c61792e6763
	// pinTTL is how long a pin protects its body: a pin older than this was left by a
	// daemon that died mid-put.
	pinTTL = 24 * time.Hour
)

// pin records that a put of body sum is in flight and returns the pin's id. It waits while
// a sweep holds sum's lock, so the sweep either saw the pin or finished deleting first.
func (s *Store) pin(ctx context.Context, sum string) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `WITH l AS (SELECT pg_advisory_xact_lock_shared($1, hashtext($2)))
		INSERT INTO blob_pins (hash) SELECT $2 FROM l RETURNING id`, int32(pinLockSpace), sum).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("pin artifact body %s: %w", sum[:min(12, len(sum))], err)
	}
	return id, nil
}

// unpin drops pins after a put that did not commit them away (an error, or a put that
// found the artifact already there). A failure only leaves the pin to expire.
func (s *Store) unpin(ids ...int64) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.pool.Exec(ctx, `DELETE FROM blob_pins WHERE id = ANY($1)`, ids)
}

// StoreID implements blobgc.Index.
func (s *Store) StoreID(ctx context.Context) (string, error) {
	var id string
	err := s.pool.QueryRow(ctx, `SELECT value FROM store_meta WHERE key = 'store_id'`).Scan(&id)
	return id, err
}

// Unreferenced implements blobgc.Index.
func (s *Store) Unreferenced(ctx context.Context, sums []string) ([]string, error) {
	return unreferenced(ctx, s.pool, sums, false)
}

func unreferenced(ctx context.Context, q querier, sums []string, pins bool) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT h FROM unnest($1::text[]) AS h
		WHERE NOT EXISTS (SELECT 1 FROM artifacts WHERE hash = h)
		AND NOT ($2 AND EXISTS (SELECT 1 FROM blob_pins WHERE hash = h AND pinned_at > now() - $3 * interval '1 second'))`,
		sums, pins, int64(pinTTL/time.Second))
	if err != nil {
		return nil, fmt.Errorf("look up referenced bodies: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Collect implements blobgc.Index.
func (s *Store) Collect(ctx context.Context, sums []string, del func([]string) error) ([]string, error) {
	var unused []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// In hash order, so two sweeps could never deadlock (one sweeps at a time anyway).
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, k) FROM (SELECT DISTINCT hashtext(h) AS k FROM unnest($2::text[]) AS h) t ORDER BY k`,
			int32(pinLockSpace), sums); err != nil {
			return fmt.Errorf("lock bodies: %w", err)
		}
		var err error
		if unused, err = unreferenced(ctx, tx, sums, true); err != nil || len(unused) == 0 {
			return err
		}
		return del(unused)
	})
	if err != nil {
		return nil, err
	}
	return unused, nil
}

// SweepBlobs runs a garbage collection of the store's bucket (package blobgc). One daemon
// sweeps at a time; another daemon's sweep in progress is an error saying so. It also
// drops pins left by daemons that died mid-put.
func (s *Store) SweepBlobs(ctx context.Context, opt blobgc.Options) (blobgc.Report, error) {
	bs, ok := s.blobs.(blob.Collectable)
	if !ok {
		return blobgc.Report{}, blobgc.ErrNoBucket
	}
	if opt.DryRun {
		return blobgc.Sweep(ctx, bs, s, opt)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return blobgc.Report{}, err
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, sweepLockKey).Scan(&locked); err != nil {
		return blobgc.Report{}, fmt.Errorf("take the sweep lock: %w", err)
	}
	if !locked {
		return blobgc.Report{}, blobgc.ErrBusy
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, sweepLockKey); err != nil {
			conn.Conn().Close(uctx) // closing the session releases the lock
		}
	}()
	if _, err := s.pool.Exec(ctx, `DELETE FROM blob_pins WHERE pinned_at < now() - $1 * interval '1 second'`, int64(pinTTL/time.Second)); err != nil {
		return blobgc.Report{}, fmt.Errorf("drop expired pins: %w", err)
	}
	return blobgc.Sweep(ctx, bs, s, opt)
}
