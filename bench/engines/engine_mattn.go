//go:build mattn

package main

import (
	"database/sql"

	_ "github.com/mattn/go-sqlite3" // the "sqlite3" driver (build with -tags sqlite_fts5)
)

const engine = "mattn"

func openDB(path, sync string) (*sql.DB, error) {
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous="+sync+"&_busy_timeout=10000")
	if db != nil {
		db.SetMaxOpenConns(1)
	}
	return db, err
}
