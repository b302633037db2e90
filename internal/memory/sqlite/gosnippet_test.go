package sqlite

import (
	"database/sql"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/memory/ftsquery"
	"github.com/relaydev/relay/internal/testsupport/realtext"
)

// fts5Snippets is an in-memory FTS5 table laid out and tokenized as the index is, for
// holding goSnippet to what snippet() makes of the same text and query.
type fts5Snippets struct {
	db *sql.DB
	st *sql.Stmt
}

func newFTS5Snippets(t testing.TB) *fts5Snippets {
	t.Helper()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE VIRTUAL TABLE d USING fts5(name, body, ty, ` + searchTokenizer + `)`); err != nil {
		t.Fatal(err)
	}
	st, err := db.Prepare(`SELECT snippet(d, 1, ?, ?, '` + snippetEllipsis + `', 16) FROM d WHERE d MATCH ? AND rowid = ?`)
	if err != nil {
		t.Fatal(err)
	}
	return &fts5Snippets{db: db, st: st}
}

// add stores a document and returns its rowid.
func (f *fts5Snippets) add(t testing.TB, name, body string) int64 {
	t.Helper()
	r, err := f.db.Exec(`INSERT INTO d(name, body, ty) VALUES (?, ?, 'text')`, name, body)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := r.LastInsertId()
	return id
}

// snippet is FTS5's snippet of document id for match, and whether the document matches.
func (f *fts5Snippets) snippet(t testing.TB, match string, id int64) (string, bool) {
	t.Helper()
	var s string
	switch err := f.st.QueryRow(markOpen, markClose, match, id).Scan(&s); err {
	case nil:
		return s, true
	case sql.ErrNoRows:
		return "", false
	default:
		t.Fatalf("match %q: %v", match, err)
		return "", false
	}
}

// compare checks goSnippet against snippet() for one document and query, and reports
// whether the document matched and goSnippet took it.
func (f *fts5Snippets) compare(t testing.TB, id int64, body, query string) bool {
	t.Helper()
	terms, err := ftsquery.Parse(query)
	if err != nil {
		return false
	}
	phrases, ok := goPhrases(terms)
	if !ok {
		return false
	}
	got, ok := goSnippet(body, phrases)
	if !ok {
		return false
	}
	matched := false
	// as Search writes the match: bare, restricted to name and body, behind a type filter
	for _, m := range []string{"(" + buildMatch(terms) + ")", "{name body}: (" + buildMatch(terms) + ")", `ty:("text") AND (` + buildMatch(terms) + ")"} {
		want, ok := f.snippet(t, m, id)
		if !ok {
			continue
		}
		matched = true
		if got != want {
			t.Fatalf("query %q (match %s) on %.300q:\n go    %q\n fts5  %q", query, m, body, got, want)
		}
	}
	return matched
}

// TestGoSnippetIsFTS5s: on slices of this repository's code and docs, for queries of one
// word, several, phrases, prefixes, OR, repeated words and words the text holds only
// stemmed otherwise, goSnippet returns snippet()'s bytes.
func TestGoSnippetIsFTS5s(t *testing.T) {
	text := realtext.ModuleText(t)
	f := newFTS5Snippets(t)
	rng := rand.New(rand.NewPCG(7, 11))
	compared := 0
	for round := range 500 {
		size := []int{40, 200, 2000, 8000}[round%4]
		off := rng.IntN(len(text) - size)
		body := strings.ToValidUTF8(text[off:off+size], "")
		id := f.add(t, "doc.md", body)
		words := ftsquery.Words(body)
		if len(words) == 0 {
			continue
		}
		pick := func() string { return words[rng.IntN(len(words))] }
		i := rng.IntN(len(words))
		queries := []string{
			pick(),
			pick() + " " + pick(),
			pick() + " " + pick() + " " + pick(),
			`"` + strings.Join(words[i:min(i+2, len(words))], " ") + `"`,
			`"` + strings.Join(words[i:min(i+3, len(words))], " ") + `"`,
			prefixOf(pick()) + "*",
			pick() + " OR " + pick(),
			pick() + " OR zqxwv",
			pick() + " " + pick() + " OR " + pick(),
			strings.Repeat(pick()+" ", 2),
			pick() + "s",
			pick() + "ing " + pick() + "ed",
		}
		for _, q := range queries {
			if f.compare(t, id, body, q) {
				compared++
			}
		}
	}
	if compared < 5000 {
		t.Fatalf("only %d snippets compared", compared)
	}
	t.Logf("%d snippets compared", compared)
}

func prefixOf(w string) string {
	if len(w) > 4 {
		return w[:len(w)-2]
	}
	return w
}

// TestGoSnippetRefuses: text or a query ftstok cannot tokenize as FTS5 does goes to FTS5.
func TestGoSnippetRefuses(t *testing.T) {
	if _, ok := goPhrases(parse(t, "данные")); ok {
		t.Error("a non-ASCII query word was taken")
	}
	phrases, ok := goPhrases(parse(t, "relay"))
	if !ok {
		t.Fatal("relay refused")
	}
	if _, ok := goSnippet("the relay in Zürich", phrases); ok {
		t.Error("text with a non-ASCII letter was taken")
	}
	if s, ok := goSnippet("relay — the relay → here", phrases); !ok || s != markOpen+"relay"+markClose+" — the "+markOpen+"relay"+markClose+" → here" {
		t.Errorf("punctuation-only non-ASCII: %q %v", s, ok)
	}
}

// FuzzGoSnippet: whatever text and query goSnippet takes, it cuts as snippet() does.
func FuzzGoSnippet(f *testing.F) {
	f.Add("The daemon stores state. Relay stores artifacts: fast.", "stores")
	f.Add("a b c d e f g h i j k l m n o p q r s t u v w x y z a b", `"y z" a`)
	f.Add("running runs runner ran", "run*")
	f.Add("x. y: z\n\nw", "z OR w")
	f.Fuzz(func(t *testing.T, body, query string) {
		db := newFTS5Snippets(t)
		id := db.add(t, "n", body)
		db.compare(t, id, body, query)
	})
}

// BenchmarkGoSnippet cuts the snippet of a ~2 KB hit of real text (a slice of this
// repository's Go and Markdown, as bench/memory stores them) for a one-word query and a
// two-word phrase found in it: the part of a search's CPU spent per hit in Go.
func BenchmarkGoSnippet(b *testing.B) {
	text := realtext.ModuleText(b)
	rng := rand.New(rand.NewPCG(5, 8))
	type hit struct {
		body    string
		phrases []snippetPhrase
	}
	var one, phrase []hit
	for len(one) < 64 || len(phrase) < 64 {
		off := rng.IntN(len(text) - 2000)
		body := strings.ToValidUTF8(text[off:off+2000], "")
		words := ftsquery.Words(body)
		if len(words) < 8 {
			continue
		}
		i := rng.IntN(len(words) - 1)
		for _, q := range []struct {
			to *[]hit
			q  string
		}{{&one, words[i]}, {&phrase, `"` + words[i] + " " + words[i+1] + `"`}} {
			terms, err := ftsquery.Parse(q.q)
			if err != nil {
				b.Fatal(err)
			}
			if ps, ok := goPhrases(terms); ok {
				if _, ok := goSnippet(body, ps); ok { // text ftstok refuses goes to FTS5
					*q.to = append(*q.to, hit{body, ps})
				}
			}
		}
	}
	for _, k := range []struct {
		name string
		hits []hit
	}{{"one", one}, {"phrase", phrase}} {
		b.Run(k.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				h := k.hits[i%len(k.hits)]
				if s, _ := goSnippet(h.body, h.phrases); s == "" {
					b.Fatal("no snippet")
				}
				i++
			}
		})
	}
}

// TestSnippetScratchKeep: a scratch is kept for the next hit only while every list it
// holds is within maxScratch (a many-word query's instances can outgrow the tokens).
func TestSnippetScratchKeep(t *testing.T) {
	small := &snippetScratch{toks: make([]snippetToken, 0, 64), insts: make([]instance, 0, 64), sentences: make([]int, 0, 8)}
	if !small.keep() {
		t.Error("a small scratch was dropped")
	}
	for name, sc := range map[string]*snippetScratch{
		"tokens":    {toks: make([]snippetToken, 0, maxScratch+1)},
		"instances": {insts: make([]instance, 0, maxScratch+1)},
		"sentences": {sentences: make([]int, 0, maxScratch+1)},
	} {
		if sc.keep() {
			t.Errorf("a scratch with outsized %s was kept", name)
		}
	}
}
