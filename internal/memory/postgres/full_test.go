package postgres

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestFull: PostgreSQL's disk_full (53100) is "full"; other server errors are not.
func TestFull(t *testing.T) {
	var s *Store
	if !s.Full(fmt.Errorf("commit: %w", &pgconn.PgError{Code: "53100"})) {
		t.Error("disk_full not recognized")
	}
	if s.Full(&pgconn.PgError{Code: "23505"}) || s.Full(errors.New("x")) {
		t.Error("other errors taken for a full disk")
	}
}
