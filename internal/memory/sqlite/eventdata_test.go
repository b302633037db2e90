package sqlite

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/relaydev/relay/internal/memory"
)

// FuzzPatchedEventData: the hand-built state.patched data is what json.Marshal made of
// the map before, for any author, version and operation count.
func FuzzPatchedEventData(f *testing.F) {
	for _, a := range []string{"", "agent", `a "quoted" <b>&amp;</b>`, "tab\there\nnewline", "\u2028\u2029 ünï", "\xff\xfe bad utf-8", "\x00\x1f"} {
		f.Add(a, 7, 1)
	}
	f.Add("x", math.MaxInt, 0) // a version past 32 bits on 64-bit platforms
	f.Fuzz(func(t *testing.T, author string, v, nops int) {
		want, err := json.Marshal(map[string]any{"version": v, "state_ref": memory.StateRef(v), "ops": nops, "author": author})
		if err != nil {
			t.Fatal(err)
		}
		if got := patchedEventData(v, nops, author); !bytes.Equal(got, want) {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
}
