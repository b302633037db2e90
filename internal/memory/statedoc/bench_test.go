package statedoc

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// bigState returns a valid state document with n facts of about 100 bytes each plus a
// few items in every other list.
func bigState(tb testing.TB, n int) []byte {
	tb.Helper()
	var b strings.Builder
	b.WriteString(`{"$schema":"com.relay.state.v1","version":1,"thread_id":"7d0a4c1e-2b3f-4a5b-8c9d-0e1f2a3b4c5d","updated_at":"2026-11-22T00:00:00Z","facts":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"f%d","key":"module.%d.owner","value":"team-%d handles this \"part\"","at":"2026-11-21T10:00:00Z"}`, i, i, i%37)
	}
	b.WriteString(`],"constraints":[{"id":"c1","description":"never push to main","severity":"hard"}],` +
		`"open_questions":[{"id":"q1","question":"which db?","status":"open"}],"decisions":[],` +
		`"plan":[{"id":"p1","step":"write tests","status":"pending"}],"artifacts":[{"ref":"01J0","type":"markdown"}],` +
		`"last_actions":[{"description":"ran tests"}],"metrics":{"cache_hits":3,"tokens_avoided":4200}}`)
	doc := []byte(b.String())
	if err := Validate(doc); err != nil {
		tb.Fatal(err)
	}
	return doc
}

func BenchmarkHeader10kFacts(b *testing.B) {
	doc := bigState(b, 10000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Header(doc, Metrics{CacheHits: 5}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApplyPatch10kFacts(b *testing.B) {
	doc := bigState(b, 10000)
	patch := []byte(`[{"op":"add","path":"/facts/-","value":{"id":"new","key":"k","value":1}}]`)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ApplyPatch(doc, patch, 2, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApplyPatchSmallState(b *testing.B) {
	doc := bigState(b, 10)
	patch := []byte(`[{"op":"add","path":"/facts/-","value":{"id":"new","key":"k","value":1}}]`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ApplyPatch(doc, patch, 2, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate10kFacts(b *testing.B) {
	doc := bigState(b, 10000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Validate(doc); err != nil {
			b.Fatal(err)
		}
	}
}
