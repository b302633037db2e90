package sqlite

import (
	"errors"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Full implements memory.FullStore: SQLITE_FULL says the database could not grow (its
// disk, a quota, or max_page_count), and SQLite has then ended the statement's
// transaction, so nothing was stored.
func (s *SQLite) Full(err error) bool {
	var e *sqlitedrv.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_FULL // extended codes keep the primary in the low byte
}
