package postgres

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/ftsquery"
)

// Search runs the memory search syntax over one thread's artifacts with PostgreSQL
// full-text search: the GIN index finds the matches, the newest maxRanked of them
// are ranked by ts_rank_cd with a name match counting twice a body match, and snippets are
// ts_headline fragments with the same highlight markers as SQLite's. Results have the
// SQLite store's shape: best first, higher score is better.
func (s *Store) Search(ctx context.Context, threadID string, q memory.SearchQuery) ([]memory.SearchHit, error) {
	if err := memory.CheckThreadID(threadID); err != nil {
		return nil, err
	}
	terms, err := ftsquery.Parse(q.Query)
	if err != nil {
		return nil, &memory.InvalidError{Code: "bad_request", Msg: err.Error(), Op: -1, Err: err}
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}
	types := q.Types
	if types == nil {
		types = []string{}
	}
	opts := fmt.Sprintf("StartSel=%s, StopSel=%s, MaxWords=16, MinWords=6, ShortWord=0, MaxFragments=1, FragmentDelimiter=…",
		memory.HighlightOpen, memory.HighlightClose)
	rows, err := s.pool.Query(ctx, `
		WITH q AS (SELECT to_tsquery('relay_search', $2) AS query),
		m AS (
			SELECT a.ref, a.name, a.type, a.body, a.doc, a.seq FROM artifact_search a, q
			WHERE a.thread_id = $1 AND a.doc @@ q.query AND (cardinality($3::text[]) = 0 OR a.type = ANY($3))
			ORDER BY a.seq DESC LIMIT $4
		),
		r AS (
			SELECT m.*, ts_rank_cd('{0, 0, 0.5, 1.0}', m.doc, q.query) AS score FROM m, q
			ORDER BY score DESC, m.seq DESC LIMIT $5
		)
		SELECT r.ref, r.name, r.type, r.score,
			ts_headline('relay_search', r.body, q.query, $6)
		FROM r, q ORDER BY r.score DESC, r.seq DESC`,
		threadID, ftsquery.TSQuery(terms), types, maxRanked, limit, opts)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	defer rows.Close()
	hits := []memory.SearchHit{}
	for rows.Next() {
		var h memory.SearchHit
		var score float64
		if err := rows.Scan(&h.Ref, &h.Name, &h.Type, &score, &h.Snippet); err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
		h.Score = score6(score)
		if h.Snippet == "" {
			h.Snippet = h.Name
		}
		h.Snippet = memory.Sanitize(h.Snippet)
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	return hits, nil
}

// SearchScope implements memory.Searcher: the thread's index sequence moves with every
// indexed put, so a cached search made before it is stale.
func (s *Store) SearchScope(ctx context.Context, threadID string) (string, error) {
	var seq int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM artifact_search WHERE thread_id = $1`, threadID).Scan(&seq)
	return strconv.FormatInt(seq, 10), err
}

// maxRanked bounds how many matches are ranked per query (the newest ones), as on SQLite.
const maxRanked = 1000

// score6 keeps 6 significant digits, like the SQLite store's scores.
func score6(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	p := math.Pow(10, 5-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}
