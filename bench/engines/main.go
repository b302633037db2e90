// Command engines times the SQLite engines a Go program can embed on the two statements
// that bound relay's memory: a search (FTS5 bm25 over 10,000 ~2 KB documents of this
// repository's text, ranked as the store ranks: the newest 1,000 matches, best 10) and a
// state patch's transaction (an event, a version row, the thread's counters, one commit).
// It isolates the engine: no HTTP, no JSON, one connection. README.md gives the build line
// of each engine (one binary per engine: build tags choose it).
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"
)

const (
	docs      = 10000
	docBytes  = 2000
	queries   = 1000
	patches   = 5000
	maxRanked = 1000 // the store ranks at most the newest 1,000 matches of a query
)

func main() {
	root := flag.String("corpus", "../..", "repository whose .go and .md files make the documents")
	flag.Parse()
	dir, err := os.MkdirTemp("", "relay-engines-")
	check(err)
	defer os.RemoveAll(dir)
	text := corpus(*root)
	if len(text) < 1<<20 {
		check(fmt.Errorf("corpus under %s has %d bytes of text; pass -corpus with the repository root", *root, len(text)))
	}
	search(filepath.Join(dir, "search.db"), text)
	for _, sync := range []string{"NORMAL", "FULL"} {
		patch(filepath.Join(dir, "patch-"+sync+".db"), sync)
	}
}

// openDB opens the engine's database at path with one connection, as the store's writer has.
func openDB(path, sync string) (*sql.DB, error) {
	db, err := openEngine(path, sync)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "engines:", err)
		os.Exit(1)
	}
}

// cpu is the process's user and system CPU time.
func cpu() time.Duration {
	var ru syscall.Rusage
	check(syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func corpus(root string) string {
	var b strings.Builder
	check(filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".md") {
			x, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(x)
		}
		return nil
	}))
	return strings.ToValidUTF8(b.String(), "")
}

func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) })
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// search loads the documents into FTS5 as the store's index is set up, then times one
// term, two terms and a phrase, queries words found in 1-15 % of the documents.
func search(path, text string) {
	db, err := openDB(path, "NORMAL")
	check(err)
	defer db.Close()
	body := make([]string, docs)
	for i := range body {
		off := (i * 7919 * 2048) % (len(text) - docBytes)
		body[i] = fmt.Sprintf("doc%05d\n", i) + text[off:off+docBytes]
	}
	_, err = db.Exec(`CREATE VIRTUAL TABLE fts USING fts5(name, body, ty, tokenize = 'porter unicode61 remove_diacritics 2', prefix = '3 4')`)
	check(err)
	tx, err := db.Begin()
	check(err)
	for i, d := range body {
		_, err := tx.Exec(`INSERT INTO fts(rowid, name, body, ty) VALUES (?, ?, ?, 'markdown')`, i+1, fmt.Sprintf("doc%05d.md", i), d)
		check(err)
	}
	check(tx.Commit())
	_, err = db.Exec(`INSERT INTO fts(fts) VALUES ('optimize')`)
	check(err)

	df := map[string]int{}
	for _, d := range body {
		seen := map[string]bool{}
		for _, w := range words(strings.ToLower(d)) {
			if len(w) >= 4 && !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	var mid []string
	for w, n := range df {
		if n >= docs/100 && n <= docs*15/100 {
			mid = append(mid, w)
		}
	}
	slices.Sort(mid)
	st, err := db.Prepare(`SELECT rowid, score FROM (
		SELECT rowid, bm25(fts, 2.0, 1.0, 0.0) AS score FROM fts WHERE fts MATCH ? ORDER BY rowid DESC LIMIT ?)
		ORDER BY score, rowid LIMIT 10`)
	check(err)
	defer st.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, kind := range []string{"one", "two", "phrase"} {
		ds := make([]time.Duration, 0, queries)
		c0 := cpu()
		for range queries {
			q := mid[rng.IntN(len(mid))]
			switch kind {
			case "two":
				q += " " + mid[rng.IntN(len(mid))]
			case "phrase":
				f := words(body[rng.IntN(len(body))])
				j := rng.IntN(len(f) - 1)
				q = `"` + f[j] + " " + f[j+1] + `"`
			}
			t := time.Now()
			rows, err := st.Query(q, maxRanked)
			check(err)
			for rows.Next() {
				var id int64
				var score float64
				check(rows.Scan(&id, &score))
			}
			check(rows.Err())
			rows.Close()
			ds = append(ds, time.Since(t))
		}
		fmt.Printf("%-8s search %-6s at 10k docs: p50 %8v  p99 %8v  CPU/query %8v\n", engine, kind,
			pct(ds, 50).Round(time.Microsecond), pct(ds, 99).Round(time.Microsecond), ((cpu() - c0) / queries).Round(time.Microsecond))
	}
}

// patch times state patches' transactions, each as the store writes one: BEGIN, an
// event, a version row, the thread's counters, COMMIT (synchronous FULL: fsynced).
func patch(path, sync string) {
	db, err := openDB(path, sync)
	check(err)
	defer db.Close()
	for _, s := range []string{
		`CREATE TABLE threads(id TEXT PRIMARY KEY, version INTEGER, event_count INTEGER, last_event_id INTEGER, updated_at TEXT)`,
		`CREATE TABLE events(id INTEGER PRIMARY KEY AUTOINCREMENT, thread_id TEXT, type TEXT, at TEXT, data BLOB)`,
		`CREATE INDEX events_thread ON events(thread_id, id)`,
		`CREATE TABLE state_versions(thread_id TEXT, version INTEGER, patch BLOB, author TEXT, created_at TEXT, event_id INTEGER, PRIMARY KEY(thread_id, version))`,
		`INSERT INTO threads VALUES ('t1', 0, 0, 0, '')`,
	} {
		_, err := db.Exec(s)
		check(err)
	}
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	check(err)
	defer conn.Close()
	prep := func(q string) *sql.Stmt {
		st, err := conn.PrepareContext(ctx, q)
		check(err)
		return st
	}
	event := prep(`INSERT INTO events(thread_id, type, at, data) VALUES (?, ?, ?, ?)`)
	version := prep(`INSERT INTO state_versions(thread_id, version, patch, author, created_at, event_id) VALUES (?, ?, ?, ?, ?, ?)`)
	counters := prep(`UPDATE threads SET version = ?, event_count = event_count + 1, last_event_id = ?, updated_at = ? WHERE id = ? AND version = ?`)
	ds := make([]time.Duration, 0, patches)
	c0, start := cpu(), time.Now()
	for v := 1; v <= patches; v++ {
		t := time.Now()
		_, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		check(err)
		at := time.Now().UTC().Format(time.RFC3339Nano)
		r, err := event.Exec("t1", "state.patched", at, fmt.Appendf(nil, `{"version":%d,"ops":1,"author":"bench"}`, v))
		check(err)
		ev, err := r.LastInsertId()
		check(err)
		_, err = version.Exec("t1", v, fmt.Appendf(nil, `[{"op":"add","path":"/facts/-","value":"fact %d about the build"}]`, v), "bench", at, ev)
		check(err)
		_, err = counters.Exec(v, ev, at, "t1", v-1)
		check(err)
		_, err = conn.ExecContext(ctx, "COMMIT")
		check(err)
		ds = append(ds, time.Since(t))
	}
	el := time.Since(start)
	fmt.Printf("%-8s patch  sync=%-6s: %5.0f/s  p50 %8v  p99 %8v  CPU/patch %8v\n", engine, sync, patches/el.Seconds(),
		pct(ds, 50).Round(time.Microsecond), pct(ds, 99).Round(time.Microsecond), ((cpu() - c0) / patches).Round(time.Microsecond))
}
