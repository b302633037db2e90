package sqlite

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MinPrefix is the shortest prefix searched as a prefix (the FTS5 prefix index covers 3 and 4).
const MinPrefix = 3

// MaxQueryLen bounds the query so a hostile one cannot make FTS5 do unbounded work.
const MaxQueryLen = 512

// ErrEmptyQuery is returned when a query has no searchable terms.
var ErrEmptyQuery = errors.New("the query has no searchable words; pass words, \"a phrase\" or a prefix like rel*")

// BuildMatch turns a user query into a safe FTS5 MATCH expression.
//
// Supported: words (all must match), "quoted phrases", prefixes (word*), and OR between
// terms. Everything else is treated as text, so user input can never be an FTS5 syntax error.
func BuildMatch(q string) (string, error) {
	if len(q) > MaxQueryLen {
		return "", errors.New("the query is longer than 512 bytes; shorten it")
	}
	var terms []string
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
			words := tokens(string(rs[i+1 : min(j, len(rs))]))
			i = j + 1
			if len(words) > 0 {
				terms = append(terms, `"`+strings.Join(words, " ")+`"`)
			}
		default:
			j := i
			for j < len(rs) && !unicode.IsSpace(rs[j]) && rs[j] != '"' {
				j++
			}
			word := string(rs[i:j])
			i = j
			if word == "OR" {
				if len(terms) > 0 && terms[len(terms)-1] != "OR" {
					terms = append(terms, "OR")
				}
				continue
			}
			prefix := strings.HasSuffix(word, "*")
			ws := tokens(word)
			if len(ws) == 0 {
				continue
			}
			t := `"` + strings.Join(ws, " ") + `"`
			// Prefixes under MinPrefix runes would merge the doclists of thousands of terms
			// (seconds per query); they match as whole words instead.
			if prefix && utf8.RuneCountInString(ws[len(ws)-1]) >= MinPrefix {
				t += "*"
			}
			terms = append(terms, t)
		}
	}
	for len(terms) > 0 && terms[len(terms)-1] == "OR" {
		terms = terms[:len(terms)-1]
	}
	if len(terms) == 0 {
		return "", ErrEmptyQuery
	}
	return strings.Join(terms, " "), nil
}

// tokens splits text into the letter/digit runs the unicode61 tokenizer would index.
func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r)
	})
}
