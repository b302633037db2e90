// Package realtext picks search terms from real text (the repository's sources and docs), so
// search benchmarks query what users' artifacts contain.
package realtext

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/relaydev/relay/internal/testsupport"
)

// Words splits text into lowercase words of letters.
func Words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) })
}

// Terms returns the mid-frequency words of texts: 4 to 20 letters, ranked by frequency
// (ties by the word), skipping the 50 most common (they match nearly every document) and
// keeping the next 2,000 — queries that find some documents but not most.
func Terms(texts ...string) []string {
	count := map[string]int{}
	for _, t := range texts {
		for _, w := range Words(t) {
			if len(w) >= 4 && len(w) <= 20 {
				count[w]++
			}
		}
	}
	words := make([]string, 0, len(count))
	for w := range count {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool {
		if count[words[i]] != count[words[j]] {
			return count[words[i]] > count[words[j]]
		}
		return words[i] < words[j]
	})
	return words[min(50, len(words)):min(2050, len(words))]
}

// ModuleText is this module's Go and Markdown text, in path order (deterministic for a
// commit): at least 1 MB of what users store (source and docs), for benchmarks.
func ModuleText(tb testing.TB) string {
	tb.Helper()
	var sb strings.Builder
	err := filepath.WalkDir(testsupport.RepoRoot(tb), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == ".cache") {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(p); !d.IsDir() && (ext == ".go" || ext == ".md") {
			body, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sb.Write(body)
			sb.WriteByte('\n')
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if sb.Len() < 1<<20 {
		tb.Fatalf("only %d bytes of text under the module root", sb.Len())
	}
	return sb.String()
}

// Files is the files matching pattern (a filepath.Glob pattern, e.g. "*.go": the calling
// package's own source) concatenated in name order; it fails tb when they hold fewer than
// minBytes.
func Files(tb testing.TB, pattern string, minBytes int) []byte {
	tb.Helper()
	names, err := filepath.Glob(pattern)
	if err != nil {
		tb.Fatal(err)
	}
	var text []byte
	for _, name := range names {
		body, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		text = append(text, body...)
	}
	if len(text) < minBytes {
		tb.Fatalf("only %d bytes of text in %s, want %d", len(text), pattern, minBytes)
	}
	return text
}
