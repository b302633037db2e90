package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/relaydev/relay/internal/memory"
)

// shortExpr is a ref's short form in SQL; the artifacts_short index is on this expression,
// so every query that looks a short ref up must spell it the same way.
const shortExpr = `substr(ref, 21)`

// maxCachedShorts is the largest batch SharedShorts keeps a prepared statement for (one
// per batch size, so the cache stays bounded); a search names at most 50 hits.
const maxCachedShorts = 64

// SharedShorts implements memory.Store: which of the short refs name more than one artifact
// of the store (one indexed query for the batch).
func (s *SQLite) SharedShorts(ctx context.Context, shorts []string) (map[string]bool, error) {
	return memory.SharedShorts(shorts, func() (memory.Rows, func(), error) {
		args := make([]any, len(shorts))
		for i, sh := range shorts {
			args[i] = sh
		}
		q := `SELECT ` + shortExpr + ` FROM artifacts WHERE ` + shortExpr + ` IN (?` + strings.Repeat(",?", len(shorts)-1) + `) GROUP BY 1 HAVING count(*) > 1`
		var rows *sql.Rows
		var err error
		if len(shorts) <= maxCachedShorts {
			// a search names its hits through here: parsing the statement again cost as
			// much as running it
			var st *sql.Stmt
			if st, err = s.rstmts.get(ctx, s.r, q); err == nil {
				rows, err = st.QueryContext(ctx, args...)
			}
		} else {
			rows, err = s.r.QueryContext(ctx, q, args...)
		}
		if err != nil {
			return nil, nil, err
		}
		return rows, func() { rows.Close() }, nil
	})
}

// shortTaken reports whether a put's new ref would show as a short ref another artifact
// already has; tx is the put's write transaction, so no other put can take it meanwhile.
func (s *SQLite) shortTaken(ctx context.Context, tx Tx, ref string) (bool, error) {
	var n int
	err := s.queryRow(ctx, tx, sqlShortTaken, memory.Short(ref)).Scan(&n)
	return n > 0, err
}

// sqlShortTaken counts the artifacts with a short ref (every put asks, so it is prepared
// once: parsing it cost more than the lookup).
const sqlShortTaken = `SELECT count(*) FROM artifacts WHERE ` + shortExpr + ` = ?`

// sqlShortInThread finds a thread's artifacts by short ref. "+thread_id" keeps SQLite
// from walking the thread's whole artifacts_thread range (its choice without statistics:
// 3 ms at 10k artifacts, a third of every search's CPU through its call-log lookup);
// artifacts_short finds the one or two rows with that short ref at once.
const sqlShortInThread = `SELECT ref FROM artifacts WHERE +thread_id = ? AND ` + shortExpr + ` = ? LIMIT 2`

// FindArtifact implements memory.Store: a full or short ref in the whole store.
func (s *SQLite) FindArtifact(ctx context.Context, ref string) (memory.Artifact, error) {
	var q string
	switch {
	case memory.ValidRef(ref):
		q = `SELECT ` + artifactCols + ` FROM artifacts WHERE ref = ?`
	case memory.IsShortRef(ref):
		q = `SELECT ` + artifactCols + ` FROM artifacts WHERE ` + shortExpr + ` = ? ORDER BY ref LIMIT 5`
	default:
		return memory.Artifact{}, memory.BadRequest("%q is not an artifact ref: give the %d hex characters relay shows or a full ref (a shorter or longer prefix needs the thread)", ref, memory.ShortRefLen)
	}
	rows, err := s.readRows(ctx, q, ref)
	if err != nil {
		return memory.Artifact{}, fmt.Errorf("find artifact %s: %w", ref, err)
	}
	defer rows.Close()
	var found []memory.Artifact
	for rows.Next() {
		a, err := scanArtifact(rows)
		if err != nil {
			return memory.Artifact{}, fmt.Errorf("find artifact %s: %w", ref, err)
		}
		found = append(found, a)
	}
	if err := rows.Err(); err != nil {
		return memory.Artifact{}, fmt.Errorf("find artifact %s: %w", ref, err)
	}
	return memory.OneFound(ref, found)
}

// resolveRef turns what a user or agent wrote into the full ref of the thread's artifact:
// a full ref as is; else the short ref relay shows; else (as relay showed refs before they
// had one form) a unique prefix of an artifact's hash, else of a full ref.
func (s *SQLite) resolveRef(ctx context.Context, id, ref string) (string, error) {
	if memory.ValidRef(ref) {
		return ref, nil
	}
	if !memory.IsRefPrefix(ref) {
		return "", memory.BadRequest("%q is not an artifact ref (the %d hex characters relay shows, or a full ref of %d); list refs with `relay artifact ls`", ref, memory.ShortRefLen, memory.RefLen)
	}
	queries := []string{"hash", "ref"}
	if memory.IsShortRef(ref) {
		queries = append([]string{"short"}, queries...)
	}
	for _, col := range queries {
		found, err := s.refMatches(ctx, id, col, ref)
		if err != nil {
			return "", err
		}
		switch len(found) {
		case 0:
			continue
		case 1:
			return found[0], nil
		}
		return "", memory.AmbiguousRef(ref, found, " of the thread")
	}
	return "", &memory.NotFoundError{What: "artifact", ID: ref}
}

// refMatches lists (up to 2) refs of the thread's artifacts whose short ref is ref
// (col "short"), or whose hash or ref starts with it.
func (s *SQLite) refMatches(ctx context.Context, id, col, ref string) ([]string, error) {
	q := sqlShortInThread
	args := []any{id, ref}
	if col != "short" {
		// Hex digits sort below 'g': [prefix, prefix+"g") holds exactly what it starts.
		q = `SELECT ref FROM artifacts WHERE thread_id = ? AND ` + col + ` >= ? AND ` + col + ` < ? ORDER BY ` + col + ` LIMIT 2`
		args = []any{id, ref, ref + "g"}
	}
	rows, err := s.readRows(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("resolve ref %s: %w", ref, err)
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, fmt.Errorf("resolve ref %s: %w", ref, err)
		}
		found = append(found, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("resolve ref %s: %w", ref, err)
	}
	return found, nil
}
