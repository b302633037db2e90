package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Transient implements memory.TransientStore: err means the database did not answer this
// time (it is restarting, failing over, refusing connections, or a connection dropped), so
// the same request may succeed in a moment. A write that failed this way may or may not
// have committed, because the answer to COMMIT can be lost with the connection; clients
// check (If-Match, or a put of the same bytes, which is deduplicated) before repeating it.
func (s *Store) Transient(err error) bool { return transient(err) }

func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", // admin_shutdown: pg_ctl stop -m fast or smart
			"57P02", // crash_shutdown: another backend crashed, or an immediate stop
			"57P03", // cannot_connect_now: starting up, or recovering
			"53300", // too_many_connections
			"40001", // serialization_failure
			"40P01", // deadlock_detected: one of the two transactions is chosen to fail
			"25006": // read_only_sql_transaction: connected to a standby during a failover
			return true
		}
		return strings.HasPrefix(pe.Code, "08") // connection_exception
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, pgconn.ErrConnClosed) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE)
}

// Full implements memory.FullStore: the server's disk is full (SQLSTATE 53100); the
// transaction was rolled back.
func (s *Store) Full(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "53100"
}
