package postgres_test

import (
	"testing"

	"github.com/relaydev/relay/internal/memory"
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
