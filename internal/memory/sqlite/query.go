package sqlite

import (
	"strings"

	"github.com/relaydev/relay/internal/memory/ftsquery"
)

// MinPrefix is the shortest prefix searched as a prefix (the FTS5 prefix index covers 3 and 4).
const MinPrefix = ftsquery.MinPrefix

// MaxQueryLen bounds the query so a hostile one cannot make FTS5 do unbounded work.
const MaxQueryLen = ftsquery.MaxQueryLen

// ErrEmptyQuery is returned when a query has no searchable terms.
var ErrEmptyQuery = ftsquery.ErrEmptyQuery

// BuildMatch turns a user query into a safe FTS5 MATCH expression: the terms of the shared
// search syntax (package ftsquery, which the PostgreSQL store renders as a tsquery), each
// phrase quoted, so user input can never be an FTS5 syntax error.
func BuildMatch(q string) (string, error) {
	terms, err := ftsquery.Parse(q)
	if err != nil {
		return "", err
	}
	out := make([]string, len(terms))
	for i, t := range terms {
		if t.Or {
			out[i] = "OR"
			continue
		}
		out[i] = `"` + strings.Join(t.Words, " ") + `"`
		if t.Prefix {
			out[i] += "*"
		}
	}
	return strings.Join(out, " "), nil
}

// tokens splits text into the letter/digit runs the unicode61 tokenizer would index.
func tokens(s string) []string { return ftsquery.Words(s) }
