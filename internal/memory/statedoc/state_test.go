package statedoc

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// randomOp returns one JSON Patch operation against a state document; some are invalid on
// purpose (duplicate ids, bad enums, wrong types, out-of-range indexes).
func randomOp(rng *rand.Rand) string {
	list := Lists[rng.IntN(len(Lists))]
	idx := rng.IntN(6)
	item := func() string {
		id := fmt.Sprintf("x%d", rng.IntN(12))
		switch list {
		case "facts":
			return fmt.Sprintf(`{"id":%q,"key":"k","value":%d}`, id, rng.IntN(100))
		case "constraints":
			return fmt.Sprintf(`{"id":%q,"description":"d","severity":%q}`, id, []string{"hard", "soft", "medium"}[rng.IntN(3)])
		case "open_questions":
			return fmt.Sprintf(`{"id":%q,"question":"q","status":%q}`, id, []string{"open", "resolved", "", "closed"}[rng.IntN(4)])
		case "decisions":
			return fmt.Sprintf(`{"id":%q,"description":"d","confidence":%d}`, id, rng.IntN(2))
		case "plan":
			return fmt.Sprintf(`{"id":%q,"step":"s","status":%q}`, id, []string{"pending", "done", "skipped", "later"}[rng.IntN(4)])
		case "artifacts":
			return fmt.Sprintf(`{"ref":%q,"type":"text"}`, id)
		default:
			return `{"description":"did it"}`
		}
	}
	switch rng.IntN(9) {
	case 0, 1, 2:
		return fmt.Sprintf(`{"op":"add","path":"/%s/-","value":%s}`, list, item())
	case 3:
		return fmt.Sprintf(`{"op":"add","path":"/%s/%d","value":%s}`, list, idx, item())
	case 4:
		return fmt.Sprintf(`{"op":"remove","path":"/%s/%d"}`, list, idx)
	case 5:
		return fmt.Sprintf(`{"op":"replace","path":"/%s/%d","value":%s}`, list, idx, item())
	case 6:
		return fmt.Sprintf(`{"op":"move","from":"/%s/%d","path":"/%s/-"}`, list, idx, list)
	case 7:
		return fmt.Sprintf(`{"op":"copy","from":"/%s/%d","path":"/%s/0"}`, list, idx, list)
	default:
		return []string{
			`{"op":"replace","path":"/metrics/cache_hits","value":5}`,
			`{"op":"replace","path":"/facts","value":{}}`,
			`{"op":"test","path":"/version","value":1}`,
			`{"op":"add","path":"/notes","value":1}`,
			`{"op":"replace","path":"/facts/0/id","value":"x1"}`,
		}[rng.IntN(5)]
	}
}

// TestStateMatchesApplyPatch drives random patch sequences through State.Patch (persistent,
// incremental validation) and ApplyPatch (full decode and validation): they must accept the
// same patches and produce byte-identical documents and headers.
func TestStateMatchesApplyPatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	accepted, refused := 0, 0
	for seq := 0; seq < 60; seq++ {
		doc := NewAt("th", t0)
		st, err := Parse(doc)
		if err != nil {
			t.Fatal(err)
		}
		version := 1
		for step := 0; step < 60; step++ {
			ops := make([]string, 1+rng.IntN(3))
			for i := range ops {
				ops[i] = randomOp(rng)
			}
			patch := []byte("[" + strings.Join(ops, ",") + "]")
			at := t0.Add(time.Duration(step) * time.Second)
			want, werr := ApplyPatch(doc, patch, version+1, at)
			next, gerr := st.Patch(patch, version+1, at)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("seq %d step %d patch %s:\nApplyPatch error: %v\nState.Patch error: %v", seq, step, patch, werr, gerr)
			}
			if werr != nil {
				refused++
				continue
			}
			accepted++
			got, err := next.JSON()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("seq %d step %d patch %s:\nState.Patch %s\nApplyPatch  %s", seq, step, patch, got, want)
			}
			if old, _ := st.JSON(); !bytes.Equal(old, doc) {
				t.Fatalf("State.Patch changed the previous state")
			}
			hb, _, err := HeaderInfo(want, Metrics{CacheHits: 2})
			if err != nil {
				t.Fatal(err)
			}
			hv, _, err := next.Header(Metrics{CacheHits: 2})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(hb, hv) {
				t.Fatalf("headers differ:\nbytes %s\nvalue %s", hb, hv)
			}
			doc, st, version = want, next, version+1
		}
	}
	if accepted < 500 || refused < 500 {
		t.Errorf("weak mix: %d accepted, %d refused", accepted, refused)
	}
	t.Logf("%d patches accepted, %d refused, all identical", accepted, refused)
}

func TestStateAccessors(t *testing.T) {
	st, err := Parse(NewAt("th-9", t0))
	if err != nil {
		t.Fatal(err)
	}
	if st.Version() != 1 || st.ThreadID() != "th-9" {
		t.Errorf("version %d thread %q", st.Version(), st.ThreadID())
	}
	next, err := st.Patch([]byte(`[{"op":"test","path":"/thread_id","value":"th-9"}]`), 2, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if next.Version() != 2 || st.Version() != 1 {
		t.Errorf("a test-only patch: versions %d -> %d", st.Version(), next.Version())
	}
	if _, err := Parse([]byte(`{"facts":[]}`)); err == nil {
		t.Error("Parse accepted an invalid document")
	}
}

func BenchmarkStatePatch10kFacts(b *testing.B) {
	st, err := Parse(bigState(b, 10000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		p := fmt.Appendf(nil, `[{"op":"add","path":"/facts/-","value":{"id":"n%d","key":"k","value":1}}]`, i)
		if _, err := st.Patch(p, 2, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStatePatchChain10kFacts appends to the newest state each time, as the store
// does: the id counts pass from state to state, so the cost must not grow with the list.
func BenchmarkStatePatchChain10kFacts(b *testing.B) {
	st, err := Parse(bigState(b, 10000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		p := fmt.Appendf(nil, `[{"op":"add","path":"/facts/-","value":{"id":"n%d","key":"k","value":1}}]`, i)
		if st, err = st.Patch(p, i+1, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// TestStatePatchChainFindsDuplicates: along a chain of patches (id counts handed on), a
// duplicate id is refused with its position, a refused patch leaves the chain usable, and
// removing an item frees its id.
func TestStatePatchChainFindsDuplicates(t *testing.T) {
	st, err := Parse(bigState(t, 100))
	if err != nil {
		t.Fatal(err)
	}
	add := func(st *State, id string) (*State, error) {
		return st.Patch(fmt.Appendf(nil, `[{"op":"add","path":"/facts/-","value":{"id":%q,"key":"k","value":1}}]`, id), st.Version()+1, t0)
	}
	for i := range 50 {
		if st, err = add(st, fmt.Sprintf("n%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = add(st, "n7")
	if err == nil || !strings.Contains(err.Error(), `duplicate id "n7" (already at /facts/107`) {
		t.Fatalf("duplicate n7: %v", err)
	}
	if st, err = add(st, "n50"); err != nil { // the refused patch changed nothing
		t.Fatal(err)
	}
	if st, err = st.Patch([]byte(`[{"op":"remove","path":"/facts/107"}]`), st.Version()+1, t0); err != nil {
		t.Fatal(err)
	}
	if st, err = add(st, "n7"); err != nil {
		t.Fatalf("n7 after its removal: %v", err)
	}
	if _, err = add(st, "n7"); err == nil {
		t.Fatal("n7 twice accepted")
	}
}

func BenchmarkStateHeader10kFacts(b *testing.B) {
	st, err := Parse(bigState(b, 10000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := st.Header(Metrics{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestStateConcurrentUse shares one State between goroutines that read and patch it; run
// with -race (lookups on large objects must not build indexes lazily).
func TestStateConcurrentUse(t *testing.T) {
	st, err := Parse(bigState(t, 50))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := st.JSON()
	want = bytes.Clone(want)
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func() {
			var err error
			for i := 0; i < 50 && err == nil; i++ {
				switch i % 3 {
				case 0:
					_, _, err = st.Header(Metrics{})
				case 1:
					_, err = st.JSON()
				default:
					_, err = st.Patch(fmt.Appendf(nil, `[{"op":"add","path":"/facts/-","value":{"id":"g%d-%d","key":"k","value":1}}]`, g, i), 2, t0)
				}
			}
			done <- err
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	if got, _ := st.JSON(); !bytes.Equal(got, want) {
		t.Error("the shared state changed")
	}
}
