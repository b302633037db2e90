package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/relaydev/relay/internal/memory"
)

// ShortRef implements memory.RefShortener: the shortest prefix, at least 6 hex digits, of
// the artifact's content hash that no other artifact of the thread shares. Hashes are
// uniform, so it is 6 digits nearly always and, unlike a prefix of the time-ordered ref,
// stays the same as artifacts are added. The thread's (thread_id, hash) index makes the two
// neighbour lookups one step each. A ref that is not a stored artifact of the thread keeps
// its full form.
func (s *SQLite) ShortRef(ctx context.Context, id, ref string) (string, error) {
	if !memory.ValidRef(ref) {
		return ref, nil
	}
	var hash string
	err := s.r.QueryRowContext(ctx, `SELECT hash FROM artifacts WHERE ref = ? AND thread_id = ?`, ref, id).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		return ref, nil
	}
	if err != nil {
		return "", fmt.Errorf("shorten ref %s: %w", ref, err)
	}
	var prev, next sql.NullString
	if err := s.r.QueryRowContext(ctx, `SELECT max(hash) FROM artifacts WHERE thread_id = ? AND hash < ?`, id, hash).Scan(&prev); err != nil {
		return "", fmt.Errorf("shorten ref %s: %w", ref, err)
	}
	if err := s.r.QueryRowContext(ctx, `SELECT min(hash) FROM artifacts WHERE thread_id = ? AND hash > ?`, id, hash).Scan(&next); err != nil {
		return "", fmt.Errorf("shorten ref %s: %w", ref, err)
	}
	short := memory.ShortRef(hash, prev.String, next.String)
	if len(short) >= len(ref) {
		return ref, nil
	}
	return short, nil
}

// shortener adapts ShortRef to the header builder, keeping the first error: a header must
// not mix short and full forms of the same refs between reads.
func (s *SQLite) shortener(ctx context.Context, id string) (func(string) string, func() error) {
	var first error
	return func(ref string) string {
			r, err := s.ShortRef(ctx, id, ref)
			if err != nil {
				if first == nil {
					first = err
				}
				return ref
			}
			return r
		}, func() error {
			return first
		}
}

// resolveRef turns what a user or agent wrote into the full ref of the thread's artifact:
// a full ref as is; else a unique prefix of an artifact's hash (the short form relay shows);
// else a unique prefix of a ref.
func (s *SQLite) resolveRef(ctx context.Context, id, ref string) (string, error) {
	if memory.ValidRef(ref) {
		return ref, nil
	}
	if !memory.IsRefPrefix(ref) {
		return "", memory.BadRequest("%q is not an artifact ref (26 hex characters, or a short ref of at least %d); list refs with `relay artifact ls`", ref, memory.MinShortRef)
	}
	for _, col := range []string{"hash", "ref"} {
		// Hex digits sort below 'g': [prefix, prefix+"g") holds exactly what it starts.
		found, err := s.prefixMatches(ctx, id, col, ref)
		if err != nil {
			return "", err
		}
		switch len(found) {
		case 0:
			continue
		case 1:
			return found[0], nil
		}
		return "", &memory.InvalidError{Code: "ambiguous_ref", Op: -1, Err: errors.New("ambiguous short ref"),
			Msg: fmt.Sprintf("short ref %s matches several artifacts of the thread (%s, …); give more of it", ref, strings.Join(found, ", "))}
	}
	return "", &memory.NotFoundError{What: "artifact", ID: ref}
}

func (s *SQLite) prefixMatches(ctx context.Context, id, col, prefix string) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT ref FROM artifacts WHERE thread_id = ? AND `+col+` >= ? AND `+col+` < ? ORDER BY `+col+` LIMIT 2`, id, prefix, prefix+"g")
	if err != nil {
		return nil, fmt.Errorf("resolve short ref %s: %w", prefix, err)
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, fmt.Errorf("resolve short ref %s: %w", prefix, err)
		}
		found = append(found, r)
	}
	return found, rows.Err()
}
