//go:build !mattn && !ncruces

package main

import (
	"database/sql"

	_ "modernc.org/sqlite" // the "sqlite" driver
)

const engine = "modernc"

func openEngine(path, sync string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous("+sync+")&_pragma=busy_timeout(10000)")
}
