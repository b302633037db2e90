package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/memory/capability/search"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/ftsquery"
	"github.com/relaydev/relay/plugin"
	_ "modernc.org/sqlite"
)

func openStore(t testing.TB) *SQLite {
	t.Helper()
	st, err := OpenSQLite(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newThread(t testing.TB, st memory.Store) string {
	t.Helper()
	th, err := st.CreateThread(context.Background(), memory.CreateThreadParams{Name: "t", IfNameTaken: memory.NameTakenNext})
	if err != nil {
		t.Fatal(err)
	}
	return th.ID
}

func put(t testing.TB, st memory.Store, tid, name, typ, body string) string {
	t.Helper()
	a, err := st.PutArtifact(context.Background(), tid, memory.PutArtifactParams{Name: name, Type: typ, Content: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	return a.Ref
}

func refs(hits []memory.SearchHit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Name)
	}
	return out
}

func TestSearch(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	tid := newThread(t, st)
	other := newThread(t, st)
	put(t, st, tid, "notes.md", "markdown", "# My Notes\nHello, relay. The daemon keeps memory.")
	put(t, st, tid, "deploy.txt", "text", "Deployment checklist: run migrations, then restart the relay daemon. relay relay relay.")
	put(t, st, tid, "page.html", "html", "<html><body><p>Relational <b>databases</b> store rows</p><script>hello()</script></body></html>")
	put(t, st, tid, "data.json", "json", `{"greeting":"hello world","lang":"en"}`)
	put(t, st, other, "secret.md", "markdown", "hello from another thread")

	tests := []struct {
		name  string
		q     memory.SearchQuery
		want  []string
		match bool // only check set equality
	}{
		{name: "word", q: memory.SearchQuery{Query: "hello"}, want: []string{"notes.md", "data.json"}, match: true},
		{name: "and", q: memory.SearchQuery{Query: "hello relay"}, want: []string{"notes.md"}},
		{name: "bm25 order", q: memory.SearchQuery{Query: "relay"}, want: []string{"deploy.txt", "notes.md"}},
		{name: "prefix", q: memory.SearchQuery{Query: "rel*"}, want: []string{"deploy.txt", "notes.md", "page.html"}, match: true},
		{name: "short prefix is a word", q: memory.SearchQuery{Query: "re*"}, want: nil},
		{name: "phrase", q: memory.SearchQuery{Query: `"hello world"`}, want: []string{"data.json"}},
		{name: "phrase order matters", q: memory.SearchQuery{Query: `"world hello"`}, want: nil},
		{name: "or", q: memory.SearchQuery{Query: "databases OR greeting"}, want: []string{"page.html", "data.json"}, match: true},
		{name: "type filter", q: memory.SearchQuery{Query: "hello", Types: []string{"json"}}, want: []string{"data.json"}},
		{name: "html tags and scripts not indexed", q: memory.SearchQuery{Query: "script OR hello", Types: []string{"html"}}, want: nil},
		{name: "stemming", q: memory.SearchQuery{Query: "migration"}, want: []string{"deploy.txt"}},
		{name: "name", q: memory.SearchQuery{Query: "deploy"}, want: []string{"deploy.txt"}},
		{name: "syntax chars are text", q: memory.SearchQuery{Query: `hello) AND (NEAR "`}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits, err := st.Search(ctx, tid, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			got := refs(hits)
			if tt.match {
				if len(got) != len(tt.want) {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
				for _, w := range tt.want {
					if !strings.Contains(strings.Join(got, ","), w) {
						t.Fatalf("got %v, want %v", got, tt.want)
					}
				}
				return
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}

	hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: "hello relay"})
	if err != nil || len(hits) != 1 {
		t.Fatal(hits, err)
	}
	if !strings.Contains(hits[0].Snippet, "**Hello**") || !strings.Contains(hits[0].Snippet, "**relay**") {
		t.Fatalf("snippet not highlighted: %q", hits[0].Snippet)
	}
	if hits[0].Score <= 0 {
		t.Fatalf("score = %v, want > 0", hits[0].Score)
	}
	if _, err := st.Search(ctx, tid, memory.SearchQuery{Query: `" " ***`}); !errors.Is(err, ErrEmptyQuery) {
		t.Fatalf("empty query err = %v", err)
	}
}

type storeArtifacts struct {
	st  memory.Store
	tid string
}

func (s storeArtifacts) PutArtifact(ctx context.Context, a plugin.NewArtifact) (string, error) {
	art, err := s.st.PutArtifact(ctx, s.tid, memory.PutArtifactParams{Name: a.Name, Type: a.Type, Content: a.Content, Capability: memory.SearchCapability})
	return art.Ref, err
}

func TestCapabilityResultsNotReindexed(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	tid := newThread(t, st)
	put(t, st, tid, "a.md", "markdown", "zebra crossing")
	_, h := search.Capability(st)
	for range 2 {
		res, err := h(ctx, &plugin.InvokeRequest{ThreadID: tid, Args: json.RawMessage(`{"query":"zebra","limit":5}`), Artifacts: storeArtifacts{st, tid}})
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Count int `json:"count"`
		}
		if err := json.Unmarshal(res.Preview, &p); err != nil || p.Count != 1 {
			t.Fatalf("preview %s (%v): want count 1 (results artifacts must not be indexed)", res.Preview, err)
		}
		_, content, err := st.ArtifactContent(ctx, tid, res.ArtifactRef)
		if err != nil || !strings.Contains(string(content), "**zebra**") {
			t.Fatalf("result artifact: %s %v", content, err)
		}
	}
}

func FuzzBuildMatch(f *testing.F) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	// A table with the columns MATCH expressions name (the store's reads them from a view).
	if _, err := db.Exec(`CREATE VIRTUAL TABLE artifact_fts USING fts5(name, body, ty, ref UNINDEXED, thread_id UNINDEXED, type UNINDEXED, ` + searchTokenizer + `)`); err != nil {
		f.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO artifact_fts(name, body, ty, ref, thread_id, type) VALUES ('n','hello relay world','text','r','t','text')`); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"hello", `"hello world"`, "rel*", "a OR b", `NEAR(a b)`, `a AND OR NOT ("`, "*", `"unterminated`, "col:val", "^start", "-x +y", "é ñ 中文"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		m, err := BuildMatch(q)
		if err != nil {
			return
		}
		rows, err := db.Query(`SELECT ref FROM artifact_fts WHERE artifact_fts MATCH ?`, "ty:text AND {name body}: ("+m+")")
		if err != nil {
			t.Fatalf("BuildMatch(%q) = %q: FTS5 error %v", q, m, err)
		}
		for rows.Next() {
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("BuildMatch(%q) = %q: FTS5 error %v", q, m, err)
		}
		rows.Close()
	})
}

func TestRankingCapKeepsNewest(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	tid := newThread(t, st)
	put(t, st, tid, "old.md", "markdown", "kiwi kiwi kiwi kiwi kiwi")
	for i := range 4 {
		put(t, st, tid, fmt.Sprintf("new%d.md", i), "tool_output", fmt.Sprintf("kiwi and other words %d", i))
	}
	hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: "kiwi"})
	if err != nil || len(hits) != 5 || hits[0].Name != "old.md" {
		t.Fatalf("uncapped: %v %v", refs(hits), err)
	}
	defer func(n int) { MaxRanked = n }(MaxRanked)
	MaxRanked = 3
	hits, err = st.Search(ctx, tid, memory.SearchQuery{Query: "kiwi"})
	if err != nil || len(hits) != 3 {
		t.Fatalf("capped: %v %v", refs(hits), err)
	}
	for _, h := range hits {
		if h.Name == "old.md" || h.Name == "new0.md" {
			t.Fatalf("capped ranking included an old match: %v", refs(hits))
		}
	}
	hits, err = st.Search(ctx, tid, memory.SearchQuery{Query: "kiwi", Types: []string{"tool_output"}})
	if err != nil || len(hits) != 3 || hits[0].Type != "tool_output" {
		t.Fatalf("type filter: %v %v", refs(hits), err)
	}
}

// TestReindexFromScratch: with the index emptied and every artifact marked pending, the
// indexer rebuilds it from the stored artifacts, and puts after that keep working.
func TestReindexFromScratch(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	a, b := newThread(t, st), newThread(t, st)
	put(t, st, a, "a1.md", "markdown", "zebra one")
	put(t, st, b, "b1.md", "markdown", "zebra two")
	put(t, st, a, "a2.html", "html", "<p>zebra three</p>")
	if _, err := st.Search(ctx, a, memory.SearchQuery{Query: "zebra"}); err != nil {
		t.Fatal(err)
	}
	// Emptied the way a rebuild starts: no index rows, the progress mark at 0.
	if _, err := st.xw.Exec(`INSERT INTO artifact_fts(artifact_fts) VALUES ('delete-all');
			DELETE FROM docs; DELETE FROM fts_threads; UPDATE progress SET done = 0`); err != nil {
		t.Fatal(err)
	}
	st.idx.mark.Store(0)
	// and no thread indexed ahead of the mark, as in the fresh indexer of a rebuild (the
	// first search may have had its thread indexed ahead: it then did not wait at all)
	st.idx.mu.Lock()
	clear(st.idx.ahead)
	st.idx.mu.Unlock()
	hits, err := st.Search(ctx, a, memory.SearchQuery{Query: "zebra"})
	if err != nil || len(hits) != 2 {
		t.Fatalf("after reindex: %v %v", refs(hits), err)
	}
	put(t, st, a, "a3.md", "markdown", "zebra four")
	hits, err = st.Search(ctx, a, memory.SearchQuery{Query: "zebra"})
	if err != nil || len(hits) != 3 {
		t.Fatalf("put after reindex: %v %v", refs(hits), err)
	}
	if hits, _ := st.Search(ctx, b, memory.SearchQuery{Query: "zebra"}); len(hits) != 1 || hits[0].Name != "b1.md" {
		t.Fatalf("thread b: %v", refs(hits))
	}
}

func TestCacheScopeFollowsIndex(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	tid := newThread(t, st)
	c, _ := search.Capability(st)
	scope := func() string {
		t.Helper()
		s, err := c.CacheScope(ctx, tid)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	empty := scope()
	put(t, st, tid, "a.md", "markdown", "zebra crossing")
	one := scope()
	if one == empty {
		t.Fatalf("scope %q did not change after a put", one)
	}
	// search results are not indexed, so storing them keeps cached searches valid
	if _, err := (storeArtifacts{st, tid}).PutArtifact(ctx, plugin.NewArtifact{Name: "r.json", Type: "json", Content: []byte(`{"r":1}`)}); err != nil {
		t.Fatal(err)
	}
	if s := scope(); s != one {
		t.Fatalf("scope changed %q -> %q after storing search results", one, s)
	}
}

// A thread with one artifact: every term is in all of the store's artifacts, so FTS5 gives
// it the minimum idf; the score is still the real (positive) -bm25, not 0. Text that is
// already bold keeps one pair of markers.
func TestSearchScoreAndBoldSnippet(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	tid := newThread(t, st)
	put(t, st, tid, "notes.md", "markdown", "# Notes\nThe daemon **stores** state, and relay stores artifacts. **Fast relay** here.")
	hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: "stores"})
	if err != nil || len(hits) != 1 {
		t.Fatal(hits, err)
	}
	if hits[0].Score <= 0 {
		t.Errorf("score = %v, want > 0 (-bm25)", hits[0].Score)
	}
	if want := "The daemon **stores** state, and relay **stores** artifacts."; !strings.Contains(hits[0].Snippet, want) {
		t.Errorf("snippet %q, want it to contain %q", hits[0].Snippet, want)
	}
	hits, err = st.Search(ctx, tid, memory.SearchQuery{Query: "relay"})
	if err != nil || len(hits) != 1 {
		t.Fatal(hits, err)
	}
	if strings.Contains(hits[0].Snippet, "****") || !strings.Contains(hits[0].Snippet, "**Fast relay**") || !strings.Contains(hits[0].Snippet, "and **relay** stores") {
		t.Errorf("snippet %q: bold text must not be bolded again", hits[0].Snippet)
	}
}

func TestHighlight(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"a \x02b\x03 c", "a **b** c"},
		{"**\x02b\x03**", "**b**"},
		{"**x \x02b\x03 y** \x02b\x03", "**x b y** **b**"},
		{"\x02a b\x03 \x02c\x03", "**a b** **c**"},
		{"\x03stray \x02open", "stray **open**"},
	} {
		if got := highlight(tt.in); got != tt.want {
			t.Errorf("highlight(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestScore(t *testing.T) {
	for _, tt := range []struct{ bm25, want float64 }{
		{-1.2345678, 1.23457}, {-1.1e-06, 1.1e-06}, {0, 0}, {-3.5, 3.5},
	} {
		if got := Score(tt.bm25); got != tt.want {
			t.Errorf("Score(%v) = %v, want %v", tt.bm25, got, tt.want)
		}
	}
}

// A short ref is looked up through artifacts_short, not by walking the thread's artifacts:
// every capability call resolves its result's short ref, and the walk cost 3 ms at 10k.
func TestShortRefLookupUsesItsIndex(t *testing.T) {
	s := openTest(t, t.TempDir())
	var id, parent, notused int
	var detail string
	if err := s.r.QueryRow(`EXPLAIN QUERY PLAN `+sqlShortInThread, "t", "abcdef").Scan(&id, &parent, &notused, &detail); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(detail, "artifacts_short") {
		t.Fatalf("short ref lookup plan is %q, want it to use artifacts_short", detail)
	}
}

// The snippets come from one walk of the MATCH over the hits' rowid range: with the hits'
// rowids as a constraint SQLite ran FTS5's xFilter once per hit (plan "=M…"), each seeking
// every term in every index segment again.
func TestSnippetQueryWalksTheRangeOnce(t *testing.T) {
	s := openTest(t, t.TempDir())
	rows, err := s.xr.Query(`EXPLAIN QUERY PLAN `+sqlSnippets(3), markOpen, markClose, "x", 1, 9, 1, 5, 9)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(plan) != 1 || !strings.Contains(plan[0], "VIRTUAL TABLE INDEX") || strings.Contains(plan[0], ":=") || !strings.Contains(plan[0], "><") {
		t.Fatalf("snippet query plan is %q, want one range walk of artifact_fts (M…><, no rowid =)", plan)
	}
}

// Each hit gets its own snippet when the hits are spread over the matches and other
// matches lie between them: the snippet walk covers the whole span, and keeps only the hits.
func TestSnippetsBelongToTheirHits(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	tid := newThread(t, st)
	for i := range 40 {
		body := fmt.Sprintf("marker%03d filler text about nothing in particular", i)
		if i%3 == 0 { // the hits: "beacon" three times, in a short text
			body = fmt.Sprintf("marker%03d beacon beacon beacon", i)
		} else if i%3 == 1 { // matches between the hits, ranked below them
			body = fmt.Sprintf("marker%03d beacon once, then a long stretch of other words that dilute it", i)
		}
		put(t, st, tid, fmt.Sprintf("doc%03d.txt", i), "text", body)
	}
	hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: "beacon", Limit: 14})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 14 {
		t.Fatalf("%d hits, want 14", len(hits))
	}
	for i, h := range hits {
		var n int
		if _, err := fmt.Sscanf(h.Name, "doc%03d.txt", &n); err != nil {
			t.Fatal(err)
		}
		if n%3 != 0 {
			t.Fatalf("hit %d is %s, want the documents with three beacons first: %v", i, h.Name, refs(hits))
		}
		if want := fmt.Sprintf("marker%03d", n); !strings.Contains(h.Snippet, want) || !strings.Contains(h.Snippet, "**beacon**") {
			t.Fatalf("hit %s has snippet %q, want its own text (%s) with beacon highlighted", h.Name, h.Snippet, want)
		}
	}
}

// The {name body} column filter is left out only for queries none of whose words is, as
// the index stems it, a word of an artifact type ("tools*" is stemmed to "tool*" first).
func TestNamesTypeWord(t *testing.T) {
	for q, want := range map[string]bool{
		"text": true, "texts": true, "tex*": true, "TOOL": true, "outputs": true, "binaries": true,
		"emailing": true, "mark*": true, `"json schema"`: true, "hello OR html": true, "deploy relay": false,
		`"hello world"`: false, "bin": false, "textbook": false, "tools*": true, "markup": false, "js": false,
	} {
		terms, err := ftsquery.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		if got := namesTypeWord(context.Background(), terms); got != want {
			t.Errorf("namesTypeWord(%q) = %v, want %v", q, got, want)
		}
	}
}

// A query for a type's word finds the artifacts that contain it, not every artifact of
// that type; and a query without one ranks and scores exactly as with the column filter.
func TestTypeWordsAreNotContent(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	tid := newThread(t, st)
	put(t, st, tid, "a.txt", "text", "plain words about deploys")
	put(t, st, tid, "b.txt", "text", "this one mentions text twice: text")
	put(t, st, tid, "c.out", "tool_output", "deploy output of the tool")
	put(t, st, tid, "d.md", "markdown", "deploy deploy notes")
	for q, want := range map[string]string{"text": "b.txt", "texts": "b.txt", "tool": "c.out", "outputs": "c.out", "markdown": "", "mark*": ""} {
		hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(refs(hits), ","); got != want {
			t.Errorf("search %q found %q, want %q", q, got, want)
		}
	}
	hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	var rowids []int64
	for _, h := range hits {
		var id int64
		if err := st.xr.QueryRow(`SELECT fts_rowid FROM docs WHERE ref = ?`, h.Ref).Scan(&id); err != nil {
			t.Fatal(err)
		}
		rowids = append(rowids, id)
	}
	// the same ranking with the column filter, straight from FTS5
	rows, err := st.xr.Query(`SELECT rowid, bm25(artifact_fts, 2.0, 1.0, 0.0) FROM artifact_fts WHERE artifact_fts MATCH '{name body}: ("deploy")' ORDER BY 2, 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for ; rows.Next(); i++ {
		var id int64
		var bm float64
		if err := rows.Scan(&id, &bm); err != nil {
			t.Fatal(err)
		}
		if i >= len(hits) || rowids[i] != id || hits[i].Score != Score(bm) {
			t.Fatalf("hit %d: got %v (scores %v), want rowid %d score %v", i, rowids, hits, id, Score(bm))
		}
	}
	if i != len(hits) || i != 3 {
		t.Fatalf("%d hits, the column-filtered query has %d, want 3", len(hits), i)
	}
}

// typeWordCases are words around the types' words: the words, their inflections, prefixes
// of each length, near misses, other case.
func typeWordCases() []string {
	ws := []string{"texts", "texting", "textual", "binaries", "emails", "emailing", "jsons", "outputs", "outputting",
		"tooling", "tools", "htmls", "markdowns", "marked", "mark", "bin", "js", "a", "z9", "deploy", "relay", "TEXT", "Tool", "x2"}
	for _, t := range memory.ArtifactTypes {
		for _, w := range ftsquery.Words(t) {
			for n := 1; n <= len(w); n++ {
				ws = append(ws, w[:n])
			}
			ws = append(ws, w+"s", w+"ed", w+"ing", w+"x")
		}
	}
	return ws
}

// TestTypeWordGoIsFTS5s: for every word ftstok takes, the match against the types' stems in
// Go answers as the match against the types with FTS5 does, as a word and as a prefix.
func TestTypeWordGoIsFTS5s(t *testing.T) {
	for _, w := range typeWordCases() {
		for _, prefix := range []bool{false, true} {
			checkTypeWordGo(t, w, prefix)
		}
	}
}

func checkTypeWordGo(t *testing.T, w string, prefix bool) {
	t.Helper()
	yes, ok := isTypeWordGo(w, prefix)
	if !ok {
		return
	}
	st, err := typeVocab()
	if err != nil {
		t.Fatal(err)
	}
	q := `"` + w + `"`
	if prefix {
		q += "*"
	}
	var one int
	err = st.QueryRow(q).Scan(&one)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("%s: %v", q, err)
	}
	if want := err == nil; yes != want {
		t.Errorf("isTypeWordGo(%q, prefix %v) = %v, FTS5 says %v", w, prefix, yes, want)
	}
}

func FuzzTypeWordGo(f *testing.F) {
	for _, w := range typeWordCases() {
		f.Add(w, false)
		f.Add(w, true)
	}
	f.Fuzz(func(t *testing.T, w string, prefix bool) {
		if len(w) > 64 || strings.ContainsAny(w, "\"\x00") {
			return
		}
		checkTypeWordGo(t, w, prefix)
	})
}
