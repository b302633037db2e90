package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"

	"github.com/relaydev/relay/internal/testsupport/realtext"
)

// corpus makes deterministic, realistic text documents: slices of this repository's own
// source and markdown files and synthetic daemon logs, in turn. Every document starts with
// a line naming its number, so no two are equal (the store deduplicates equal content).
type corpus struct {
	code, markdown []byte
	terms          []string    // mid-frequency words of the corpus, for one/two-term queries
	pairs          [][2]string // adjacent word pairs, for phrase queries
}

// loadCorpus reads root's .go/.ts/.py/.sh and .md files in path order.
func loadCorpus(root string) (*corpus, error) {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", ".cache", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".ts", ".py", ".sh", ".md":
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read corpus under %s: %w", root, err)
	}
	sort.Strings(paths)
	c := &corpus{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || len(b) > 1<<20 {
			continue
		}
		if filepath.Ext(p) == ".md" {
			c.markdown = append(c.markdown, b...)
			c.markdown = append(c.markdown, '\n')
		} else {
			c.code = append(c.code, b...)
			c.code = append(c.code, '\n')
		}
	}
	if len(c.code) < 1<<20 || len(c.markdown) < 32<<10 {
		return nil, fmt.Errorf("corpus under %s is too small (%d bytes of code, %d of markdown); pass -corpus with the repository root", root, len(c.code), len(c.markdown))
	}
	c.vocabulary()
	return c, nil
}

// vocabulary picks query words (realtext.Terms) and pairs of adjacent words of 4-20 letters.
func (c *corpus) vocabulary() {
	var prev string
	pairSeen := map[[2]string]bool{}
	for _, src := range [][]byte{c.code, c.markdown} {
		for _, w := range realtext.Words(string(src)) {
			if len(w) < 4 || len(w) > 20 {
				prev = ""
				continue
			}
			if prev != "" && prev != w && len(c.pairs) < 20000 {
				p := [2]string{prev, w}
				if !pairSeen[p] {
					pairSeen[p] = true
					c.pairs = append(c.pairs, p)
				}
			}
			prev = w
		}
	}
	c.terms = realtext.Terms(string(c.code), string(c.markdown))
}

// kind of document i: source code, markdown or a log.
func docKind(i int) string { return [...]string{"code", "markdown", "log"}[i%3] }

// doc returns document i of about size bytes, its name and its artifact type.
func (c *corpus) doc(i, size int) (name, typ string, body []byte) {
	rng := rand.New(rand.NewPCG(uint64(i), uint64(size)))
	var b bytes.Buffer
	b.Grow(size + 256)
	switch docKind(i) {
	case "code":
		fmt.Fprintf(&b, "// doc%07d: source excerpt\n", i)
		name, typ = fmt.Sprintf("doc%07d.go", i), "text"
		slice(&b, c.code, rng, size)
	case "markdown":
		fmt.Fprintf(&b, "<!-- doc%07d: notes -->\n", i)
		name, typ = fmt.Sprintf("doc%07d.md", i), "markdown"
		slice(&b, c.markdown, rng, size)
	default:
		fmt.Fprintf(&b, "# doc%07d: daemon log\n", i)
		name, typ = fmt.Sprintf("doc%07d.log", i), "tool_output"
		logLines(&b, rng, size)
	}
	return name, typ, b.Bytes()
}

// slice appends about size bytes of src from a random line start, wrapping around.
func slice(b *bytes.Buffer, src []byte, rng *rand.Rand, size int) {
	off := rng.IntN(len(src))
	if nl := bytes.IndexByte(src[off:], '\n'); nl >= 0 {
		off += nl + 1
	}
	for b.Len() < size {
		if off >= len(src) {
			off = 0
		}
		n := min(size-b.Len(), len(src)-off)
		b.Write(src[off : off+n])
		off += n
	}
}

var (
	logLevels = []string{"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"}
	logMsgs   = []string{"request served", "state patched", "artifact stored", "checkpoint done", "cache miss", "slow query", "client closed connection", "retrying after conflict", "capability invoked", "search ran"}
	logPaths  = []string{"/threads", "/threads/{id}/state/patch", "/threads/{id}/artifacts", "/cap/invoke", "/threads/{id}/state/header", "/health", "/threads/{id}/events/stream"}
	logUsers  = []string{"codex", "gemini", "claude", "qwen", "relay-cli", "sdk-python", "sdk-ts"}
)

// logLines appends slog-style daemon log lines up to size bytes.
func logLines(b *bytes.Buffer, rng *rand.Rand, size int) {
	t := int64(1795000000000) + rng.Int64N(1e9)
	for b.Len() < size {
		t += rng.Int64N(2000)
		sec, ms := t/1000, t%1000
		fmt.Fprintf(b, "time=%d.%03d level=%s msg=%q method=%s path=%s status=%d dur=%d.%02dms agent=%s req=%08x\n",
			sec, ms, logLevels[rng.IntN(len(logLevels))], logMsgs[rng.IntN(len(logMsgs))],
			[]string{"GET", "POST"}[rng.IntN(2)], logPaths[rng.IntN(len(logPaths))],
			[]int{200, 200, 200, 201, 404, 409, 500}[rng.IntN(7)], rng.IntN(40), rng.IntN(100),
			logUsers[rng.IntN(len(logUsers))], rng.Uint32())
	}
	b.Truncate(size)
}

// queries returns n deterministic queries of one kind: one, two, phrase, prefix, miss.
func (c *corpus) queries(kind string, n int) []string {
	rng := rand.New(rand.NewPCG(7, uint64(len(kind))))
	out := make([]string, n)
	for i := range out {
		w := c.terms[rng.IntN(len(c.terms))]
		switch kind {
		case "one":
			out[i] = w
		case "two":
			out[i] = w + " " + c.terms[rng.IntN(len(c.terms))]
		case "phrase":
			p := c.pairs[rng.IntN(len(c.pairs))]
			out[i] = `"` + p[0] + " " + p[1] + `"`
		case "prefix":
			out[i] = w[:4] + "*"
		case "miss":
			out[i] = fmt.Sprintf("zqxv%dwq", i)
		}
	}
	return out
}
