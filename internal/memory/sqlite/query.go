package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"slices"
	"strings"
	"sync"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/ftsquery"
	"github.com/relaydev/relay/internal/memory/ftstok"
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
	return buildMatch(terms), nil
}

func buildMatch(terms []ftsquery.Term) string {
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
	return strings.Join(out, " ")
}

// typeVocab is an in-memory FTS5 table of the artifact types (markdown, tool_output, …),
// tokenized as the index tokenizes its ty column, with the statement that matches words
// against it.
var typeVocab = sync.OnceValues(func() (*sql.Stmt, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	// One connection for the process: each connection to :memory: is a database of its own.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if _, err := db.Exec(`CREATE VIRTUAL TABLE types USING fts5(ty, ` + searchTokenizer + `)`); err != nil {
		db.Close()
		return nil, err
	}
	for _, t := range memory.ArtifactTypes {
		if _, err := db.Exec(`INSERT INTO types(ty) VALUES (?)`, t); err != nil {
			db.Close()
			return nil, err
		}
	}
	// Rewritten into a segment whose id is not 1: SQLite re-prepares FTS5's segment lookup
	// after a segid of 0 or 1 was bound to it (a plan that assumed the value), 80 -> 15 µs.
	if _, err := db.Exec(`INSERT INTO types(types) VALUES ('optimize')`); err != nil {
		db.Close()
		return nil, err
	}
	st, err := db.Prepare(`SELECT 1 FROM types WHERE types MATCH ? LIMIT 1`)
	if err != nil {
		db.Close()
		return nil, err
	}
	return st, nil
})

// namesTypeWord reports whether a word of the query (a prefix as a prefix) is, as the index
// stems and folds it, a word of an artifact type, or when that cannot be told. The index
// holds each artifact's type in its ty column (for the type filter), so only such a query
// needs the MATCH limited to {name body}, or "text" would find every text artifact by its
// type: the column filter costs a tenth of a search's CPU, extracting each match's
// positions in those columns. A word ftstok stems as the index does is matched against
// the types' stems in Go; any other word against the types with FTS5 itself, which keeps
// the answer exact for every stem and prefix (those answers are kept per word).
func namesTypeWord(ctx context.Context, terms []ftsquery.Term) bool {
	for _, t := range terms {
		for i, w := range t.Words {
			prefix := t.Prefix && i == len(t.Words)-1
			if yes, ok := isTypeWordGo(w, prefix); ok {
				if yes {
					return true
				}
				continue
			}
			q := `"` + w + `"`
			if prefix {
				q += "*"
			}
			if isTypeWord(ctx, q) {
				return true
			}
		}
	}
	return false
}

// typeWords caches isTypeWord's answers (cleared when full: the vocabulary of queries is
// unbounded, the cache is not).
var typeWords struct {
	mu sync.Mutex
	m  map[string]bool
}

const maxTypeWords = 10000

// typeStems are the artifact types' words as the index stems them (binary: "binari").
var typeStems = sync.OnceValue(func() [][]byte {
	var out [][]byte
	for _, t := range memory.ArtifactTypes {
		ftstok.Scan(t, func(_, _ int, tok []byte) { out = append(out, ftstok.Stem(slices.Clone(tok))) })
	}
	return out
})

// isTypeWordGo is isTypeWord for a query word (lower-cased by ftsquery) that ftstok stems
// as FTS5 does (ASCII letters and digits): the type table's query for each new word was a
// twentieth of the daemon's handler for an MCP search (perf), every search of a word not
// asked before paying it. ok is false for any other word.
func isTypeWordGo(w string, prefix bool) (yes, ok bool) {
	if !ftstok.IsWord(w) {
		return false, false
	}
	stem := ftstok.Stem([]byte(w))
	for _, t := range typeStems() {
		if bytes.Equal(t, stem) || prefix && bytes.HasPrefix(t, stem) {
			return true, true
		}
	}
	return false, true
}

// isTypeWord reports whether the FTS5 term q ("word" or "prefix"*) matches a word of an
// artifact type, or when that cannot be told.
func isTypeWord(ctx context.Context, q string) bool {
	typeWords.mu.Lock()
	yes, ok := typeWords.m[q]
	typeWords.mu.Unlock()
	if ok {
		return yes
	}
	st, err := typeVocab()
	if err != nil {
		return true
	}
	var one int
	// not cancelled with the search: a connection given up mid-query would take the
	// in-memory table with it
	switch err := st.QueryRowContext(context.WithoutCancel(ctx), q).Scan(&one); err {
	case nil:
		yes = true
	case sql.ErrNoRows:
		yes = false
	default:
		return true // not cached: the next search asks again
	}
	typeWords.mu.Lock()
	if len(typeWords.m) >= maxTypeWords || typeWords.m == nil {
		typeWords.m = map[string]bool{}
	}
	typeWords.m[q] = yes
	typeWords.mu.Unlock()
	return yes
}

// tokens splits text into the letter/digit runs the unicode61 tokenizer would index.
func tokens(s string) []string { return ftsquery.Words(s) }
