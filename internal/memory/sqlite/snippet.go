package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/relaydev/relay/internal/memory/ftsquery"
)

// Snippets of large hits. FTS5's snippet() tokenizes a hit's whole text, twice (to find
// sentence starts, then to highlight), to cut 16 tokens: a search whose hits were 100 KB
// source files or logs spent ~40 ms there (BenchmarkSearchText100KB). A hit with more text
// than wholeSnippetBytes is cut here instead: a byte search finds where the query's words
// occur (close together first), and FTS5 itself, in an in-memory table tokenized as the
// index is, picks and highlights the snippet within windows around them, so what is marked
// is what the index's tokenizer matches. Smaller hits get goSnippet (gosnippet.go).
const (
	wholeSnippetBytes = 8 << 10 // hits with up to this much text get snippet()'s own cut (goSnippet)
	windowBefore      = 256     // bytes of a window before the word it is around
	windowAfter       = 768     // and after it: a snippet is 16 tokens
	maxWindows        = 2       // windows per hit
	clusterSpan       = 120     // about the text a snippet's 16 tokens cover
	maxOccurrences    = 64      // of each word form, looked at for the cluster
)

// window is a byte range of a hit's text.
type window struct{ start, end int }

// windowsOf returns up to maxWindows windows of text: first around the place where the
// most distinct words of a query of several occur within clusterSpan bytes, then around
// the first occurrences of the query's words: whole words first, then words that begin as
// a word of the query does (the index stems "running" to "run", so "runs" matches it) or
// with a prefix of the query, in the order they occur. With no occurrence (a word found in
// the name alone, or a case the byte search does not fold), the one window is the text's
// start.
func windowsOf(text string, terms []ftsquery.Term) []window {
	words := wordsIn(text, terms)
	var exact, stems []int
	for _, w := range words {
		switch {
		case w.whole && len(w.at) > 0:
			exact = append(exact, w.at[0])
		case !w.whole:
			if i := findCased(text, w.word, true); i >= 0 {
				exact = append(exact, i)
			}
			if len(w.at) > 0 {
				stems = append(stems, w.at[0])
			}
		}
	}
	slices.Sort(exact)
	slices.Sort(stems)
	var out []window
	if at, ok := densest(words); ok {
		out = append(out, around(text, at))
	}
	for _, at := range append(exact, stems...) {
		if len(out) == maxWindows {
			break
		}
		w := around(text, at)
		overlaps := false
		for _, o := range out {
			overlaps = overlaps || (w.start < o.end && o.start < w.end)
		}
		if !overlaps {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		out = append(out, around(text, 0))
	}
	return out
}

// queryWord is one word of a query and where its loose form occurs in a hit's text: the
// form every word the index matches it with begins with (the word's stem key, or a prefix
// as it is); whole when that form is the word itself.
type queryWord struct {
	word  string
	whole bool
	at    []int // in order, up to maxOccurrences of each casing
}

// wordsIn finds each word of the query in text.
func wordsIn(text string, terms []ftsquery.Term) []queryWord {
	var out []queryWord
	for _, t := range terms {
		for k, w := range t.Words {
			key, whole := stemKey(w), false
			if t.Prefix && k == len(t.Words)-1 {
				key = w // a prefix matches the words that begin with it, as it is
			} else {
				whole = key == w
			}
			out = append(out, queryWord{word: w, whole: whole, at: findAllCased(text, key, whole, maxOccurrences)})
		}
	}
	return out
}

// densest returns where the cluster of the most distinct query words within clusterSpan
// bytes starts (the first such cluster), when the query has several words and a cluster
// holds at least two of them.
func densest(words []queryWord) (int, bool) {
	type occurrence struct{ at, word int }
	var occ []occurrence
	for i, w := range words {
		for _, at := range w.at {
			occ = append(occ, occurrence{at, i})
		}
	}
	if len(words) < 2 || len(occ) < 2 {
		return 0, false
	}
	slices.SortFunc(occ, func(a, b occurrence) int { return a.at - b.at })
	seen := make([]int, len(words)) // occurrences of each word inside the span
	distinct, best, bestAt := 0, 1, 0
	j := 0
	for i, o := range occ { // the span starts at occ[i] and takes every occurrence up to clusterSpan on
		for ; j < len(occ) && occ[j].at-o.at <= clusterSpan; j++ {
			if seen[occ[j].word]++; seen[occ[j].word] == 1 {
				distinct++
			}
		}
		if distinct > best {
			best, bestAt = distinct, o.at
		}
		if seen[occ[i].word]--; seen[occ[i].word] == 0 {
			distinct--
		}
	}
	return bestAt, best >= 2
}

// around is the window of text around byte at, its ends moved onto rune starts: the start
// forward, the end back, or forward when no rune starts between them (a run of bytes that
// are not UTF-8).
func around(text string, at int) window {
	start, end := max(0, at-windowBefore), min(len(text), at+windowAfter)
	for start > 0 && start < len(text) && !utf8.RuneStart(text[start]) {
		start++
	}
	end = max(end, start)
	e := end
	for e > start && e < len(text) && !utf8.RuneStart(text[e]) {
		e--
	}
	if e == start {
		for e = end; e < len(text) && !utf8.RuneStart(text[e]); e++ {
		}
	}
	return window{start, e}
}

// stemKey is the part of a query word that the words it stems with begin with: the index
// stems suffixes away (Porter), so "configuration" (stem "configur") also matches "configure"; at least
// ftsquery.MinPrefix runes are kept, so short words stay whole.
func stemKey(w string) string {
	n := utf8.RuneCountInString(w)
	keep := max(ftsquery.MinPrefix, n-5)
	if keep >= n {
		return w
	}
	i := 0
	for range keep {
		_, size := utf8.DecodeRuneInString(w[i:])
		i += size
	}
	return w[:i]
}

// findCased returns the first offset in text where w (lower-case, as the query's words
// are) begins a word (and, when whole, ends one) as written in lower case, capitalized or
// in capitals, or -1. Three searches of the text cost less than a lower-cased copy of it.
func findCased(text, w string, whole bool) int {
	if at := findAllCased(text, w, whole, 1); len(at) > 0 {
		return at[0]
	}
	return -1
}

// findAllCased returns, in order, the first offsets (up to limit of each casing) where w
// begins a word as findCased finds it.
func findAllCased(text, w string, whole bool, limit int) []int {
	var out []int
	for i, v := range []string{w, capitalized(w), strings.ToUpper(w)} {
		if i > 0 && v == w {
			continue // a word with no letter to case is found once
		}
		for from, n := 0, 0; n < limit; n++ {
			at := findWord(text, v, from, whole)
			if at < 0 {
				break
			}
			out = append(out, at)
			from = at + 1
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// capitalized is w with its first letter in capitals (ASCII; other words stay as they are).
func capitalized(w string) string {
	if w == "" || w[0] < 'a' || w[0] > 'z' {
		return w
	}
	return string(w[0]-'a'+'A') + w[1:]
}

// findWord returns the first offset in text, from from on, where w begins a word (and,
// when whole, ends one), or -1.
func findWord(text, w string, from int, whole bool) int {
	if w == "" {
		return -1
	}
	for from < len(text) {
		i := strings.Index(text[from:], w)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(w)
		if (i == 0 || !wordByte(text[i-1])) && (!whole || end == len(text) || !wordByte(text[end])) {
			return i
		}
		from = i + 1
	}
	return -1
}

// wordByte reports whether b can be part of a word: ASCII letters and digits, and every
// byte of a multi-byte rune (most of which are letters).
func wordByte(b byte) bool {
	return b >= 0x80 || b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b >= 'A' && b <= 'Z'
}

// snippetDB is an in-memory FTS5 table tokenized as the index's body column is, in which
// large hits' windows are matched and cut (rows live only inside one call's transaction).
var snippetDB = sync.OnceValues(func() (*sql.DB, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // each connection to :memory: is a database of its own
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	if _, err := db.Exec(`CREATE VIRTUAL TABLE win USING fts5(body, ` + searchTokenizer + `)`); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
})

// cutSnippets returns a snippet (marked with markOpen/markClose) for each text, matched
// against terms: from the first of its windows where the whole query matches, else from
// the first where any of its terms does, else the start of its first window unmarked.
func cutSnippets(ctx context.Context, terms []ftsquery.Term, texts []string) ([]string, error) {
	db, err := snippetDB()
	if err != nil {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() // the windows are never kept
	wins := make([][]window, len(texts))
	for i, text := range texts {
		wins[i] = windowsOf(text, terms)
		for j, w := range wins[i] {
			if _, err := tx.ExecContext(ctx, `INSERT INTO win(rowid, body) VALUES (?, ?)`, i*maxWindows+j+1, text[w.start:w.end]); err != nil {
				return nil, err
			}
		}
	}
	out := make([]string, len(texts))
	pick := func(match string) error {
		rows, err := tx.QueryContext(ctx, `SELECT rowid, snippet(win, 0, ?, ?, '…', 16) FROM win WHERE win MATCH ? ORDER BY rowid`, markOpen, markClose, match)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var snip string
			if err := rows.Scan(&id, &snip); err != nil {
				return err
			}
			i, j := int(id-1)/maxWindows, int(id-1)%maxWindows
			if i < len(out) && j < len(wins[i]) && out[i] == "" {
				out[i] = withEllipses(snip, wins[i][j], len(texts[i]))
			}
		}
		return rows.Err()
	}
	if err := pick(buildMatch(terms)); err != nil {
		return nil, fmt.Errorf("snippet: %w", err)
	}
	if missing(out) {
		if alt := anyTerm(terms); alt != "" {
			if err := pick(alt); err != nil {
				return nil, fmt.Errorf("snippet: %w", err)
			}
		}
	}
	for i, s := range out {
		if s == "" {
			out[i] = headOf(texts[i], wins[i][0])
		}
	}
	return out, nil
}

func missing(snips []string) bool {
	for _, s := range snips {
		if s == "" {
			return true
		}
	}
	return false
}

// anyTerm is the MATCH of any one of the query's terms.
func anyTerm(terms []ftsquery.Term) string {
	var parts []string
	for _, t := range terms {
		if !t.Or {
			parts = append(parts, buildMatch([]ftsquery.Term{t}))
		}
	}
	return strings.Join(parts, " OR ")
}

// withEllipses marks a snippet cut from a window inside a longer text as cut there too.
func withEllipses(snip string, w window, n int) string {
	if w.start > 0 && !strings.HasPrefix(snip, "…") {
		snip = "…" + snip
	}
	if w.end < n && !strings.HasSuffix(snip, "…") {
		snip += "…"
	}
	return snip
}

// headOf is the start of window w of text, about as long as a snippet, cut after a space.
func headOf(text string, w window) string {
	s := text[w.start:w.end]
	if len(s) > 120 {
		cut := strings.LastIndexByte(s[:120], ' ')
		if cut < 40 {
			cut = 120
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
		}
		s = s[:cut]
	}
	return withEllipses(s, window{w.start, w.start + len(s)}, len(text))
}
