// Package plugin is the public API for adding capabilities to relay.
//
// A capability is a named tool that agents invoke through the daemon
// (POST /cap/invoke). Its arguments are validated against ArgsSchema before
// the handler runs. The handler stores its full result as an artifact and
// returns only a small preview plus the artifact ref, so agents pass the ref
// around instead of the content.
//
// A minimal capability:
//
//	cap := plugin.Capability{
//		Name:        "text.upper",
//		Description: "Upper-cases a string",
//		ArgsSchema:  json.RawMessage(`{"type":"object","required":["input"],"properties":{"input":{"type":"string","maxLength":10000}}}`),
//		Cacheable:   true,
//		CacheTTL:    5 * time.Minute,
//	}
//	handler := func(ctx context.Context, req *plugin.InvokeRequest) (*plugin.InvokeResult, error) {
//		var args struct{ Input string `json:"input"` }
//		if err := json.Unmarshal(req.Args, &args); err != nil {
//			return nil, err
//		}
//		out := strings.ToUpper(args.Input)
//		ref, err := req.Artifacts.PutArtifact(ctx, plugin.NewArtifact{Name: "upper.txt", Type: "text", Content: []byte(out)})
//		if err != nil {
//			return nil, err
//		}
//		return plugin.Result(ref, map[string]any{"length": len(out), "head": plugin.Head(out, 80)})
//	}
//	err := registry.Register(cap, handler)
package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// MaxPreviewBytes bounds the preview a handler returns; the registry refuses larger ones
// because previews are what goes into prompts.
const MaxPreviewBytes = 4096

// Capability describes one invokable tool.
type Capability struct {
	// Name is dotted and lowercase, e.g. "retrieval.search".
	Name        string
	Description string
	// ArgsSchema is a JSON Schema (draft 2020-12 unless $schema says otherwise).
	ArgsSchema json.RawMessage
	// Cacheable results are reused for CacheTTL for the same normalized args in the same thread.
	Cacheable bool
	CacheTTL  time.Duration
	// CacheScope, when set, names what a result depends on besides its args (e.g. an index
	// generation); a new scope misses the cache, so a change is seen before the TTL ends.
	CacheScope func(ctx context.Context, threadID string) (string, error)
}

// NewArtifact is content a handler wants stored.
type NewArtifact struct {
	Name string
	// Type is one of markdown, json, html, text, binary, tool_output, email.
	Type    string
	Mime    string
	Content []byte
	// SourceRefs lists artifacts the content was derived from (provenance).
	SourceRefs []string
}

// ArtifactStore stores artifacts in the thread the capability runs in.
// relay records the capability name as the artifact's provenance.
type ArtifactStore interface {
	PutArtifact(ctx context.Context, a NewArtifact) (ref string, err error)
}

// InvokeRequest is what a handler receives.
type InvokeRequest struct {
	Capability string
	ThreadID   string
	// Args has already been validated against the capability's ArgsSchema.
	Args json.RawMessage
	// Artifacts is scoped to ThreadID.
	Artifacts ArtifactStore
}

// InvokeResult is a small preview plus the ref of the full result.
type InvokeResult struct {
	Preview     json.RawMessage `json:"preview"`
	ArtifactRef string          `json:"artifact_ref"`
}

// Handler runs a capability. Returning an error fails the call; nothing is cached.
type Handler func(ctx context.Context, req *InvokeRequest) (*InvokeResult, error)

// Result builds an InvokeResult from a ref and a JSON-marshalable preview.
func Result(ref string, preview any) (*InvokeResult, error) {
	b, err := json.Marshal(preview)
	if err != nil {
		return nil, fmt.Errorf("marshal preview: %w", err)
	}
	return &InvokeResult{Preview: b, ArtifactRef: ref}, nil
}

// Head returns at most n bytes of s, cut on a rune boundary.
func Head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
