package mcp

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkHeaderCall is the protocol layer alone: one memory op=header tool
// call through the SDK client and server over an in-memory pipe, with the
// daemon replaced by a fake (bench/mcp measures the real process and daemon).
func BenchmarkHeaderCall(b *testing.B) {
	t := &testing.T{}
	h := start(t, Jobs{})
	ctx := context.Background()
	params := &sdk.CallToolParams{Name: "read", Arguments: map[string]any{"op": "header"}}
	b.ReportAllocs()
	for b.Loop() {
		res, err := h.session.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
