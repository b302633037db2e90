package memory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/jsonpatch"
	"github.com/relaydev/relay/internal/memory/sqlite"
	"github.com/relaydev/relay/internal/memory/statedoc"
)

// TestHeaderSincePatchRebuildsHeader checks the contract agents rely on: the header they hold
// at vN plus the delta is byte for byte the current header, at every distance, including past
// the point where the header's bounded lists start dropping their oldest items; and so when
// each step also searches (result lists the header leaves out, more of them than a header
// lists).
func TestHeaderSincePatchRebuildsHeader(t *testing.T) {
	for _, searches := range []int{0, 3} {
		t.Run(fmt.Sprintf("%d searches a step", searches), func(t *testing.T) { headerSinceRebuilds(t, searches) })
	}
}

func headerSinceRebuilds(t *testing.T, searches int) {
	s := openTest(t, t.TempDir())
	ctx := context.Background()
	th, err := s.CreateThread(ctx, CreateThreadParams{Name: "d"})
	if err != nil {
		t.Fatal(err)
	}
	headers := map[int][]byte{}
	h, _ := s.Header(ctx, th.ID)
	headers[h.Version] = h.JSON
	for i := 0; i < 14; i++ {
		// The agent loop: store a finding (listed in the header without a new version), then
		// patch the state.
		if _, err := s.PutArtifact(ctx, th.ID, PutArtifactParams{Name: fmt.Sprintf("step-%d.md", i), Content: []byte(fmt.Sprintf("finding %d", i))}); err != nil {
			t.Fatal(err)
		}
		for j := range searches {
			if _, err := s.PutArtifact(ctx, th.ID, PutArtifactParams{Name: "search-results.json", Type: TypeJSON, Content: fmt.Appendf(nil, `{"step":%d,"search":%d}`, i, j), Capability: SearchCapability}); err != nil {
				t.Fatal(err)
			}
		}
		p := fmt.Sprintf(`[{"op":"add","path":"/facts/-","value":{"id":"f%d","key":"k%d","value":%d}}]`, i, i, i)
		if _, err := s.PatchState(ctx, th.ID, []byte(p), 0, "t"); err != nil {
			t.Fatal(err)
		}
		h, err := s.Header(ctx, th.ID)
		if err != nil {
			t.Fatal(err)
		}
		headers[h.Version] = h.JSON
	}
	cur, _ := s.Header(ctx, th.ID)
	patches := 0
	for v, old := range headers {
		ch, err := HeaderSince(ctx, s, th.ID, v)
		if err != nil {
			t.Fatal(err)
		}
		if ch.Version != cur.Version {
			t.Fatalf("since v%d: version %d, want %d", v, ch.Version, cur.Version)
		}
		if ch.Delta == nil {
			if cur.Version-v <= 3 {
				t.Fatalf("since v%d (%d versions back): full header; a few facts must be a delta", v, cur.Version-v)
			}
			if !bytes.Equal(ch.Full, cur.JSON) {
				t.Fatalf("since v%d: full fallback is not the current header", v)
			}
			continue
		}
		patches++
		got, err := statedoc.ApplyHeaderDelta(old, ch.DeltaJSON())
		if err != nil {
			t.Fatalf("since v%d: delta %s does not apply: %v", v, ch.DeltaJSON(), err)
		}
		if !jsonEqual(t, got, cur.JSON) {
			t.Fatalf("since v%d: header+delta =\n%s\nwant\n%s", v, got, cur.JSON)
		}
		if len(ch.DeltaJSON()) > len(cur.JSON)+40 {
			t.Fatalf("since v%d: delta %d bytes is larger than the header (%d)", v, len(ch.DeltaJSON()), len(cur.JSON))
		}
		var body struct {
			Since, V int
		}
		if err := json.Unmarshal(ch.DeltaJSON(), &body); err != nil || body.Since != v || body.V != cur.Version {
			t.Fatalf("delta body %s: %v", ch.DeltaJSON(), err)
		}
	}
	if patches < 10 {
		t.Fatalf("only %d of %d versions got a patch", patches, len(headers))
	}
	one, err := HeaderSince(ctx, s, th.ID, cur.Version-1)
	if err != nil || one.Delta == nil || len(one.Delta) >= len(cur.JSON)/3 {
		t.Fatalf("one step back: %s (%v); want a small delta of %d-byte header\nheld: %s\nnow:  %s", one.Delta, err, len(cur.JSON), headers[cur.Version-1], cur.JSON)
	}
}

func TestHeaderSinceEdges(t *testing.T) {
	s := openTest(t, t.TempDir())
	ctx := context.Background()
	th, _ := s.CreateThread(ctx, CreateThreadParams{})
	if _, err := s.PatchState(ctx, th.ID, []byte(`[{"op":"add","path":"/facts/-","value":{"id":"a","key":"k","value":1}}]`), 0, ""); err != nil {
		t.Fatal(err)
	}
	cur, _ := s.Header(ctx, th.ID)
	same, err := HeaderSince(ctx, s, th.ID, cur.Version)
	if err != nil || string(same.DeltaJSON()) != fmt.Sprintf(`{"since":%d,"v":%d}`, cur.Version, cur.Version) {
		t.Fatalf("since the current version: %s, %v; want an empty delta", same.DeltaJSON(), err)
	}
	for _, v := range []int{0, -1, cur.Version + 1, 1 << 30} {
		ch, err := HeaderSince(ctx, s, th.ID, v)
		if err != nil || ch.Delta != nil || !bytes.Equal(ch.Full, cur.JSON) {
			t.Fatalf("since %d: %+v, %v; want the full header", v, ch, err)
		}
	}
	// A change that rewrites everything costs more as a patch: the full header comes back.
	var ops []string
	for i := 0; i < 10; i++ {
		ops = append(ops, fmt.Sprintf(`{"op":"add","path":"/facts/-","value":{"id":"x%d","key":"%s","value":%d}}`, i, strings.Repeat("k", 60), i))
	}
	if _, err := s.PatchState(ctx, th.ID, []byte("["+strings.Join(ops, ",")+"]"), 0, ""); err != nil {
		t.Fatal(err)
	}
	ch, err := HeaderSince(ctx, s, th.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if cur2, _ := s.Header(ctx, th.ID); ch.Delta != nil && len(ch.Delta) >= len(cur2.JSON) {
		t.Fatalf("delta %d bytes not smaller than the header", len(ch.Delta))
	}
	if _, err := HeaderSince(ctx, s, "00000000-0000-0000-0000-000000000000", 1); err == nil {
		t.Fatal("unknown thread: want an error")
	}
	_ = statedoc.MaxHeaderBytes
}

func openTest(t *testing.T, home string) *sqlite.SQLite {
	t.Helper()
	s, err := sqlite.OpenSQLite(home, sqlite.Options{Sync: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	va, err := jsonpatch.Decode(a)
	if err != nil {
		t.Fatal(err)
	}
	vb, err := jsonpatch.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return jsonpatch.Equal(va, vb)
}
