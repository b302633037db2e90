package postgres

import (
	"fmt"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/memory"
)

// TestShortExprIsShort: the SQL form of a ref's short form, and the index on it, is the
// ref relay shows, for the ref lengths the memory package defines.
func TestShortExprIsShort(t *testing.T) {
	want := fmt.Sprintf("substr(ref, %d)", memory.RefLen-memory.ShortRefLen+1)
	var index string
	for _, m := range migrations {
		if strings.Contains(m.sql, "artifacts_short") {
			index = m.sql
		}
	}
	if shortExpr != want || !strings.Contains(index, "artifacts ("+shortExpr+")") {
		t.Fatalf("shortExpr %q, the index %q; want %q", shortExpr, index, want)
	}
}
