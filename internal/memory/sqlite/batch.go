package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/relaydev/relay/internal/memory"
)

// Group commit: every write is a writeOp run by one leader at a time (see write). Ops that
// arrive while a commit (and its fsync) is in progress run together in the next transaction, each
// inside its own savepoint, so concurrent writers share one fsync while a failing op still
// changes nothing. A single waiting op runs alone, with no batching delay.

// Tx is the writer's open transaction, as write ops and WriteTx get it: the one writer
// connection, inside BEGIN IMMEDIATE (runBatch). database/sql's Tx starts a goroutine per
// transaction to watch its context and wraps each prepared statement anew for it: without
// them a sequential patch takes 27-35 % less CPU (BenchmarkPatchAppend/seq, in turn). Every
// use of the connection goes through the writer (wmu), as a Tx held it before.
type Tx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// writeOp runs inside the batch transaction and returns what to do once it is committed
// (update the cache, write the mirror, wake followers). It must record in b.pending only
// after all its statements succeeded.
type writeOp func(ctx context.Context, tx Tx, b *batch) (after func(), err error)

// batch carries the uncommitted latest states of threads changed earlier in the same
// transaction, so a later op in the batch builds on them.
type batch struct {
	pending map[string]*cached
	wrote   bool // the op running has begun its statements (writing)
}

// writing marks that the running op starts changing the database. An op submitted with
// writeChecked calls it before its first statement: failing before that, it changed nothing.
func (b *batch) writing() { b.wrote = true }

type writeReq struct {
	ctx      context.Context
	op       writeOp
	done     chan error
	deferred bool // memory.Deferred: may be acknowledged before its fsync
	// checked: the op calls batch.writing before its first statement and may run again
	// (writeChecked), so a batch of such ops needs no savepoint per op (see runBatch).
	checked bool
	restart bool // the checkpointer's WAL restart (restartWAL): its commit needs no checkpoint
}

// maxBatch bounds how many ops share one transaction (and how long one op can wait).
const maxBatch = 64

var errClosed = errors.New("the store is closed (the daemon is shutting down); retry in a moment")

// errLead, sent on a queued request's done channel, makes its writer the next leader.
var errLead = errors.New("lead the next batch")

// write submits op and waits until it is committed or refused. There is no committer
// goroutine: one writer at a time leads, running the queued ops (its own first) in one
// batch, so a lone writer commits on its own goroutine with no hand-offs. Writers that
// arrive meanwhile queue and sleep on their own channel; when the batch is committed, each
// of its writers is woken with its answer at once, and the leader hands the lead to the
// oldest queued writer, whose batch takes everyone queued behind it. (Waiting for the lead
// on wmu instead woke the finished writers one by one through the mutex, so batches under
// 8 writers averaged 3 ops.)
func (s *SQLite) write(ctx context.Context, op writeOp) error { return s.submit(ctx, op, false) }

// writeChecked is write for an op that makes all its checks before its first statement,
// calling b.writing() there, and that may be run again in a new transaction.
func (s *SQLite) writeChecked(ctx context.Context, op writeOp) error { return s.submit(ctx, op, true) }

func (s *SQLite) submit(ctx context.Context, op writeOp, checked bool) error {
	if s.closed.Load() {
		return errClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// done holds at most two sends: errLead, then the answer.
	req := &writeReq{ctx: ctx, op: op, done: make(chan error, 2), deferred: memory.IsDeferred(ctx), checked: checked}
	s.qmu.Lock()
	s.queue = append(s.queue, req)
	follow := s.leading
	s.leading = true
	s.qmu.Unlock()
	if follow {
		if err := <-req.done; err != errLead {
			return err
		}
	}
	// Leading: req is first in the queue (a leader is named only with the queue non-empty,
	// and only a leader takes from it).
	s.wmu.Lock()
	s.qmu.Lock()
	n := min(len(s.queue), maxBatch)
	reqs := append([]*writeReq(nil), s.queue[:n]...)
	s.queue = append(s.queue[:0], s.queue[n:]...)
	s.qmu.Unlock()
	if s.shut {
		for _, r := range reqs {
			r.done <- errClosed
		}
	} else if len(reqs) > 0 {
		s.runBatch(reqs)
	}
	s.wmu.Unlock()
	s.qmu.Lock()
	if len(s.queue) > 0 {
		s.queue[0].done <- errLead
	} else {
		s.leading = false
	}
	s.qmu.Unlock()
	return <-req.done
}

// shutWrites waits for the batch in progress and refuses every queued and later write.
func (s *SQLite) shutWrites() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.shut = true
	s.qmu.Lock()
	q := s.queue
	s.queue = nil
	s.qmu.Unlock()
	for _, r := range q {
		r.done <- errClosed
	}
}

func (s *SQLite) runBatch(reqs []*writeReq) {
	s.batches.Add(1)
	s.batchedOps.Add(int64(len(reqs)))
	s.runBatchAs(reqs, true)
}

// runBatchAs runs reqs in one transaction. Each op of a batch of several runs inside a
// savepoint, so a failing one is rolled back alone, except when every op is checked
// (writeChecked) and lazy allows it: then an op that fails before writing changed
// nothing, and one that fails after (an I/O error, say) rolls the transaction back and
// the batch runs again with savepoints. (Two statements per op less for concurrent
// patches, the batch's usual content.)
func (s *SQLite) runBatchAs(reqs []*writeReq, lazy bool) {
	errs := make([]error, len(reqs))
	afters := make([]func(), len(reqs))
	fail := func(err error) {
		for _, r := range reqs {
			r.done <- err
		}
	}
	if err := s.begin(reqs); err != nil {
		fail(err)
		return
	}
	// Not tied to one request's context: cancelling one client must not roll back the others.
	ctx := context.Background()
	var tx Tx = s.wc // inside the transaction begin opened
	b := &batch{pending: map[string]*cached{}}
	single := len(reqs) == 1
	lazy = lazy && !single && !slices.ContainsFunc(reqs, func(r *writeReq) bool { return !r.checked })
	savepoints := !single && !lazy
	for i, r := range reqs {
		if err := r.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		if savepoints {
			if _, err := s.exec(ctx, tx, sqlSavepoint); err != nil {
				s.rollback()
				fail(fmt.Errorf("savepoint: %w", err))
				return
			}
		}
		saved := clonePending(b.pending)
		b.wrote = false
		after, err := s.runOp(r, tx, b)
		if err != nil {
			errs[i] = err
			b.pending = saved
			if single {
				s.rollback()
				r.done <- err
				return
			}
			if lazy && b.wrote {
				s.rollback()
				s.runBatchAs(reqs, false)
				return
			}
			if !savepoints {
				continue // it wrote nothing
			}
			if _, rerr := s.exec(ctx, tx, sqlRollbackTo); rerr != nil {
				s.rollback()
				fail(fmt.Errorf("roll back a failed write: %w", rerr))
				return
			}
		}
		if savepoints {
			if _, err := s.exec(ctx, tx, sqlRelease); err != nil {
				s.rollback()
				fail(fmt.Errorf("release savepoint: %w", err))
				return
			}
		}
		if err == nil {
			afters[i] = after
		}
	}
	if err := s.commit(); err != nil {
		s.rollback() // a failed COMMIT can leave the transaction open
		err = fmt.Errorf("commit: %w", err)
		for i := range reqs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	} else {
		if slices.ContainsFunc(reqs, func(r *writeReq) bool { return !r.restart }) {
			s.kickCheckpoint(s.commitSync != s.syncMode)
		}
		if slices.ContainsFunc(reqs, func(r *writeReq) bool { return !r.deferred && !r.restart }) {
			s.lastDurable.Store(int64(time.Since(clockStart)))
		}
		for _, a := range afters {
			if a != nil {
				s.runAfter(a)
			}
		}
	}
	for i, r := range reqs {
		r.done <- errs[i]
	}
}

// begin sets the batch's commit durability and begins its transaction. A transaction left
// open on the connection (a COMMIT and its ROLLBACK that both failed) makes either step fail
// (SQLite refuses both inside a transaction): it is rolled back and both are tried again.
func (s *SQLite) begin(reqs []*writeReq) error {
	try := func() error {
		if err := s.setCommitSync(reqs); err != nil {
			return err
		}
		if _, err := s.exec(context.Background(), s.wc, sqlBegin); err != nil {
			return fmt.Errorf("begin write: %w", err)
		}
		return nil
	}
	if try() == nil {
		return nil
	}
	s.rollback()
	return try()
}

// setCommitSync makes the next commit skip its fsync when every op of the batch is
// deferred (memory.Deferred) and the store commits durably otherwise: in WAL mode a
// commit without an fsync is still atomic and in order, and the next fsynced commit (or the
// checkpointer's sync, checkpoint.go) makes it durable with everything before it.
func (s *SQLite) setCommitSync(reqs []*writeReq) error {
	if s.syncMode != "FULL" {
		return nil // normal already never waits for the disk on commit
	}
	want := "FULL"
	if !slices.ContainsFunc(reqs, func(r *writeReq) bool { return !r.deferred }) {
		want = "NORMAL"
	}
	if want == s.commitSync {
		return nil
	}
	if _, err := s.wc.ExecContext(context.Background(), "PRAGMA synchronous = "+want); err != nil {
		return fmt.Errorf("set commit durability: %w", err)
	}
	s.commitSync = want
	return nil
}

// runOp runs one op, turning a panic (say, in an extension's artifact hook) into that op's
// error: the batch must go on, or its other writers would never get an answer.
//
// The op's statements do not watch its request's context (a request cancelled before
// its op starts is refused, see runBatch): SQLite's interrupt rolls back the whole
// transaction, other writers' ops included, and for a context that can end the driver
// starts a goroutine per statement to watch it (three per patch, and their wake-ups).
func (s *SQLite) runOp(r *writeReq, tx Tx, b *batch) (after func(), err error) {
	defer func() {
		if v := recover(); v != nil {
			after, err = nil, fmt.Errorf("write failed: panic: %v\n%s", v, debug.Stack())
		}
	}()
	return r.op(context.WithoutCancel(r.ctx), tx, b)
}

// runAfter runs a committed op's follow-up (cache, mirror, wake-ups); a panic there is a
// mirror failure, never a lost answer: the batch's writers are still waiting for theirs.
func (s *SQLite) runAfter(a func()) {
	defer func() {
		if v := recover(); v != nil {
			s.mirror.fail(fmt.Errorf("after commit: panic: %v", v))
		}
	}()
	a()
}

func clonePending(m map[string]*cached) map[string]*cached {
	c := make(map[string]*cached, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// latestForWrite is the thread's latest state as the batch sees it: uncommitted changes
// of this batch first, then the cache, then a rebuild inside the transaction.
func (s *SQLite) latestForWrite(ctx context.Context, tx Tx, b *batch, id string) (*cached, error) {
	if c := b.pending[id]; c != nil {
		return c, nil
	}
	s.cmu.RLock()
	c := s.cache[id]
	s.cmu.RUnlock()
	if c != nil {
		return c, nil
	}
	return s.load(ctx, tx, id)
}

// hotStatements are prepared once at open: writers run them thousands of times and
// parsing them dominated. (They must be prepared while no transaction holds the one writer
// connection.)
var hotStatements = []string{
	`INSERT INTO events(thread_id, type, at, data) VALUES (?, ?, ?, ?)`,
	`UPDATE threads SET event_count = event_count + 1, last_event_id = ?, updated_at = ? WHERE id = ?`,
	`INSERT INTO state_versions(thread_id, version, patch, author, created_at, event_id) VALUES (?, ?, ?, ?, ?, ?)`,
	`UPDATE threads SET version = ?, event_count = event_count + 1, last_event_id = ?, updated_at = ? WHERE id = ? AND version = ?`,
	sqlInsertContent,
	`UPDATE threads SET artifact_count = artifact_count + 1 WHERE id = ?`,
	sqlInsertArtifact,
	sqlArtifactByHash,
	sqlShortTaken,
	sqlSavepoint,
	sqlRollbackTo,
	sqlRelease,
	sqlBegin,
	sqlCommit,
	sqlRollback,
}

const (
	sqlBegin          = `BEGIN IMMEDIATE`
	sqlCommit         = `COMMIT`
	sqlRollback       = `ROLLBACK`
	sqlSavepoint      = `SAVEPOINT op`
	sqlRollbackTo     = `ROLLBACK TO op`
	sqlRelease        = `RELEASE op`
	sqlInsertArtifact = `INSERT INTO artifacts(ref, thread_id, type, mime, name, size, hash, preview_text, preview_lines, preview_truncated, created_by, capability, source_refs, created_at, fts_rowid) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`
	sqlInsertContent  = `INSERT INTO artifact_content(ref, content, enc) VALUES (?, ?, ?)`
	sqlArtifactByHash = `SELECT ` + artifactCols + ` FROM artifacts WHERE thread_id = ? AND hash = ?`
)

// queryRow is exec for single-row queries.
func (s *SQLite) queryRow(ctx context.Context, tx Tx, query string, args ...any) *sql.Row {
	if st := s.stmts[query]; st != nil && tx == Tx(s.wc) { // prepared on the writer connection
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// commit and rollback end the transaction runBatch began on the writer connection.
func (s *SQLite) commit() error {
	_, err := s.exec(context.Background(), s.wc, sqlCommit)
	return err
}

func (s *SQLite) rollback() { _, _ = s.exec(context.Background(), s.wc, sqlRollback) }

func (s *SQLite) prepare(ctx context.Context) error {
	// under wmu: the writer connection is the batches' (the checkpointer's may be running)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for _, q := range hotStatements {
		st, err := s.wc.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", q, err)
		}
		s.stmts[q] = st
	}
	return nil
}

// exec runs a write statement, through its prepared form when it is a hot one.
func (s *SQLite) exec(ctx context.Context, tx Tx, query string, args ...any) (sql.Result, error) {
	if st := s.stmts[query]; st != nil && tx == Tx(s.wc) { // prepared on the writer connection
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}
