package memory

import (
	"context"
	"database/sql"
	"sync"
)

// ArtifactHook runs inside the artifact-put transaction; an error aborts the put.
type ArtifactHook func(ctx context.Context, tx *sql.Tx, a Artifact, content []byte) error

type migration struct{ name, sql string }

var (
	regMu         sync.Mutex
	extraMigs     []migration
	artifactHooks []ArtifactHook
	extraStmts    []string
)

// RegisterStatement adds SQL that a hook runs on every write (say, an index insert): Open
// prepares it once, after the migrations, and TxExec and TxQueryRow inside a store write
// use the prepared form instead of parsing it again. Call it from an init func.
func RegisterStatement(query string) {
	regMu.Lock()
	defer regMu.Unlock()
	extraStmts = append(extraStmts, query)
}

func registeredStatements() []string {
	regMu.Lock()
	defer regMu.Unlock()
	return append([]string(nil), extraStmts...)
}

// stmtsKey carries the store's prepared statements in the context of a write op.
type stmtsKey struct{}

func preparedIn(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	if m, _ := ctx.Value(stmtsKey{}).(map[string]*sql.Stmt); m != nil {
		if st := m[query]; st != nil {
			return tx.StmtContext(ctx, st)
		}
	}
	return nil
}

// TxExec runs query in tx, prepared once when it was registered with RegisterStatement and
// ctx is the one a store write (e.g. an artifact hook) received; otherwise parsed as usual.
func TxExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := preparedIn(ctx, tx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// TxQueryRow is TxExec for a query returning one row.
func TxQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := preparedIn(ctx, tx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// RegisterMigration adds DDL that Open applies once (tracked by name), after the core schema,
// in registration order. Call it from an init func.
func RegisterMigration(name, sql string) {
	regMu.Lock()
	defer regMu.Unlock()
	extraMigs = append(extraMigs, migration{name, sql})
}

// RegisterArtifactHook adds a hook run inside every artifact-put transaction (not for
// deduplicated puts). Call it from an init func.
func RegisterArtifactHook(h ArtifactHook) {
	regMu.Lock()
	defer regMu.Unlock()
	artifactHooks = append(artifactHooks, h)
}

func registered() ([]migration, []ArtifactHook) {
	regMu.Lock()
	defer regMu.Unlock()
	return append([]migration(nil), extraMigs...), append([]ArtifactHook(nil), artifactHooks...)
}
