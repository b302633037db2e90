// Package search is the built-in retrieval.search capability: SQLite FTS5 full-text search
// over a thread's artifacts, ranked by bm25, with highlighted snippets. The index is written
// inside every artifact-put transaction, so it never lags the store.
package search

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/plugin"
)

// Name is the capability name.
const Name = "retrieval.search"

// MaxIndexedBytes caps the text indexed per artifact; the rest is still stored, just not searchable.
const MaxIndexedBytes = 4 << 20

// Schema is the FTS5 table. Thread and type are also indexed token columns (tid, ty) so
// their filters are doclist intersections inside MATCH instead of a row lookup per match;
// ref/thread_id/type ride along unindexed. The prefix index makes "abc*" cheap.
const Schema = `
CREATE VIRTUAL TABLE IF NOT EXISTS artifact_fts USING fts5(
	name, body, tid, ty, ref UNINDEXED, thread_id UNINDEXED, type UNINDEXED,
	tokenize = 'porter unicode61 remove_diacritics 2',
	prefix = '3 4'
);
`

// threadToken is the thread id as one alphanumeric token ("t" + hex without dashes).
func threadToken(threadID string) string {
	return "t" + strings.ReplaceAll(strings.ToLower(threadID), "-", "")
}

func init() {
	memory.RegisterMigration("0110_search_fts", Schema)
	memory.RegisterArtifactHook(indexHook)
}

func indexHook(ctx context.Context, tx *sql.Tx, a memory.Artifact, content []byte) error {
	// Search results must not find earlier search results.
	if a.Provenance.Capability == Name {
		return nil
	}
	return Index(ctx, tx, a.ThreadID, a.Ref, a.Type, a.Name, content)
}

var tagRE = regexp.MustCompile(`(?s)<script.*?</script>|<style.*?</style>|<[^>]*>`)

// Index adds one artifact to the index inside tx. Binary content is indexed by name only.
func Index(ctx context.Context, tx *sql.Tx, threadID, ref, typ, name string, content []byte) error {
	body := ""
	if typ != memory.TypeBinary && utf8.Valid(content) {
		if len(content) > MaxIndexedBytes {
			content = content[:MaxIndexedBytes]
		}
		body = string(content)
		if typ == memory.TypeHTML {
			body = tagRE.ReplaceAllString(body, " ")
		}
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO artifact_fts(name, body, tid, ty, ref, thread_id, type) VALUES (?,?,?,?,?,?,?)`, name, body, threadToken(threadID), typ, ref, threadID, typ)
	if err != nil {
		return fmt.Errorf("index artifact %s: %w", ref, err)
	}
	return nil
}

// Query is a search request.
type Query struct {
	Query string
	Types []string
	Limit int
}

// Hit is one ranked result.
type Hit struct {
	Ref     string  `json:"ref"`
	Name    string  `json:"name"`
	Type    string  `json:"type"`
	Score   float64 `json:"score"`
	Snippet string  `json:"snippet"`
}

// MaxRanked bounds how many matches bm25 ranks per query (the newest ones).
var MaxRanked = 1000

// Highlight markers around matched terms in snippets.
const (
	HighlightOpen  = "**"
	HighlightClose = "**"
)

// Search runs q over one thread's artifacts; best (lowest bm25) first. Score is -bm25, higher is better.
func Search(ctx context.Context, db *sql.DB, threadID string, q Query) ([]Hit, error) {
	match, err := BuildMatch(q.Query)
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}
	filter := "tid:" + threadToken(threadID)
	if len(q.Types) > 0 {
		ts := make([]string, len(q.Types))
		for i, t := range q.Types {
			ts[i] = `"` + strings.Join(tokens(t), " ") + `"`
		}
		filter += " AND ty:(" + strings.Join(ts, " OR ") + ")"
	}
	match = filter + " AND {name body}: (" + match + ")"
	// bm25 costs ~10 µs per matching row in pure-Go SQLite, so a term found in most of a
	// huge thread would take seconds; past MaxRanked matches only the newest MaxRanked
	// are ranked (agents mostly want recent artifacts, and such terms carry little idf).
	query := `SELECT rowid, ref, name, type, bm25(artifact_fts, 2.0, 1.0, 0.0, 0.0) AS score
		FROM artifact_fts WHERE artifact_fts MATCH ?`
	args := []any{match}
	var floor int64
	err = db.QueryRowContext(ctx, `SELECT rowid FROM artifact_fts WHERE artifact_fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?`, match, MaxRanked-1).Scan(&floor)
	switch {
	case err == nil:
		query += ` AND rowid >= ?`
		args = append(args, floor)
	case !errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("search: %w", err)
	}
	query += ` ORDER BY score LIMIT ?`
	args = append(args, limit)
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	hits := []Hit{}
	var rowids []int64
	for rows.Next() {
		var h Hit
		var rowid int64
		if err := rows.Scan(&rowid, &h.Ref, &h.Name, &h.Type, &h.Score); err != nil {
			rows.Close()
			return nil, err
		}
		h.Score = math.Round(-h.Score*1000) / 1000
		hits = append(hits, h)
		rowids = append(rowids, rowid)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	for i, id := range rowids {
		var snip string
		err := db.QueryRowContext(ctx, `SELECT snippet(artifact_fts, 1, ?, ?, '…', 16) FROM artifact_fts WHERE artifact_fts MATCH ? AND rowid = ?`,
			HighlightOpen, HighlightClose, match, id).Scan(&snip)
		if err != nil {
			return nil, fmt.Errorf("search snippet: %w", err)
		}
		if snip == "" {
			snip = hits[i].Name
		}
		hits[i].Snippet = memory.Sanitize(snip)
	}
	return hits, nil
}

// ArgsSchema is the retrieval.search argument schema.
const ArgsSchema = `{
  "type": "object",
  "required": ["query"],
  "additionalProperties": false,
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 512,
              "description": "words (all must match), \"a phrase\", prefix*, OR"},
    "type":  {"description": "only artifacts of this type (or any of these types)",
              "oneOf": [{"type": "string", "enum": ["markdown","json","html","text","binary","tool_output","email"]},
                        {"type": "array", "items": {"type": "string", "enum": ["markdown","json","html","text","binary","tool_output","email"]}, "maxItems": 7}]},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10}
  }
}`

// previewResults bounds how many hits go into the preview; the artifact has them all.
const previewResults = 5

// Capability returns retrieval.search bound to the store's read pool.
func Capability(db *sql.DB) (plugin.Capability, plugin.Handler) {
	c := plugin.Capability{
		Name:        Name,
		Description: "Full-text search over the thread's artifacts (SQLite FTS5, bm25 ranking, highlighted snippets)",
		ArgsSchema:  json.RawMessage(ArgsSchema),
		Cacheable:   true,
		CacheTTL:    60e9, // one minute: new artifacts should show up soon after they are put
	}
	h := func(ctx context.Context, req *plugin.InvokeRequest) (*plugin.InvokeResult, error) {
		var args struct {
			Query string          `json:"query"`
			Type  json.RawMessage `json:"type"`
			Limit int             `json:"limit"`
		}
		if err := json.Unmarshal(req.Args, &args); err != nil {
			return nil, err
		}
		q := Query{Query: args.Query, Limit: args.Limit}
		if len(args.Type) > 0 {
			var one string
			if json.Unmarshal(args.Type, &one) == nil {
				q.Types = []string{one}
			} else if err := json.Unmarshal(args.Type, &q.Types); err != nil {
				return nil, err
			}
		}
		hits, err := Search(ctx, db, req.ThreadID, q)
		if err != nil {
			return nil, err
		}
		full, _ := json.MarshalIndent(map[string]any{"query": args.Query, "count": len(hits), "results": hits}, "", "  ")
		ref, err := req.Artifacts.PutArtifact(ctx, plugin.NewArtifact{Name: "search-results.json", Type: memory.TypeJSON, Content: full})
		if err != nil {
			return nil, fmt.Errorf("store search results: %w", err)
		}
		return plugin.Result(ref, Preview(hits))
	}
	return c, h
}

// Preview is the bounded summary returned inline: count plus the top hits with short snippets.
func Preview(hits []Hit) map[string]any {
	top := hits
	if len(top) > previewResults {
		top = top[:previewResults]
	}
	short := make([]Hit, len(top))
	for i, h := range top {
		h.Snippet = plugin.Head(h.Snippet, 240)
		h.Name = plugin.Head(h.Name, 120)
		short[i] = h
	}
	return map[string]any{"count": len(hits), "results": short}
}

// Optimize merges the index into one segment (FTS5 'optimize'): queries walk one b-tree
// instead of one per segment. It rewrites the whole index, so run it when idle.
func Optimize(ctx context.Context, db interface {
	WriteTx(ctx context.Context, fn func(*sql.Tx) error) error
}) error {
	return db.WriteTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO artifact_fts(artifact_fts) VALUES ('optimize')`)
		return err
	})
}
