//go:build mattn

package main

import (
	"database/sql"

	_ "github.com/mattn/go-sqlite3" // the "sqlite3" driver (build with -tags sqlite_fts5)
)

const engine = "mattn"

func openEngine(path, sync string) (*sql.DB, error) {
	return sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous="+sync+"&_busy_timeout=10000")
}
