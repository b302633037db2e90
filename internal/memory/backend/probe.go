package backend

import (
	"context"

	"github.com/relaydev/relay/internal/memory/postgres"
	"github.com/relaydev/relay/internal/memory/sqlite"
)

// What relay doctor learns of a store without opening it for a daemon: the probes live
// here, beside Open, so that nothing else imports a backend.

// QuickCheck runs SQLite's quick_check on the store in home (an error wrapping
// fs.ErrNotExist when there is no store yet).
func QuickCheck(ctx context.Context, home string) error { return sqlite.QuickCheck(ctx, home) }

// CheckFTS says whether the embedded SQLite has FTS5 with bm25 and the porter tokenizer.
func CheckFTS(ctx context.Context) error { return sqlite.CheckFTS(ctx) }

// ProbePostgres connects to the database u names, makes a write/read round trip, and
// returns the relay schema version it holds (have) and the one this relay writes (want).
func ProbePostgres(ctx context.Context, u string) (have, want int, err error) {
	have, err = postgres.Probe(ctx, u)
	return have, postgres.SchemaVersion(), err
}
