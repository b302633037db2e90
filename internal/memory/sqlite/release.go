package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ReleaseMemory gives back the memory SQLite keeps between requests: each writing
// connection's page cache (the writer's alone held ~9 MB after 10,000 puts of 2 KB: its
// cache, and the allocator's slabs around it) and the idle read connections with theirs.
// The caches refill from the operating system's page cache as the store works again, so
// the daemon calls this only once it has been idle for a while. While the search index is
// catching up it frees nothing and reports false: the indexer would fill them at once.
func (s *SQLite) ReleaseMemory(ctx context.Context) (bool, error) {
	if s.closed.Load() {
		return true, nil
	}
	if s.idx.waiting.Load() > 0 {
		return false, nil
	}
	var errs []error
	s.wmu.Lock() // the writer's one connection, between batches
	if !s.shut {
		errs = append(errs, shrink(ctx, s.wc, "writer"))
	}
	s.wmu.Unlock()
	// The checkpointer's and the indexer's connections wait for their goroutines' current
	// statement (each pool holds one connection).
	errs = append(errs, shrink(ctx, s.ck, "checkpointer"))
	if s.xw != nil {
		errs = append(errs, shrink(ctx, s.xw, "search index writer"))
	}
	// Closing idle readers frees their caches and prepared statements; a busy one is not
	// idle and stays. The next read opens a connection again (readers already close after
	// 30 s idle; this is sooner).
	for _, db := range []*sql.DB{s.r, s.xr} {
		if db != nil {
			db.SetMaxIdleConns(0)
			db.SetMaxIdleConns(idleReaders)
		}
	}
	return true, errors.Join(errs...)
}

// shrink frees the page cache of db's connection (SQLite's shrink_memory: the pages stay
// in the database and the OS's page cache).
func shrink(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, what string) error {
	if _, err := db.ExecContext(ctx, `PRAGMA shrink_memory`); err != nil {
		return fmt.Errorf("release the %s's page cache: %w", what, err)
	}
	return nil
}
