//go:build ncruces

package main

import (
	"database/sql"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"
)

const engine = "ncruces"

func openEngine(path, sync string) (*sql.DB, error) {
	// FTS5 is an extension here, registered on each connection.
	return driver.Open("file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous("+sync+")&_pragma=busy_timeout(10000)",
		func(c *sqlite3.Conn) error { return fts5.Register(c) })
}
