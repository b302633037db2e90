package ftstok_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/relaydev/relay/internal/memory/ftstok"
	"github.com/relaydev/relay/internal/testsupport/realtext"
)

// tokenizer is the index's (search.go's searchTokenizer); the tests hold Scan to it.
const tokenizer = `tokenize = 'porter unicode61 remove_diacritics 2'`

// fts5Tokens returns the terms and token positions FTS5 itself makes of each text, one row
// per text, read back through fts5vocab.
func fts5Tokens(t testing.TB, texts []string) [][]string {
	t.Helper()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE VIRTUAL TABLE d USING fts5(body, ` + tokenizer + `);
		CREATE VIRTUAL TABLE v USING fts5vocab(d, 'instance');`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if _, err := tx.Exec(`INSERT INTO d(rowid, body) VALUES (?, ?)`, i+1, text); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT doc, offset, term FROM v`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := make([][]string, len(texts))
	for rows.Next() {
		var doc, off int
		var term string
		if err := rows.Scan(&doc, &off, &term); err != nil {
			t.Fatal(err)
		}
		d := out[doc-1]
		for len(d) <= off {
			d = append(d, "")
		}
		d[off] = term
		out[doc-1] = d
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// goTokens is Scan's terms of text, or ok false.
func goTokens(text string) ([]string, bool) {
	var terms []string
	ok := ftstok.Scan(text, func(start, end int, tok []byte) { terms = append(terms, string(ftstok.Stem(tok))) })
	return terms, ok
}

// TestStemsAreFTS5s: every distinct word of this repository's code and docs, and words
// made to end in each suffix Porter's rules name, stem as FTS5's porter tokenizer stems
// them.
func TestStemsAreFTS5s(t *testing.T) {
	seen := map[string]bool{}
	var words []string
	add := func(w string) {
		if !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	for _, w := range strings.FieldsFunc(realtext.ModuleText(t), func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) {
		add(strings.ToLower(w))
	}
	suffixes := []string{"s", "es", "ies", "sses", "ss", "eed", "ed", "ing", "at", "bl", "iz", "y", "ational", "tional",
		"enci", "anci", "izer", "logi", "bli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator", "alism",
		"iveness", "fulness", "ousness", "aliti", "iviti", "biliti", "ical", "ness", "icate", "iciti", "ful", "ative",
		"alize", "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "sion", "tion", "ion",
		"ou", "ism", "ate", "iti", "ous", "ive", "ize", "e", "ll", "l", "hop", "fil", "fail", "tt", "ee", "yy"}
	rng := rand.New(rand.NewPCG(1, 2))
	const letters = "abcdefghijklmnopqrstuvwxyzaeiouy"
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(6) {
			b.WriteByte(letters[rng.IntN(len(letters))])
		}
		add(b.String() + suffixes[rng.IntN(len(suffixes))])
	}
	for _, n := range []int{63, 64, 65, 70} {
		add(strings.Repeat("ab", n/2) + strings.Repeat("s", n%2) + "ing"[:0])
		add(strings.Repeat("x", n-3) + "ing")
	}
	want := fts5Tokens(t, words)
	bad := 0
	for i, w := range words {
		got, ok := goTokens(w)
		// goSnippet stems only tokens that begin as a query word does
		if len(got) == 1 && got[0][0] != w[0] {
			t.Errorf("%q stems to %q: another first letter", w, got[0])
		}
		if !ok || strings.Join(got, " ") != strings.Join(want[i], " ") {
			if bad++; bad <= 20 {
				t.Errorf("%q: Scan %q (ok %v), FTS5 %q", w, got, ok, want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d words stem otherwise than FTS5", bad, len(words))
	}
	t.Logf("%d words", len(words))
}

// TestScanIsFTS5s: Scan splits real text (code, markdown, logs) into FTS5's tokens, or
// refuses it.
func TestScanIsFTS5s(t *testing.T) {
	text := realtext.ModuleText(t)
	var texts []string
	for off := 0; off+4096 < len(text); off += 7919 {
		texts = append(texts, strings.ToValidUTF8(text[off:off+4096], ""))
	}
	texts = append(texts, "Ünïcode café", "a\u00a0b—c…d→e", "tab\tnew\nline\r\n", "x_y-z.w", "", "!!", "A1b2 C3",
		"emoji 🎉 ok", "zero\u200bwidth", "\xff bad", "nul\x00byte")
	want := fts5Tokens(t, texts)
	refused := 0
	for i, s := range texts {
		got, ok := goTokens(s)
		if !ok {
			refused++
			continue
		}
		if strings.Join(got, " ") != strings.Join(want[i], " ") {
			t.Errorf("text %d %.80q: Scan %q, FTS5 %q", i, s, got, want[i])
		}
	}
	if refused > len(texts)/4 {
		t.Errorf("Scan refused %d of %d texts of this repository", refused, len(texts))
	}
	t.Logf("%d texts, %d refused", len(texts), refused)
}

// TestSeparatorsAreFTS5s: every character Scan takes as a separator separates two words in
// FTS5 too.
func TestSeparatorsAreFTS5s(t *testing.T) {
	var texts []string
	var runes []rune
	for r := rune(0x80); r <= 0x3100; r++ {
		if got, ok := goTokens("x" + string(r) + "y"); ok {
			if strings.Join(got, " ") != "x y" {
				t.Fatalf("U+%04X: Scan %q", r, got)
			}
			texts, runes = append(texts, "x"+string(r)+"y"), append(runes, r)
		}
	}
	want := fts5Tokens(t, texts)
	for i, r := range runes {
		if strings.Join(want[i], " ") != "x y" {
			t.Errorf("U+%04X %q: FTS5 makes %q of x%sy; Scan separates there", r, string(r), want[i], string(r))
		}
	}
	if len(runes) < 1000 {
		t.Errorf("only %d separators", len(runes))
	}
	t.Logf("%d separators", len(runes))
}

// FuzzScan: whatever Scan accepts, it tokenizes as FTS5 does.
func FuzzScan(f *testing.F) {
	for _, s := range []string{"Hello, world", "relaying relays", "x\u00a0y", "caresses ponies", "a.b:c", "ÀB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := goTokens(s)
		if !ok {
			return
		}
		want := fts5Tokens(t, []string{s})[0]
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("%q: Scan %q, FTS5 %q", s, got, want)
		}
	})
}

func ExampleStem() {
	for _, w := range []string{"relaying", "caresses", "configuration", "agreed", "hopping"} {
		fmt.Println(string(ftstok.Stem([]byte(w))))
	}
	// Output:
	// relai
	// caress
	// configur
	// agre
	// hop
}
