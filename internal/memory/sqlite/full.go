package sqlite

import (
	"errors"

	sqlitedrv "modernc.org/sqlite"
)

// sqliteFull is SQLITE_FULL: the database could not grow (its disk, a quota, or
// max_page_count). SQLite ends the statement's transaction then, so nothing was stored.
const sqliteFull = 13

// Full implements memory.FullStore.
func (s *SQLite) Full(err error) bool {
	var e *sqlitedrv.Error
	return errors.As(err, &e) && e.Code()&0xff == sqliteFull // extended codes keep the primary in the low byte
}
