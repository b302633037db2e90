// Package search is the built-in retrieval.search capability: full-text search over a
// thread's artifacts through the store's Searcher (ranked, with highlighted snippets), the
// full result list stored as an artifact and a short preview returned inline.
package search

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/plugin"
)

// Name is the capability name.
const Name = memory.SearchCapability

// Aliases keep the capability's vocabulary; search itself is the store's (memory.Searcher).
type (
	Query = memory.SearchQuery
	Hit   = memory.SearchHit
)

// ArgsSchema is the retrieval.search argument schema.
const ArgsSchema = `{
  "type": "object",
  "required": ["query"],
  "additionalProperties": false,
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 512,
              "description": "words (all must match), \"a phrase\", prefix*, OR"},
    "type":  {"description": "only artifacts of this type (or any of these types)",
              "oneOf": [{"type": "string", "enum": ["markdown","json","html","text","binary","tool_output","email"]},
                        {"type": "array", "items": {"type": "string", "enum": ["markdown","json","html","text","binary","tool_output","email"]}, "maxItems": 7}]},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10}
  }
}`

// previewResults bounds how many hits go into the preview; the artifact has them all.
const previewResults = 5

// Capability returns retrieval.search over the store's index.
func Capability(db memory.Searcher) (plugin.Capability, plugin.Handler) {
	c := plugin.Capability{
		Name:        Name,
		Description: "Full-text search over the thread's artifacts (bm25 ranking, highlighted snippets)",
		ArgsSchema:  json.RawMessage(ArgsSchema),
		Cacheable:   true,
		CacheTTL:    60e9,
		// the thread's index sequence: an artifact put since the cached search makes it stale
		CacheScope: db.SearchScope,
	}
	h := func(ctx context.Context, req *plugin.InvokeRequest) (*plugin.InvokeResult, error) {
		var args struct {
			Query string          `json:"query"`
			Type  json.RawMessage `json:"type"`
			Limit int             `json:"limit"`
		}
		if err := json.Unmarshal(req.Args, &args); err != nil {
			return nil, err
		}
		q := Query{Query: args.Query, Limit: args.Limit}
		if len(args.Type) > 0 {
			var one string
			if json.Unmarshal(args.Type, &one) == nil {
				q.Types = []string{one}
			} else if err := json.Unmarshal(args.Type, &q.Types); err != nil {
				return nil, err
			}
		}
		hits, err := db.Search(ctx, req.ThreadID, q)
		if err != nil {
			return nil, err
		}
		if err := nameHits(ctx, db, hits); err != nil {
			return nil, err
		}
		full, _ := json.MarshalIndent(map[string]any{"query": args.Query, "count": len(hits), "results": hits}, "", "  ")
		// The result list can be recomputed: stored without waiting for the disk (memory.Deferred).
		ref, err := req.Artifacts.PutArtifact(memory.Deferred(ctx), plugin.NewArtifact{Name: "search-results.json", Type: memory.TypeJSON, Content: full})
		if err != nil {
			return nil, fmt.Errorf("store search results: %w", err)
		}
		return plugin.Result(ref, Preview(hits))
	}
	return c, h
}

// nameHits writes the hits' refs as relay shows them (the searcher returns full refs).
func nameHits(ctx context.Context, db memory.Searcher, hits []Hit) error {
	var shared memory.SharedShortsFunc
	if ss, ok := db.(interface {
		SharedShorts(context.Context, []string) (map[string]bool, error)
	}); ok {
		shared = ss.SharedShorts
	}
	refs := make([]string, len(hits))
	for i, h := range hits {
		refs[i] = h.Ref
	}
	name, err := memory.Names(ctx, shared, refs)
	if err != nil {
		return err
	}
	for i := range hits {
		hits[i].Ref = name(hits[i].Ref)
	}
	return nil
}

// Preview is the bounded summary returned inline: count plus the top hits with short snippets.
func Preview(hits []Hit) map[string]any {
	top := hits
	if len(top) > previewResults {
		top = top[:previewResults]
	}
	short := make([]Hit, len(top))
	for i, h := range top {
		h.Snippet = plugin.Head(h.Snippet, 240)
		h.Name = plugin.Head(h.Name, 120)
		short[i] = h
	}
	return map[string]any{"count": len(hits), "results": short}
}
