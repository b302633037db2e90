package sqlite

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"sync"

	"github.com/relaydev/relay/internal/memory/ftsquery"
	"github.com/relaydev/relay/internal/memory/ftstok"
)

// Snippets of hits up to wholeSnippetBytes are cut here, in Go, as FTS5's snippet() cuts
// them: the same 16 tokens, the same marks and ellipses, byte for byte (TestGoSnippetIsFTS5s,
// FuzzGoSnippet). snippet() tokenized each hit's text twice in translated C and read it
// back through a SQL function: about half of a one-term search's CPU at 10k artifacts.
// ftstok refuses text it cannot tokenize as FTS5 does (non-ASCII letters, say); such a
// hit, or a query with such a word, still goes through snippet() on the index.

const (
	snippetTokens   = 16  // tokens a snippet shows
	snippetEllipsis = "…" // where it cuts the text
)

// snippetPhrase is one phrase of a query as FTS5 matches it in a hit's body: its words as
// the index stems them, the last one a prefix when prefix.
type snippetPhrase struct {
	words  [][]byte
	prefix bool
}

// goPhrases returns the query's phrases in FTS5's order, or false when a word is not one
// ASCII token or the query has more words than a token's match mask holds.
func goPhrases(terms []ftsquery.Term) ([]snippetPhrase, bool) {
	var out []snippetPhrase
	n := 0
	for _, t := range terms {
		if t.Or {
			continue
		}
		p := snippetPhrase{prefix: t.Prefix}
		for _, w := range t.Words {
			if !ftstok.IsWord(w) {
				return nil, false
			}
			p.words = append(p.words, ftstok.Stem([]byte(w)))
		}
		if n += len(p.words); n > 64 || len(p.words) == 0 {
			return nil, false
		}
		out = append(out, p)
	}
	return out, len(out) > 0
}

// snippetToken is a token of a hit's text: its byte range, and which words of which
// phrases it matches (bit k: the k-th word of the query, phrases in order).
type snippetToken struct {
	start, end int
	match      uint64
}

// instance is a place where phrase p occurs, at token pos.
type instance struct{ pos, p int }

// snippetScratch is what cutting one snippet works in, kept for the next hit: growing the
// token list afresh for every hit (about 350 tokens in 2 KB) was a third of goSnippet's CPU
// in BenchmarkGoSnippet.
type snippetScratch struct {
	toks      []snippetToken
	insts     []instance
	sentences []int
}

var snippetScratches = sync.Pool{New: func() any { return new(snippetScratch) }}

// maxScratch bounds each list a scratch keeps. A hit's text is at most wholeSnippetBytes,
// so its tokens stay below it; its instances do not: a query of many words, each found at
// most tokens, can make up to 64 times as many, and such a scratch is dropped.
const maxScratch = wholeSnippetBytes

// keep reports whether sc is small enough to keep for the next hit.
func (sc *snippetScratch) keep() bool {
	return cap(sc.toks) <= maxScratch && cap(sc.insts) <= maxScratch && cap(sc.sentences) <= maxScratch
}

// goSnippet returns what snippet(artifact_fts, 1, markOpen, markClose, '…', 16) returns for
// a hit whose body is text, or false when ftstok cannot tokenize text as FTS5 does.
func goSnippet(text string, phrases []snippetPhrase) (string, bool) {
	var first [256]bool // the first byte of each query word: other tokens need no comparing
	for _, p := range phrases {
		for _, w := range p.words {
			first[w[0]] = true
		}
	}
	sc := snippetScratches.Get().(*snippetScratch)
	defer func() {
		if sc.keep() {
			snippetScratches.Put(sc)
		}
	}()
	toks := sc.toks[:0]
	ok := ftstok.Scan(text, func(start, end int, tok []byte) {
		t := snippetToken{start: start, end: end}
		if first[tok[0]] { // a stem begins as its token does
			term := ftstok.Stem(tok)
			k := 0
			for _, p := range phrases {
				for j, w := range p.words {
					if bytes.Equal(term, w) || p.prefix && j == len(p.words)-1 && bytes.HasPrefix(term, w) {
						t.match |= 1 << k
					}
					k++
				}
			}
		}
		toks = append(toks, t)
	})
	sc.toks = toks
	if !ok {
		return "", false
	}
	sc.insts = instances(sc.insts[:0], toks, phrases)
	sc.sentences = sentenceStarts(sc.sentences[:0], text, toks)
	start := bestStart(toks, sc.insts, sc.sentences, phrases)
	return render(text, toks, sc.insts, phrases, start), true
}

// instances appends to out where each phrase occurs, ordered by position and then phrase,
// as FTS5's xInst orders them.
func instances(out []instance, toks []snippetToken, phrases []snippetPhrase) []instance {
	k := 0
	for p, ph := range phrases {
		n := len(ph.words)
		for i := 0; i+n <= len(toks); i++ {
			j := 0
			for j < n && toks[i+j].match&(1<<(k+j)) != 0 {
				j++
			}
			if j == n {
				out = append(out, instance{i, p})
			}
		}
		k += n
	}
	slices.SortFunc(out, func(a, b instance) int { return cmp.Or(cmp.Compare(a.pos, b.pos), cmp.Compare(a.p, b.p)) })
	return out
}

// bestStart is the first token of the snippet: FTS5 scores the 16 tokens from each
// instance (1000 for each phrase it shows, 1 for each repeat) and centres the instances
// they hold, and scores the 16 tokens from the start of the sentence holding the instance,
// with a bonus of 100 (120 for the text's first sentence); the first best score wins.
func bestStart(toks []snippetToken, insts []instance, sentences []int, phrases []snippetPhrase) int {
	seen := make([]bool, len(phrases))
	score := func(from int) (int, int) {
		clear(seen)
		n, firstAt, last := 0, -1, 0
		for _, in := range insts {
			if in.pos < from || in.pos >= from+snippetTokens {
				continue
			}
			if n += 1000; seen[in.p] {
				n -= 999
			}
			seen[in.p] = true
			if firstAt < 0 {
				firstAt = in.pos
			}
			last = in.pos + len(phrases[in.p].words)
		}
		adj := firstAt - (snippetTokens-(last-firstAt))/2
		if adj+snippetTokens > len(toks) {
			adj = len(toks) - snippetTokens
		}
		return n, max(adj, 0)
	}
	best, start := 0, 0
	for _, in := range insts {
		if n, adj := score(in.pos); n > best {
			best, start = n, adj
		}
		if len(sentences) == 0 || len(toks) <= snippetTokens {
			continue
		}
		jj := 0
		for jj < len(sentences)-1 && sentences[jj+1] <= in.pos {
			jj++
		}
		if s := sentences[jj]; s < in.pos {
			n, _ := score(s)
			if s == 0 {
				n += 120
			} else {
				n += 100
			}
			if n > best {
				best, start = n, s
			}
		}
	}
	return start
}

// sentenceStarts appends to out the tokens that start a sentence as FTS5 sees one: the
// first, and each one after whitespace that follows a '.' or a ':'.
func sentenceStarts(out []int, text string, toks []snippetToken) []int {
	for i, t := range toks {
		if i == 0 {
			out = append(out, 0)
			continue
		}
		j := t.start - 1
		for j >= 0 && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r') {
			j--
		}
		if j != t.start-1 && j >= 0 && (text[j] == '.' || text[j] == ':') {
			out = append(out, i)
		}
	}
	return out
}

// render writes the snippetTokens tokens from start with FTS5's marks around each run of
// overlapping instances (a run that began before start is not marked), an ellipsis where
// text was cut, and the text's tail when the snippet reaches its last token.
func render(text string, toks []snippetToken, insts []instance, phrases []snippetPhrase, start int) string {
	var b strings.Builder
	b.Grow(256)
	// runs walks the instances merged where they overlap, as FTS5's CInstIter does.
	k, runStart, runEnd := 0, -1, -1
	next := func() {
		runStart, runEnd = -1, -1
		for ; k < len(insts); k++ {
			in := insts[k]
			end := in.pos - 1 + len(phrases[in.p].words)
			switch {
			case runStart < 0:
				runStart, runEnd = in.pos, end
			case in.pos <= runEnd:
				runEnd = max(runEnd, end)
			default:
				return
			}
		}
	}
	next()
	if start > 0 {
		b.WriteString(snippetEllipsis)
	}
	for runStart >= 0 && runStart < start {
		next()
	}
	last := start + snippetTokens - 1
	off, open := 0, false
	for pos := start; pos <= last && pos < len(toks); pos++ {
		t := toks[pos]
		if start > 0 && pos == start {
			off = t.start
		}
		if open && (pos <= runStart || runStart < 0) && t.start > off {
			b.WriteString(markClose)
			open = false
		}
		if pos == runStart && !open {
			b.WriteString(text[off:t.start])
			b.WriteString(markOpen)
			off, open = t.start, true
		}
		if pos == runEnd {
			if !open {
				b.WriteString(markOpen)
				open = true
			}
			b.WriteString(text[off:t.end])
			off = t.end
			next()
		}
		if pos == last {
			if open {
				if runStart >= 0 && pos >= runStart {
					b.WriteString(text[off:t.end])
					off = t.end
				}
				b.WriteString(markClose)
				open = false
			}
			b.WriteString(text[off:t.end])
			off = t.end
		}
	}
	if open {
		b.WriteString(markClose)
	}
	if last >= len(toks)-1 {
		b.WriteString(text[off:])
	} else {
		b.WriteString(snippetEllipsis)
	}
	return b.String()
}
