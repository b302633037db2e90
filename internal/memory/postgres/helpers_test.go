package postgres_test

import (
	"testing"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/memory/postgres"
	"github.com/relaydev/relay/internal/memory/storetest"
	"github.com/relaydev/relay/internal/testsupport/pgtest"
)

func searchQuery(q string, types []string) memory.SearchQuery {
	return memory.SearchQuery{Query: q, Types: types}
}

// The same conformance suite as the SQLite store, on PostgreSQL.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) memory.Store {
		return open(t, pgtest.New(t), postgres.Options{})
	})
}

// The conformance tests of artifact bodies with the bodies in a directory store (as
// --artifacts file:///dir), so puts and imports stream them there.
func TestConformanceWithBucket(t *testing.T) {
	storetest.RunOnly(t, func(t *testing.T) memory.Store {
		bs, err := blob.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return open(t, pgtest.New(t), postgres.Options{Blobs: bs})
	}, storetest.Bodies...)
}
