package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/ftsquery"
)

// filler is text of n bytes that matches none of the tests' query words.
func filler(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d of the build log: ok\n", i)
	}
	return b.String()[:n]
}

func parse(t testing.TB, q string) []ftsquery.Term {
	t.Helper()
	terms, err := ftsquery.Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	return terms
}

// TestLargeHitSnippetFindsTheMatch: a hit with far more text than a snippet gets its
// snippet from around the match, wherever in the text it is, highlighted as the index
// stems the words; the text's start when the body does not hold the words.
func TestLargeHitSnippetFindsTheMatch(t *testing.T) {
	st := openStore(t)
	tid := newThread(t, st)
	big := filler(60<<10) + "\nThe Checkpointer rewinds the WAL after copying it.\n" + filler(40<<10)
	put(t, st, tid, "server.log", "text", big)
	put(t, st, tid, "rewinding-notes.log", "text", filler(20<<10))
	ctx := context.Background()
	for _, tc := range []struct{ q, want string }{
		{"checkpointer", "**Checkpointer**"},
		{"rewinding", "**rewinds**"},       // a stem of the word, not the word
		{`"copying it"`, "**copying it**"}, // a phrase
		{"checkpointer rewinds", "**Checkpointer** **rewinds**"},
	} {
		hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: tc.q})
		if err != nil {
			t.Fatal(err)
		}
		var snip string
		for _, h := range hits {
			if h.Name == "server.log" {
				snip = h.Snippet
			}
		}
		if !strings.Contains(snip, tc.want) || !strings.HasPrefix(snip, "…") || !strings.HasSuffix(snip, "…") {
			t.Errorf("%s: snippet %q, want it to contain %q between ellipses", tc.q, snip, tc.want)
		}
	}
	// found by its name only: the snippet is the start of the text, unmarked
	hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: "rewinding notes"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || !strings.HasPrefix(hits[0].Snippet, "line 0 of the build log") || strings.Contains(hits[0].Snippet, "**") {
		t.Fatalf("hits %+v: want notes' start unmarked", hits)
	}
}

// TestCutSnippetsFallsBack: when no window holds every word of the query, the snippet
// marks what one holds; with none of them, it is the window's start.
func TestCutSnippetsFallsBack(t *testing.T) {
	text := "alpha is here\n" + filler(30<<10) + "\nomega is there\n"
	got, err := cutSnippets(context.Background(), parse(t, "alpha omega"), []string{text, filler(10 << 10)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got[0], markOpen+"alpha"+markClose) && !strings.Contains(got[0], markOpen+"omega"+markClose) {
		t.Errorf("snippet %q: want alpha or omega marked", got[0])
	}
	if !strings.HasPrefix(got[1], "line 0 of") || strings.Contains(got[1], markOpen) || !strings.HasSuffix(got[1], "…") {
		t.Errorf("snippet %q: want the text's start, unmarked, cut", got[1])
	}
}

// TestWindowsOf: whole words before stems, cased variants, a prefix as it is, the start
// when nothing occurs.
func TestWindowsOf(t *testing.T) {
	text := filler(5000) + " Configure it " + filler(5000) + " configuration " + filler(5000)
	ws := windowsOf(text, parse(t, "configuration"))
	if len(ws) != 2 || text[ws[0].start+windowBefore:][:len("configuration")] != "configuration" {
		t.Fatalf("windows %v: want the whole word's first", ws)
	}
	if !strings.HasPrefix(text[ws[1].start+windowBefore:], "Configure") {
		t.Fatalf("windows %v: want the stem's (capitalized) second", ws)
	}
	// a prefix is looked for as it is, not cut to a stem: "con" would find "contract" first
	text = filler(3000) + " contract " + filler(3000) + " Config " + filler(3000)
	if ws := windowsOf(text, parse(t, "conf*")); len(ws) != 1 || !strings.HasPrefix(text[ws[0].start+windowBefore:], "Config") {
		t.Fatalf("windows %v: want the one around Config", ws)
	}
	if ws := windowsOf(text, parse(t, "zebra")); len(ws) != 1 || ws[0].start != 0 {
		t.Fatalf("windows %v: want the text's start", ws)
	}
}

// FuzzWindowsOf: whatever the text and query, windows are inside the text, start (past
// the text's first byte) and end on rune boundaries, do not overlap, and are at most maxWindows.
func FuzzWindowsOf(f *testing.F) {
	f.Add("héllo wörld Hello HELLO hello", "hello")
	f.Add(strings.Repeat("ab", 2000)+"abc", "abcdefgh*")
	f.Add("\xff\xfe runs running", `"run fast" OR walk`)
	f.Fuzz(func(t *testing.T, text, q string) {
		terms, err := ftsquery.Parse(q)
		if err != nil {
			return
		}
		ws := windowsOf(text, terms)
		if len(ws) == 0 || len(ws) > maxWindows {
			t.Fatalf("%d windows", len(ws))
		}
		for i, w := range ws {
			if w.start < 0 || w.end > len(text) || w.start > w.end {
				t.Fatalf("window %v outside [0,%d]", w, len(text))
			}
			if (w.start > 0 && w.start < len(text) && !utf8.RuneStart(text[w.start])) || (w.end < len(text) && !utf8.RuneStart(text[w.end])) {
				t.Fatalf("window %v splits a rune", w)
			}
			for _, o := range ws[:i] {
				if w.start < o.end && o.start < w.end {
					t.Fatalf("windows %v and %v overlap", o, w)
				}
			}
		}
	})
}

// TestSnippetShowsWordsTogether: in a large hit where the query's words occur apart first
// and together later, the snippet is cut where they are together, both marked.
func TestSnippetShowsWordsTogether(t *testing.T) {
	st := openStore(t)
	tid := newThread(t, st)
	text := "The checkpointer starts here.\n" + filler(6000) + "\nA rewind happens alone.\n" + filler(6000) +
		"\nAfter copying, the checkpointer rewinds the WAL.\n" + filler(500)
	put(t, st, tid, "notes.md", "markdown", text)
	hits, err := st.Search(context.Background(), tid, memory.SearchQuery{Query: "checkpointer rewind"})
	if err != nil || len(hits) != 1 {
		t.Fatalf("hits %+v, %v", hits, err)
	}
	if s := hits[0].Snippet; !strings.Contains(s, "**checkpointer** **rewinds**") {
		t.Fatalf("snippet %q: want the place where both words are, marked", s)
	}
}

// TestDensest: the cluster with the most distinct words wins over the first occurrences;
// a query of one word, or words that never meet, has none.
func TestDensest(t *testing.T) {
	text := "alpha " + filler(400) + " omega " + filler(400) + " Alpha and OMEGA and beta " + filler(100) + " alpha omega"
	at, ok := densest(wordsIn(text, parse(t, "alpha omega beta")))
	if !ok || !strings.HasPrefix(text[at:], "Alpha and OMEGA and beta") {
		t.Fatalf("densest at %d (%v): %q", at, ok, text[min(at, len(text)):])
	}
	if _, ok := densest(wordsIn(text, parse(t, "alpha"))); ok {
		t.Fatal("a one-word query has no cluster")
	}
	if _, ok := densest(wordsIn("alpha "+filler(400)+" omega", parse(t, "alpha omega"))); ok {
		t.Fatal("words clusterSpan apart make no cluster")
	}
}

// TestFindAllCased: every casing, in order, each word start once, never inside a word.
func TestFindAllCased(t *testing.T) {
	for _, tc := range []struct {
		text, w string
		whole   bool
		want    []int
	}{
		{"hello Hello HELLO hellos", "hello", true, []int{0, 6, 12}},
		{"hello Hello HELLO hellos", "hello", false, []int{0, 6, 12, 18}},
		{"aaa aa", "aa", false, []int{0, 4}},
		{"x1 X1 42 42", "42", true, []int{6, 9}},
	} {
		if got := findAllCased(tc.text, tc.w, tc.whole, maxOccurrences); !slices.Equal(got, tc.want) {
			t.Errorf("findAllCased(%q, %q, %v) = %v, want %v", tc.text, tc.w, tc.whole, got, tc.want)
		}
	}
}
