package jsonpatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// factDoc returns a state-like document with n facts of about 100 bytes each.
func factDoc(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"$schema":"com.relay.state.v1","version":1,"thread_id":"t","facts":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"f%d","key":"module.%d.owner","value":"team-%d handles this \"part\"","at":"2026-11-21T10:00:00Z"}`, i, i, i%37)
	}
	b.WriteString(`],"plan":[{"id":"p1","step":"s","status":"pending"}],"metrics":{"cache_hits":3}}`)
	return []byte(b.String())
}

func benchApply(b *testing.B, n int, patch string) {
	doc := factDoc(n)
	p := []byte(patch)
	if _, err := Apply(doc, p); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Apply(doc, p); err != nil {
			b.Fatal(err)
		}
	}
}

const threeOps = `[{"op":"add","path":"/facts/-","value":{"id":"new","key":"k","value":1}},` +
	`{"op":"replace","path":"/plan/0/status","value":"done"},{"op":"test","path":"/version","value":1}]`

func BenchmarkApply10Facts(b *testing.B)  { benchApply(b, 10, threeOps) }
func BenchmarkApply1kFacts(b *testing.B)  { benchApply(b, 1000, threeOps) }
func BenchmarkApply10kFacts(b *testing.B) { benchApply(b, 10000, threeOps) }
func BenchmarkApply10kMoveFirst(b *testing.B) {
	benchApply(b, 10000, `[{"op":"move","from":"/facts/0","path":"/facts/-"}]`)
}

// BenchmarkApplyTo10kFacts measures applying to an already decoded document, the cost
// left once a caller keeps the decoded state.
func BenchmarkApplyTo10kFacts(b *testing.B) {
	v, err := Decode(factDoc(10000))
	if err != nil {
		b.Fatal(err)
	}
	p, err := DecodePatch([]byte(`[{"op":"replace","path":"/facts/5000/value","value":2},{"op":"test","path":"/facts/9999/id","value":"f9999"}]`))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.ApplyTo(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode10kFacts(b *testing.B) {
	doc := factDoc(10000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode10kFacts(b *testing.B) {
	doc := factDoc(10000)
	v, _ := Decode(doc)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	buf := make([]byte, 0, len(doc))
	for b.Loop() {
		var err error
		if buf, err = AppendJSON(buf[:0], v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDiff10kFactsOneChange(b *testing.B) {
	a := factDoc(10000)
	c, err := Apply(a, []byte(`[{"op":"remove","path":"/facts/17"},{"op":"add","path":"/facts/-","value":{"id":"x"}}]`))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(a) + len(c)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Diff(a, c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdlibDecode10kFacts is the encoding/json baseline (UseNumber, map objects).
func BenchmarkStdlibDecode10kFacts(b *testing.B) {
	doc := factDoc(10000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			b.Fatal(err)
		}
	}
}
