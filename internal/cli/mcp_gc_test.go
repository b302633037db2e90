package cli

import (
	"runtime/debug"
	"testing"
)

// TestCollectLess: relay mcp collects less often than Go's default unless GOGC says otherwise.
func TestCollectLess(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	collectLess(func(k string) string { return map[string]string{"GOGC": "50"}[k] })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("with GOGC=50 set, the collector's target became %d (want it left alone)", got)
	}
	collectLess(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != mcpGCPercent {
		t.Fatalf("without GOGC, the collector's target is %d (want %d)", got, mcpGCPercent)
	}
}
