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
	checkpointEvery         = 20 * time.Millisecond // at most this often under steady writes
	fallbackCheckpointPages = 8000                  // the writer checkpoints itself beyond this WAL size
)

// kickCheckpoint asks the checkpointer to run soon; it never blocks the writer.
func (s *SQLite) kickCheckpoint() {
	select {
	case s.ckKick <- struct{}{}:
	default:
	}
}

func (s *SQLite) checkpointer() {
	defer close(s.ckDone)
	t := time.NewTimer(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-s.ckKick:
		case <-s.ckQuit:
			return
		}
		t.Reset(checkpointEvery)
		select { // let a burst of commits accumulate
		case <-t.C:
		case <-s.ckQuit:
			return
		}
		// A failed or partial checkpoint is retried after the next commit, and the writer's
		// fallback still bounds the WAL.
		_, _ = s.ck.ExecContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`)
	}
}
