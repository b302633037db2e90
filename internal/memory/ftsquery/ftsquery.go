// Package ftsquery parses the memory search syntax (words that must all match, "quoted
// phrases", prefix*, OR between terms) into terms every search backend renders in its own
// engine's syntax, so a query means the same on SQLite FTS5 and on PostgreSQL full-text.
// Words are the letter/digit runs of the text, lower-cased with diacritics removed, the
// same runs the index is built from; nothing a user types can be engine syntax.
package ftsquery

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// MinPrefix is the shortest word searched as a prefix; shorter ones match whole words.
const MinPrefix = 3

// MaxQueryLen bounds the query so a hostile one cannot make the engine do unbounded work.
const MaxQueryLen = 512

// ErrEmptyQuery is returned when a query has no searchable terms.
var ErrEmptyQuery = errors.New("the query has no searchable words; pass words, \"a phrase\" or a prefix like rel*")

// Term is one phrase (one or more words in order), or an OR between its neighbours.
type Term struct {
	Words  []string
	Prefix bool // the last word is a prefix
	Or     bool // this term is the OR operator (Words empty)
}

// Parse splits q into terms. OR never starts or ends the list and never repeats.
func Parse(q string) ([]Term, error) {
	if len(q) > MaxQueryLen {
		return nil, errors.New("the query is longer than 512 bytes; shorten it")
	}
	var terms []Term
	rs := []rune(q)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '"':
			j := i + 1
			for j < len(rs) && rs[j] != '"' {
				j++
			}
			words := folded(string(rs[i+1 : min(j, len(rs))]))
			i = j + 1
			if len(words) > 0 {
				terms = append(terms, Term{Words: words})
			}
		default:
			j := i
			for j < len(rs) && !unicode.IsSpace(rs[j]) && rs[j] != '"' {
				j++
			}
			word := string(rs[i:j])
			i = j
			if word == "OR" {
				if len(terms) > 0 && !terms[len(terms)-1].Or {
					terms = append(terms, Term{Or: true})
				}
				continue
			}
			ws := folded(word)
			if len(ws) == 0 {
				continue
			}
			// Prefixes under MinPrefix runes would match thousands of words; they match
			// as whole words instead.
			prefix := strings.HasSuffix(word, "*") && utf8.RuneCountInString(ws[len(ws)-1]) >= MinPrefix
			terms = append(terms, Term{Words: ws, Prefix: prefix})
		}
	}
	for len(terms) > 0 && terms[len(terms)-1].Or {
		terms = terms[:len(terms)-1]
	}
	if len(terms) == 0 {
		return nil, ErrEmptyQuery
	}
	return terms, nil
}

// folded is Words with diacritics removed, dropping words that were only marks.
func folded(s string) []string {
	ws := Words(s)
	out := ws[:0]
	for _, w := range ws {
		if w = Fold(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// Words splits text into lower-case letter/digit runs.
func Words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r)
	})
}

// Fold removes diacritics (é → e), as the SQLite index's remove_diacritics does; backends
// that fold in Go apply it to the indexed text and the query alike.
func Fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s // nothing to fold, and most text is ASCII
	}
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	out, _, err := transform.String(t, s)
	if err != nil {
		return s
	}
	return out
}

// TSQuery renders terms as a PostgreSQL tsquery for to_tsquery: each word quoted (words are
// letters and digits only, so quoting is exact), phrases joined with <->, prefixes with :*,
// & between terms and | for OR; & binds tighter than |, as AND does over OR in FTS5.
func TSQuery(terms []Term) string {
	var b strings.Builder
	for i, t := range terms {
		if t.Or {
			b.WriteString(" | ")
			continue
		}
		if i > 0 && !terms[i-1].Or {
			b.WriteString(" & ")
		}
		if len(t.Words) > 1 {
			b.WriteByte('(')
		}
		for j, w := range t.Words {
			if j > 0 {
				b.WriteString(" <-> ")
			}
			b.WriteByte('\'')
			b.WriteString(w)
			b.WriteByte('\'')
			if t.Prefix && j == len(t.Words)-1 {
				b.WriteString(":*")
			}
		}
		if len(t.Words) > 1 {
			b.WriteByte(')')
		}
	}
	return b.String()
}

// IndexText is the text a backend indexes for s: its words, folded, joined by spaces, so
// the engine's own tokenizer sees exactly the words a query can name (a URL or a path is
// its words, not one token).
func IndexText(s string, limit int) string {
	var b strings.Builder
	// Fold once for the whole text: a transformer per word costs more than the index.
	for _, w := range Words(Fold(s)) {
		if b.Len()+len(w)+1 > limit {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}
