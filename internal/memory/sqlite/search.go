package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/ftsquery"
)

// MaxIndexedBytes caps the text indexed per artifact; the rest is still stored, just not searchable.
const MaxIndexedBytes = 4 << 20

// searchMigration0111 is the first FTS5 layout (the artifact text copied into the index,
// written inside every put); kept as shipped, 0200 replaces it.
const searchMigration0111 = `DROP TABLE IF EXISTS artifact_fts;
CREATE VIRTUAL TABLE IF NOT EXISTS artifact_fts USING fts5(
	name, body, ty, ref UNINDEXED, thread_id UNINDEXED, type UNINDEXED,
	tokenize = 'porter unicode61 remove_diacritics 2',
	prefix = '3 4'
);
CREATE TABLE IF NOT EXISTS fts_threads (
	thread_id TEXT PRIMARY KEY,
	n         INTEGER NOT NULL UNIQUE,
	seq       INTEGER NOT NULL
);
INSERT OR IGNORE INTO fts_threads(thread_id, n, seq)
	SELECT thread_id, row_number() OVER (ORDER BY min(created_at)), 0 FROM artifacts GROUP BY thread_id;
INSERT INTO artifact_fts(rowid, name, body, ty, ref, thread_id, type)
	SELECT (t.n << 32) + row_number() OVER (PARTITION BY a.thread_id ORDER BY a.ref), a.name,
		CASE WHEN a.type = 'binary' THEN '' ELSE CAST(substr(c.content, 1, 4194304) AS TEXT) END,
		a.type, a.ref, a.thread_id, a.type
	FROM artifacts a JOIN artifact_content c ON c.ref = a.ref JOIN fts_threads t ON t.thread_id = a.thread_id
	WHERE a.capability != 'retrieval.search';
UPDATE fts_threads SET seq = (SELECT count(*) FROM artifact_fts f WHERE f.thread_id = fts_threads.thread_id);
`

// searchTokenizer is what the index splits text with: words, Porter-stemmed, without
// accents.
const searchTokenizer = `tokenize = 'porter unicode61 remove_diacritics 2'`

// searchMigration0201 adds prefix indexes for 3 and 4 characters (BuildMatch searches
// prefixes from 3). Without them "abcd*" expanded to every term it covers on every query:
// 30 ms of CPU and a p99 of seconds at 10k artifacts, against about twice the index size.
// The index is rebuilt by the background indexer.
const searchMigration0201 = `DROP TABLE artifact_fts;
DELETE FROM fts_threads;
UPDATE artifacts SET fts_rowid = NULL WHERE fts_rowid > 0;
CREATE VIRTUAL TABLE artifact_fts USING fts5(name, body, ty,
	content = 'artifact_fts_src', content_rowid = 'fts_rowid', ` + searchTokenizer + `, prefix = '3 4');
`

// searchMigration0200 is the search layout: an external-content FTS5 index over a view of
// the artifacts (the index keeps no second copy of the text: snippets read the artifact
// through relay_search_text), filled by the background indexer (indexer.go). An artifact's
// fts_rowid is NULL while it waits for the indexer, 0 when it is never indexed (search
// results), else its index rowid: (thread number << 32) + its sequence in the thread, so
// the thread filter is a rowid range: FTS5 seeks inside doclists, and bm25's per-query idf
// pass does not have to count a thread token's rows. The type is an indexed column (ty) so
// its filter stays inside MATCH. Contents become compressible (enc, content.go).
const searchMigration0200 = `DROP TABLE IF EXISTS artifact_fts;
DELETE FROM fts_threads;
ALTER TABLE artifact_content ADD COLUMN enc INTEGER NOT NULL DEFAULT 0;
ALTER TABLE artifacts ADD COLUMN fts_rowid INTEGER;
UPDATE artifacts SET fts_rowid = 0 WHERE capability = 'retrieval.search';
CREATE INDEX artifacts_fts_rowid ON artifacts(fts_rowid);
CREATE INDEX artifacts_unindexed ON artifacts(thread_id) WHERE fts_rowid IS NULL;
CREATE VIEW artifact_fts_src AS
	SELECT a.fts_rowid AS fts_rowid, a.name AS name, ` + searchTextFunc + `(a.type, c.content, c.enc) AS body, a.type AS ty
	FROM artifacts a JOIN artifact_content c ON c.ref = a.ref;
CREATE VIRTUAL TABLE artifact_fts USING fts5(name, body, ty,
	content = 'artifact_fts_src', content_rowid = 'fts_rowid', ` + searchTokenizer + `);
`

// searchMigration0300 moves the search index out of relay.db into search.db (indexer.go):
// its transactions no longer hold the store's writer. fts_rowid keeps one meaning in
// relay.db: 0 for an artifact never indexed (search results), NULL for one the indexer
// takes once it passes its rowid. store_meta gives the store an id, so a search.db is
// never used with another relay.db.
const searchMigration0300 = `DROP TABLE IF EXISTS artifact_fts;
DROP VIEW IF EXISTS artifact_fts_src;
DROP TABLE IF EXISTS fts_threads;
DROP INDEX IF EXISTS artifacts_fts_rowid;
UPDATE artifacts SET fts_rowid = NULL WHERE fts_rowid > 0;
CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO store_meta(key, value) VALUES ('id', lower(hex(randomblob(16))));
`

// threadRange returns the rowid range of a thread's artifacts.
func threadRange(n int64) (lo, hi int64) { return n << 32, n<<32 | 0xFFFFFFFF }

// ftsRowidFor is the fts_rowid a new artifact starts with: pending, or never indexed for
// the search capability's own result lists, so a search never finds earlier searches.
func ftsRowidFor(capability string) any {
	if capability == memory.SearchCapability {
		return 0
	}
	return nil
}

// MaxRanked bounds how many matches bm25 ranks per query (the newest ones).
var MaxRanked = 1000

// FTS5 marks matches with these; highlight turns them into memory.HighlightOpen/Close.
const (
	markOpen  = "\x02"
	markClose = "\x03"
)

// Score turns FTS5's bm25() (negative, lower is better) into the score of a hit: -bm25,
// positive, higher is better, to 6 significant digits. It is not rounded to a fixed number of
// decimals: a term found in more than half the store's artifacts gets FTS5's minimum idf
// (1e-6), so small stores score around 1e-6 and fixed rounding made every score 0.
func Score(bm25 float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(-bm25, 'g', 6, 64), 64)
	if v == 0 {
		return 0 // not -0
	}
	return v
}

// highlight replaces FTS5's match marks with bold markers, except inside text that is
// already bold (between two literal "**"), where adding markers made "****word****".
func highlight(snip string) string {
	var b strings.Builder
	b.Grow(len(snip) + 16)
	bold, marked := false, false
	for i := 0; i < len(snip); {
		switch {
		case strings.HasPrefix(snip[i:], "**"):
			b.WriteString("**")
			bold = !bold
			i += 2
		case snip[i] == markOpen[0]:
			if marked = !bold; marked {
				b.WriteString(memory.HighlightOpen)
			}
			i++
		case snip[i] == markClose[0]:
			if marked {
				b.WriteString(memory.HighlightClose)
				marked = false
			}
			i++
		default:
			b.WriteByte(snip[i])
			i++
		}
	}
	if marked {
		b.WriteString(memory.HighlightClose)
	}
	return b.String()
}

// Search implements memory.Searcher with FTS5, best (lowest bm25) first; a hit's score is Score(bm25).
func (s *SQLite) Search(ctx context.Context, threadID string, q memory.SearchQuery) ([]memory.SearchHit, error) {
	terms, err := ftsquery.Parse(q.Query)
	if err != nil {
		return nil, &memory.InvalidError{Code: "invalid_args", Msg: err.Error(), Op: -1, Err: err}
	}
	match := buildMatch(terms)
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}
	if err := s.waitIndexed(ctx, threadID); err != nil {
		return nil, err
	}
	// Lookups by key, bounded by the thread or the hits, run without the request's
	// cancellation: for a context that can end, database/sql and the SQLite driver each
	// watch it with a goroutine per statement, and starting, waking and cancelling them
	// took most of a search's scheduling delay, more than stopping a lookup early could
	// save. The ranking query, whose cost grows with the thread, keeps ctx.
	lookup := context.WithoutCancel(ctx)
	var n int64
	switch err := s.searchRow(lookup, `SELECT n FROM fts_threads WHERE thread_id = ?`, threadID).Scan(&n); {
	case errors.Is(err, sql.ErrNoRows):
		return []memory.SearchHit{}, nil // nothing indexed in this thread yet
	case err != nil:
		return nil, fmt.Errorf("search: %w", err)
	}
	lo, hi := threadRange(n)
	if match = "(" + match + ")"; namesTypeWord(ctx, terms) {
		match = "{name body}: " + match
	}
	if len(q.Types) > 0 {
		ts := make([]string, len(q.Types))
		for i, t := range q.Types {
			ts[i] = `"` + strings.Join(tokens(t), " ") + `"`
		}
		match = "ty:(" + strings.Join(ts, " OR ") + ") AND " + match
	}
	// bm25 costs ~10 µs per matching row in pure-Go SQLite, so a term found in most of a
	// huge thread would take seconds; past MaxRanked matches only the newest MaxRanked
	// are ranked (agents mostly want recent artifacts, and such terms carry little idf).
	// One walk of the matches, newest first, ranks them: a separate query for the
	// MaxRanked-th newest rowid walked them all once more. Equal scores keep rowid order.
	// Ranking reads only the index; the artifact rows (and the text, for the snippet) are
	// read for the hits alone.
	rows, err := s.searchRows(ctx, `SELECT rowid, score FROM (
			SELECT rowid, bm25(artifact_fts, 2.0, 1.0, 0.0) AS score FROM artifact_fts
			WHERE artifact_fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY rowid DESC LIMIT ?)
		ORDER BY score, rowid LIMIT ?`, match, lo, hi, MaxRanked, limit)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	hits := []memory.SearchHit{}
	var rowids []int64
	for rows.Next() {
		var h memory.SearchHit
		var rowid int64
		if err := rows.Scan(&rowid, &h.Score); err != nil {
			rows.Close()
			return nil, err
		}
		h.Score = Score(h.Score)
		hits = append(hits, h)
		rowids = append(rowids, rowid)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if len(rowids) == 0 {
		return hits, nil
	}
	at := make(map[int64]int, len(rowids))
	ph := "?" + strings.Repeat(",?", len(rowids)-1)
	ids := make([]any, len(rowids))
	for i, id := range rowids {
		at[id] = i
		ids[i] = id
	}
	// The hits' refs, names and types in one query (one per hit cost a statement each).
	drows, err := s.searchRows(lookup, `SELECT fts_rowid, ref, name, ty FROM docs WHERE fts_rowid IN (`+ph+`)`, ids...)
	if err != nil {
		return nil, fmt.Errorf("search: read hits: %w", err)
	}
	read := 0
	for drows.Next() {
		var id int64
		var ref, name, ty string
		if err := drows.Scan(&id, &ref, &name, &ty); err != nil {
			drows.Close()
			return nil, fmt.Errorf("search: read hits: %w", err)
		}
		if i, ok := at[id]; ok {
			hits[i].Ref, hits[i].Name, hits[i].Type = ref, name, ty
			read++
		}
	}
	drows.Close()
	if err := drows.Err(); err != nil {
		return nil, fmt.Errorf("search: read hits: %w", err)
	}
	if read != len(rowids) {
		return nil, fmt.Errorf("search: read hits: %d of %d hits have no document row", len(rowids)-read, len(rowids))
	}
	snips, err := s.snippets(ctx, terms, match, hits, rowids, at)
	if err != nil {
		return nil, err
	}
	for i := range hits {
		snip := snips[i]
		if snip == "" {
			snip = hits[i].Name
		}
		hits[i].Snippet = memory.Sanitize(highlight(snip))
	}
	return hits, nil
}

// snippets returns the hits' snippets (hit i has index rowid rowids[i], and at[rowid] is i),
// from their texts read in one query: a hit with little text gets goSnippet, FTS5's
// snippet() cut in Go (or snippet() itself on the index, one walk of the MATCH for all such
// hits, when ftstok refuses the text or the query); one with more than wholeSnippetBytes, a
// snippet cut from windows of its text (cutSnippets).
func (s *SQLite) snippets(ctx context.Context, terms []ftsquery.Term, match string, hits []memory.SearchHit, rowids []int64, at map[int64]int) ([]string, error) {
	snips := make([]string, len(hits))
	refs := make([]string, len(hits))
	for i, h := range hits {
		refs[i] = h.Ref
	}
	texts, err := s.indexedTexts(context.WithoutCancel(ctx), refs) // by key: see Search
	if err != nil {
		return nil, err
	}
	phrases, inGo := goPhrases(terms)
	var small []int64
	var bigAt []int
	var big []string
	for i, id := range rowids {
		text := texts[i]
		if len(text) > wholeSnippetBytes {
			bigAt, big = append(bigAt, i), append(big, text)
			continue
		}
		if inGo {
			if snip, ok := goSnippet(text, phrases); ok {
				snips[i] = snip
				continue
			}
		}
		small = append(small, id)
	}
	if len(big) > 0 {
		cut, err := cutSnippets(ctx, terms, big)
		if err != nil {
			return nil, fmt.Errorf("search snippet: %w", err)
		}
		for k, i := range bigAt {
			snips[i] = cut[k]
		}
	}
	if len(small) == 0 {
		return snips, nil
	}
	first, last := small[0], small[0]
	args := []any{markOpen, markClose, match, 0, 0}
	for _, id := range small {
		first, last = min(first, id), max(last, id)
		args = append(args, id)
	}
	args[3], args[4] = first, last
	rows, err := s.searchRows(ctx, sqlSnippets(len(small)), args...)
	if err != nil {
		return nil, fmt.Errorf("search snippet: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var snip string
		if err := rows.Scan(&id, &snip); err != nil {
			return nil, fmt.Errorf("search snippet: %w", err)
		}
		if i, ok := at[id]; ok {
			snips[i] = snip
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search snippet: %w", err)
	}
	return snips, nil
}

// indexedTexts returns the texts of artifacts refs as the index saw them, in order ("" for
// one that is gone or unreadable: a hit with no snippet, but it stands), in one query.
func (s *SQLite) indexedTexts(ctx context.Context, refs []string) ([]string, error) {
	texts := make([]string, len(refs))
	args := make([]any, len(refs))
	at := make(map[string]int, len(refs))
	for i, ref := range refs {
		args[i] = ref
		at[ref] = i
	}
	rows, err := s.readRows(ctx, `SELECT a.ref, a.type, c.content, c.enc FROM artifacts a JOIN artifact_content c ON c.ref = a.ref
		WHERE a.ref IN (?`+strings.Repeat(",?", len(refs)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("search: read hits: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ref, typ string
		var content sql.RawBytes // searchText copies the text out before the next row
		var enc int
		if err := rows.Scan(&ref, &typ, &content, &enc); err != nil {
			return nil, fmt.Errorf("search: read hits: %w", err)
		}
		if text, err := searchText(typ, content, enc); err == nil {
			if i, ok := at[ref]; ok {
				texts[i] = text
			}
		}
	}
	return texts, rows.Err()
}

// sqlSnippets is the query for the snippets of n hits (arguments: the two marks, the MATCH,
// the hits' lowest and highest rowid, then their rowids): one more evaluation of the MATCH,
// over the hits' rowid span only (inside the ranked window, so at most MaxRanked matches).
// A query per hit re-ran the MATCH (and a prefix's expansion to every term it covers) ten
// times, most of a search's CPU. "+rowid" keeps the IN list a filter on that one walk: as a
// constraint, SQLite ran FTS5's xFilter once per listed rowid, each parsing the MATCH again
// and seeking every term in every index segment (a third of a one-term search's CPU).
func sqlSnippets(n int) string {
	return `SELECT rowid, snippet(artifact_fts, 1, ?, ?, '…', 16) FROM artifact_fts
		WHERE artifact_fts MATCH ? AND rowid BETWEEN ? AND ? AND +rowid IN (?` + strings.Repeat(",?", n-1) + `)`
}

// stmtCache keeps statements prepared once per query text: parsing the search's
// statements again on every search took a fifth of its CPU. database/sql prepares a
// statement again on each pool connection as needed.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.m[query]; st != nil {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = st
	return st, nil
}

// close closes the statements (before their database is closed or replaced).
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.m {
		st.Close()
		delete(c.m, q)
	}
}

// searchRows runs a query on search.db's readers through its prepared statement.
func (s *SQLite) searchRows(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.xrstmts.get(ctx, s.xr, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

type rowScanner interface{ Scan(dest ...any) error }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// searchRow is searchRows for one row.
func (s *SQLite) searchRow(ctx context.Context, query string, args ...any) rowScanner {
	st, err := s.xrstmts.get(ctx, s.xr, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

// SearchScope implements memory.Searcher: the thread's index sequence, once the indexer
// has caught up with the thread (a cached result must not hide the caller's last put).
func (s *SQLite) SearchScope(ctx context.Context, threadID string) (string, error) {
	if err := s.waitIndexed(ctx, threadID); err != nil {
		return "", err
	}
	var seq int64
	err := s.searchRow(ctx, `SELECT seq FROM fts_threads WHERE thread_id = ?`, threadID).Scan(&seq)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	return strconv.FormatInt(seq, 10), nil
}

// OptimizeSearch merges the index into one segment (FTS5 'optimize'): queries walk one
// b-tree instead of one per segment. It rewrites the whole index, so run it when idle.
func (s *SQLite) OptimizeSearch(ctx context.Context) error {
	_, err := s.xw.ExecContext(ctx, `INSERT INTO artifact_fts(artifact_fts) VALUES ('optimize')`)
	return err
}

// CheckFTS reports whether this build's SQLite has FTS5 with the tokenizer search uses.
func CheckFTS(ctx context.Context) error {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `CREATE VIRTUAL TABLE t USING fts5(body, `+searchTokenizer+`)`)
	return err
}
