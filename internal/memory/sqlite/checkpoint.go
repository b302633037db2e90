package sqlite

import (
	"context"
	"time"
)

// Checkpointing copies committed WAL frames into the database file. SQLite does it inside
// the commit that crosses wal_autocheckpoint (1,000 pages by default), so every few dozen
// 100 KB puts one writer paid for a whole checkpoint (writes plus an fsync of the database)
// before its answer. Here a separate connection runs PASSIVE checkpoints (they never block
// writers or readers) shortly after commits; durability is unchanged because a commit is
// acknowledged only once its WAL frames are fsynced.

const (
	checkpointEvery = 20 * time.Millisecond // at most this often under steady writes
	// checkpointDeferred is the delay after commits that skipped their fsync (deferred
	// writes: search results, cache, call log): long enough that a run of searches shares
	// one background sync, short enough that their power-loss window stays small.
	checkpointDeferred      = 500 * time.Millisecond
	fallbackCheckpointPages = 8000 // the writer checkpoints itself beyond this WAL size
)

// kickCheckpoint asks the checkpointer to run soon (within checkpointDeferred when the
// commit was deferred); it never blocks the writer.
func (s *SQLite) kickCheckpoint(deferred bool) {
	ch := s.ckKick
	if deferred {
		ch = s.ckLazy
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
		// A failed or partial checkpoint is retried after the next commit, and the writer's
		// fallback still bounds the WAL.
		_, _ = s.ck.ExecContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`)
	}
}
