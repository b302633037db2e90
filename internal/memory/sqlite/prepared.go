package sqlite

import (
	"context"
	"database/sql"
)

// readRow runs a read on the reader pool through its prepared form, made on first use and
// kept: the reads every call makes (a thread's row, the capability cache, an event stream's
// next events) cost as much to parse as to run.
func (s *SQLite) readRow(ctx context.Context, query string, args ...any) rowScanner {
	st, err := s.rstmts.get(ctx, s.r, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

// readRows is readRow for a query of several rows.
func (s *SQLite) readRows(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.rstmts.get(ctx, s.r, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}
