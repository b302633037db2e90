package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/memory"
)

// benchIndex fills a store's search index (only the index) with n ~2 KB docs of
// Zipf-distributed words.
func benchIndex(b *testing.B, n int) (*SQLite, []string) {
	b.Helper()
	db, err := OpenSQLite(b.TempDir(), Options{Sync: "normal"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	rng := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 20000)
	for i := range words {
		words[i] = fmt.Sprintf("w%dx", i)
	}
	z := rand.NewZipf(rng, 1.1, 2, uint64(len(words)-1))
	err = db.WriteTx(context.Background(), func(tx *sql.Tx) error {
		for i := range n {
			var sb strings.Builder
			for sb.Len() < 2000 {
				sb.WriteString(words[z.Uint64()])
				sb.WriteByte(' ')
			}
			if err := db.indexRow(context.Background(), tx, "550e8400-e29b-41d4-a716-446655440000", fmt.Sprintf("%026x", i), "text", fmt.Sprintf("doc%d", i), []byte(sb.String())); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return db, words
}

// BenchmarkSearchTop10 is a bm25 top-10 query over 20,000 ~2 KB docs; terms are drawn from
// ranks 100..2000 of the Zipf vocabulary (informative words, not stop-word-like ones).
func BenchmarkSearchTop10(b *testing.B) {
	db, words := benchIndex(b, 20000)
	rng := rand.New(rand.NewPCG(3, 4))
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		q := words[100+rng.IntN(1900)]
		if _, err := db.Search(ctx, "550e8400-e29b-41d4-a716-446655440000", memory.SearchQuery{Query: q, Limit: 10}); err != nil {
			b.Fatal(err)
		}
	}
}
