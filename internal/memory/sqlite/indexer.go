package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Search indexing runs behind the put, not inside it: tokenizing text costs about 50 µs
// per KB in this pure-Go SQLite, which made a 100 KB put wait ~7 ms for its index. A put
// commits the artifact with fts_rowid NULL (pending); the indexer goroutine indexes pending
// artifacts in small transactions of their own, oldest first, and a search first waits
// until its thread has nothing pending (waitIndexed), so a caller always finds what it
// stored before it searched.

const (
	indexBatchDocs  = 32        // artifacts per index transaction at most
	indexBatchBytes = 256 << 10 // and about this much text, so puts queued meanwhile wait little
	// searchWait bounds how long a search waits for the indexer to reach its thread; past
	// it the search answers from the index as it is.
	searchWait = 5 * time.Second
)

type indexer struct {
	kick chan struct{}
	quit chan struct{}
	done chan struct{}

	mu       sync.Mutex
	progress chan struct{}  // closed (and replaced) after every index commit
	prefer   map[string]int // threads searches are waiting for, indexed first
	lastErr  error
}

func newIndexer() *indexer {
	return &indexer{kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		progress: make(chan struct{}), prefer: map[string]int{}}
}

// wake asks the indexer to look for pending artifacts; it never blocks.
func (x *indexer) wake() {
	select {
	case x.kick <- struct{}{}:
	default:
	}
}

func (x *indexer) progressed() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.progress
}

func (x *indexer) signal(err error) {
	x.mu.Lock()
	close(x.progress)
	x.progress = make(chan struct{})
	x.lastErr = err
	x.mu.Unlock()
}

// preferred returns a thread a search is waiting for, if any.
func (x *indexer) preferred() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	for id := range x.prefer {
		return id
	}
	return ""
}

func (x *indexer) want(id string, on bool) {
	x.mu.Lock()
	if on {
		x.prefer[id]++
	} else if x.prefer[id]--; x.prefer[id] <= 0 {
		delete(x.prefer, id)
	}
	x.mu.Unlock()
}

// runIndexer indexes pending artifacts until the store closes.
func (s *SQLite) runIndexer() {
	x := s.idx
	defer close(x.done)
	for {
		select {
		case <-x.kick:
		case <-x.quit:
			return
		}
		for {
			n, err := s.indexBatch(context.Background(), x.preferred())
			x.signal(err)
			if err != nil || n == 0 {
				break // a failed batch is retried at the next put or search
			}
			select {
			case <-x.quit:
				return
			default:
			}
		}
	}
}

type pendingDoc struct {
	rowid               int64
	threadID, typ, name string
	content             []byte
	enc                 int
}

// indexBatch indexes up to indexBatchDocs pending artifacts (of thread first, when given)
// in one write transaction and returns how many it indexed.
func (s *SQLite) indexBatch(ctx context.Context, thread string) (int, error) {
	q := `SELECT a.rowid, a.thread_id, a.type, a.name, c.content, c.enc FROM artifacts a JOIN artifact_content c ON c.ref = a.ref
		WHERE a.fts_rowid IS NULL ORDER BY a.rowid LIMIT ?`
	args := []any{indexBatchDocs}
	if thread != "" {
		q = `SELECT a.rowid, a.thread_id, a.type, a.name, c.content, c.enc FROM artifacts a JOIN artifact_content c ON c.ref = a.ref
		WHERE a.thread_id = ? AND a.fts_rowid IS NULL ORDER BY a.rowid LIMIT ?`
		args = []any{thread, indexBatchDocs}
	}
	// Read and decode outside the write lock; only the index inserts hold it.
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("read artifacts to index: %w", err)
	}
	var docs []pendingDoc
	var bodies []string
	total := 0
	for rows.Next() && total < indexBatchBytes {
		var d pendingDoc
		if err := rows.Scan(&d.rowid, &d.threadID, &d.typ, &d.name, &d.content, &d.enc); err != nil {
			rows.Close()
			return 0, fmt.Errorf("read artifacts to index: %w", err)
		}
		body, err := searchText(d.typ, d.content, d.enc)
		if err != nil {
			body = "" // undecodable content stays findable by name
		}
		d.content = nil
		docs = append(docs, d)
		bodies = append(bodies, body)
		total += len(body) + len(d.name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read artifacts to index: %w", err)
	}
	if len(docs) == 0 {
		if thread != "" {
			return s.indexBatch(ctx, "") // the preferred thread is done; go on with the rest
		}
		return 0, nil
	}
	indexed := 0
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx, b *batch) (func(), error) {
		indexed = 0
		for i, d := range docs {
			var n, seq int64
			if err := s.queryRow(ctx, tx, sqlNextSeq, d.threadID).Scan(&n, &seq); err != nil {
				return nil, fmt.Errorf("index artifact: %w", err)
			}
			lo, _ := threadRange(n)
			r, err := s.exec(ctx, tx, sqlMarkIndexed, lo+seq, d.rowid)
			if err != nil {
				return nil, fmt.Errorf("index artifact: %w", err)
			}
			if k, _ := r.RowsAffected(); k != 1 {
				continue // indexed meanwhile (cannot happen with one indexer, but never index twice)
			}
			if _, err := s.exec(ctx, tx, sqlIndexRow, lo+seq, d.name, bodies[i], d.typ); err != nil {
				return nil, fmt.Errorf("index artifact: %w", err)
			}
			indexed++
		}
		return nil, nil
	})
	return indexed, err
}

// waitIndexed waits until every artifact of the thread committed before the call is in
// the search index, or searchWait passed (then the search answers from the index as it is).
func (s *SQLite) waitIndexed(ctx context.Context, threadID string) error {
	deadline := time.NewTimer(searchWait)
	defer deadline.Stop()
	wanted := false
	defer func() {
		if wanted {
			s.idx.want(threadID, false)
		}
	}()
	for {
		ch := s.idx.progressed()
		var pending int
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM artifacts WHERE thread_id = ? AND fts_rowid IS NULL`, threadID).Scan(&pending); err != nil {
			return fmt.Errorf("search: %w", err)
		}
		if pending == 0 {
			return nil
		}
		if !wanted {
			s.idx.want(threadID, true)
			wanted = true
		}
		s.idx.wake()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return nil
		}
	}
}

// IndexPending reports how many artifacts wait for the search index (stats, doctor).
func (s *SQLite) IndexPending(ctx context.Context) (int, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM artifacts WHERE fts_rowid IS NULL`).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return n, err
}
