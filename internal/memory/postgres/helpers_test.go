package postgres_test

import "github.com/relaydev/relay/internal/memory/capability/search"

func searchQuery(q string, types []string) search.Query {
	return search.Query{Query: q, Types: types}
}
