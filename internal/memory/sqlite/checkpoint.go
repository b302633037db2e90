package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/relaydev/relay/internal/memory"
)

// Checkpointing copies committed WAL frames into the database file. SQLite does it inside
// the commit that crosses wal_autocheckpoint (1,000 pages by default), so every few dozen
// 100 KB puts one writer paid for a whole checkpoint (writes plus an fsync of the database)
// before its answer. Here a separate connection runs PASSIVE checkpoints (they never block
// writers or readers) shortly after commits; durability is unchanged because a commit is
// acknowledged only once its WAL frames are fsynced.

const (
	// checkpointEvery is how often, at most, under steady writes: each checkpoint copies
	// the pages changed since the last (a patch rewrites the same few: the thread's row,
	// the index and table tails) and then rewinds the WAL with a commit of its own, so at
	// 20 ms it took ~5% of a stream of sequential patches' CPU; at 100 ms the WAL holds at
	// most a few MB between checkpoints (100 ms of 100 KB puts).
	checkpointEvery = 100 * time.Millisecond
	// checkpointDeferred is the delay after commits that skipped their fsync (deferred
	// writes: search results, cache, call log): long enough that a run of searches shares
	// one background sync, short enough that their power-loss window stays small.
	checkpointDeferred      = 500 * time.Millisecond
	fallbackCheckpointPages = 8000 // the writer checkpoints itself beyond this WAL size
	// When at most catchUpCommits commits land during a copy, what they wrote is copied
	// under the writer (see checkpoint); catchUpCopies bounds the copies that try to get
	// there. A copy of the WAL's tail under a stream of patches or 100 KB puts takes a few
	// ms, during which a few commits land.
	catchUpCommits = 4
	catchUpCopies  = 3
)

// kickCheckpoint asks the checkpointer to run soon (within checkpointDeferred when the
// commit was deferred); it never blocks the writer. Only the first kick of each kind
// until the checkpointer next runs is sent: a send wakes the checkpointer's goroutine,
// and waking it after every commit cost each sequential patch a thread hand-off.
func (s *SQLite) kickCheckpoint(deferred bool) {
	ch, kicked := s.ckKick, &s.ckKicked
	if deferred {
		ch, kicked = s.ckLazy, &s.ckLazyKicked
	}
	if kicked.Load() || !kicked.CompareAndSwap(false, true) {
		return
	}
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (s *SQLite) checkpointer() {
	defer close(s.ckDone)
	t := time.NewTimer(checkpointEvery)
	defer t.Stop()
	// The WAL of a store just opened is empty or fully copied: its first commit would
	// rewind it. Do it here, before the first request's.
	s.wmu.Lock()
	if !s.shut {
		s.restartWAL()
	}
	s.wmu.Unlock()
	for {
		wait := checkpointEvery
		select {
		case <-s.ckKick:
		case <-s.ckLazy:
			wait = checkpointDeferred
		case <-s.ckQuit:
			return
		}
		t.Reset(wait)
	accumulate: // let a burst of commits accumulate; a durable one shortens the wait
		for {
			select {
			case <-t.C:
				break accumulate
			case <-s.ckKick:
				if wait != checkpointEvery {
					wait = checkpointEvery
					t.Reset(wait) // Go 1.23+: Reset drops a pending tick, no drain needed
				}
			case <-s.ckQuit:
				return
			}
		}
		// Commits from here on kick again: the checkpoint below may not copy them.
		s.ckKicked.Store(false)
		s.ckLazyKicked.Store(false)
		// A failed or partial checkpoint is retried after the next commit, and the writer's
		// fallback still bounds the WAL.
		s.checkpoint(wait == checkpointDeferred)
	}
}

// checkpoint copies the WAL into the database, then under the writer copies what
// committed meanwhile and rewinds the WAL (restartWAL). The copies run without the writer
// while they are long: after a quiet run of searches the WAL is 2,000-5,000 pages and the
// database's fsync, 10-45 ms, and holding the writer through it held every search's commit
// that long (their p99). But under a stream of writes some commit always lands between a
// copy and the rewind, and SQLite rewinds only a WAL copied to its end: the WAL grew by
// 20 MB over 1,000 sequential patches, each of whose fsyncs then also journalled the
// file's new blocks (ext4: 450 µs a commit of 5 pages against 280 overwriting). So the
// copies repeat until few commits land during one, and the last, under the writer, takes
// the rest. (Commits, not the WAL's length, measure that: a commit after a complete copy
// rewinds the WAL itself, and its length starts again from 0.)
//
// After deferred commits alone (no durable write meanwhile) no request's commit may be the
// one that rewinds the WAL, as the rewind fsyncs: a read transaction held across the copy
// stops any commit from rewinding it (SQLite appends instead while a reader uses the WAL),
// and the copy under the writer takes what committed meanwhile before this rewinds it.
func (s *SQLite) checkpoint(quiet bool) {
	ctx := context.Background()
	var pin *sql.Tx
	if quiet {
		var err error
		if pin, err = s.pinWAL(ctx); err != nil {
			return // retried at the next deferred commit
		}
		defer pin.Rollback()
	}
	copyWAL := func() (frames, done int, ok bool) {
		var busy int
		err := s.ck.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &done)
		return frames, done, err == nil && busy == 0 && frames > 0
	}
	// Copy without the writer until few commits landed during a copy (or before the check
	// after it): the copy under the writer then takes only theirs. With the pin, the first
	// copy is all there is to take without the writer.
	for copies := 1; ; copies++ {
		commits := s.batches.Load()
		frames, done, ok := copyWAL()
		if s.afterCopy != nil {
			s.afterCopy()
		}
		if !ok || (pin == nil && done != frames) {
			return // failed, or a reader's snapshot holds frames back: the rewind would fail
		}
		if pin != nil || s.batches.Load()-commits <= catchUpCommits {
			break
		}
		if copies == catchUpCopies {
			return // writes outpace the copies; the next round tries again
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.shut {
		return
	}
	if pin != nil {
		pin.Rollback()
	}
	if frames, done, ok := copyWAL(); !ok || done != frames {
		return
	}
	s.restartWAL()
}

// pinWAL opens a read transaction on the WAL as it is now; while it is open no commit can
// rewind the WAL.
func (s *SQLite) pinWAL(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM store_meta`).Scan(&n); err != nil { // a read starts the snapshot
		tx.Rollback()
		return nil, err
	}
	return tx, nil
}

// restartWAL starts the WAL over right after a checkpoint copied all of it, with a
// one-row write of its own (under wmu, alone: batched with a request's write, the fsync
// fell on that request when it led the batch). The first commit after such a checkpoint
// rewinds the WAL, and SQLite fsyncs the new WAL header even when the commit itself skips
// its fsync (an out-of-order write could corrupt the database at a power loss): without
// this, that fsync fell on whichever request wrote next, a search's deferred bookkeeping
// above all. The write counts rewinds in store_meta because it must change a row (SQLite
// writes nothing for an update to the same value). It does not kick the checkpointer (that
// would loop); its frame is copied with the next commit's. A reader still on the old WAL
// makes SQLite append instead, and the rewind then falls on a later commit, as before.
func (s *SQLite) restartWAL() {
	req := &writeReq{ctx: memory.Deferred(context.Background()), done: make(chan error, 1), deferred: true, restart: true,
		op: func(ctx context.Context, tx Tx, _ *batch) (func(), error) {
			_, err := tx.ExecContext(ctx, `INSERT INTO store_meta(key, value) VALUES ('wal_restarts', '1')
				ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1`)
			return nil, err
		}}
	s.runBatch([]*writeReq{req})
	<-req.done
}
