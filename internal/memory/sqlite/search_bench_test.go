package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/memory"
)

// benchIndex puts n ~2 KB docs of Zipf-distributed words into one thread and waits for
// the indexer to take them all.
func benchIndex(b *testing.B, n int) (*SQLite, string, []string) {
	b.Helper()
	db, err := OpenSQLite(b.TempDir(), Options{Sync: "normal"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	ctx := context.Background()
	th, err := db.CreateThread(ctx, memory.CreateThreadParams{})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 20000)
	for i := range words {
		words[i] = fmt.Sprintf("w%dx", i)
	}
	z := rand.NewZipf(rng, 1.1, 2, uint64(len(words)-1))
	for i := range n {
		var sb strings.Builder
		fmt.Fprintf(&sb, "doc%d ", i)
		for sb.Len() < 2000 {
			sb.WriteString(words[z.Uint64()])
			sb.WriteByte(' ')
		}
		if _, err := db.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: fmt.Sprintf("doc%d", i), Type: "text", Content: []byte(sb.String())}); err != nil {
			b.Fatal(err)
		}
	}
	for { // waitIndexed gives up after searchWait; a bench must start on a full index
		if err := db.waitIndexed(ctx, th.ID); err != nil {
			b.Fatal(err)
		}
		if n, err := db.IndexPending(ctx); err != nil || n == 0 {
			break
		}
	}
	return db, th.ID, words
}

// BenchmarkSearchTop10 is a bm25 top-10 query over 20,000 ~2 KB docs; terms are drawn from
// ranks 100..2000 of the Zipf vocabulary (informative words, not stop-word-like ones).
func BenchmarkSearchTop10(b *testing.B) {
	db, tid, words := benchIndex(b, 20000)
	rng := rand.New(rand.NewPCG(3, 4))
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		q := words[100+rng.IntN(1900)]
		if _, err := db.Search(ctx, tid, memory.SearchQuery{Query: q, Limit: 10}); err != nil {
			b.Fatal(err)
		}
	}
}
