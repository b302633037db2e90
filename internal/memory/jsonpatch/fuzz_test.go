package jsonpatch

import (
	"bytes"
	"encoding/json"
	"github.com/relaydev/relay/internal/testsupport/corpus"
	"strings"
	"testing"
	"unicode/utf8"
)

func addCorpusSeeds(f *testing.F, add func(doc, patch []byte)) {
	dir := corpus.Find("corpus/json-patch")
	if dir == "" {
		return
	}
	for _, file := range []string{"tests.json", "spec_tests.json"} {
		var cases []corpusCase
		data, err := readFile(dir, file)
		if err != nil || json.Unmarshal(data, &cases) != nil {
			continue
		}
		for _, c := range cases {
			add(c.Doc, c.Patch)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e-3,"x\u00e9\n",true,false,null]}`, `"\ud83d\ude00"`, `{"a":1,"a":2}`, `[[[]]]`, `-0.0E+1`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	addCorpusSeeds(f, func(doc, patch []byte) { f.Add(doc); f.Add(patch) })
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		if err != nil {
			// Differential check: whatever encoding/json accepts as valid UTF-8 JSON we accept,
			// except duplicate member names (refused on purpose) and excessive nesting.
			if json.Valid(data) && utf8.Valid(data) && !strings.Contains(err.Error(), "duplicate member") &&
				!strings.Contains(err.Error(), "nesting") {
				t.Fatalf("Decode refused JSON that encoding/json accepts: %v", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("Decode accepted JSON that encoding/json refuses: %q", data)
		}
		out, err := Encode(v)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		v2, err := Decode(out)
		if err != nil {
			t.Fatalf("re-decode of %q: %v", out, err)
		}
		if !Equal(v, v2) {
			t.Fatalf("round trip changed the value: %q -> %q", data, out)
		}
		if hashValue(v) != hashValue(v2) {
			t.Fatalf("equal values hash differently: %q", data)
		}
		out2, _ := Encode(v2)
		if !bytes.Equal(out, out2) {
			t.Fatalf("encoding is not stable: %q vs %q", out, out2)
		}
		// Standard decoders must read our output as the same value.
		var std1, std2 any
		if json.Unmarshal(data, &std1) == nil {
			if err := json.Unmarshal(out, &std2); err != nil {
				t.Fatalf("encoding/json cannot read our output %q: %v", out, err)
			}
		}
	})
}

func FuzzApply(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,2]}}`), []byte(`[{"op":"move","from":"/a/b/0","path":"/a/b/-"},{"op":"copy","from":"/a","path":"/c"}]`))
	addCorpusSeeds(f, func(doc, patch []byte) { f.Add(doc, patch) })
	f.Fuzz(func(t *testing.T, doc, patch []byte) {
		docCopy, patchCopy := bytes.Clone(doc), bytes.Clone(patch)
		out, err := Apply(doc, patch)
		if !bytes.Equal(doc, docCopy) || !bytes.Equal(patch, patchCopy) {
			t.Fatal("Apply modified its input")
		}
		// ApplyPersistent must agree with Apply and leave the decoded input untouched.
		if v, derr := Decode(doc); derr == nil {
			if ops, perr := DecodePatch(patch); perr == nil {
				before, _ := Encode(v)
				r, aerr := ops.ApplyPersistent(v)
				if after, _ := Encode(v); !bytes.Equal(before, after) {
					t.Fatalf("ApplyPersistent modified its input: %s -> %s", before, after)
				}
				if (aerr == nil) != (err == nil) {
					t.Fatalf("ApplyPersistent error %v, Apply error %v", aerr, err)
				}
				if aerr == nil {
					if got, _ := Encode(r); !bytes.Equal(got, out) {
						t.Fatalf("ApplyPersistent = %s, Apply = %s", got, out)
					}
				}
			}
		}
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error is %T, not *Error: %v", err, err)
			}
			if out != nil {
				t.Fatal("output returned with an error")
			}
			return
		}
		if Validate(patch) != nil {
			t.Fatal("Apply accepted a patch that Validate refuses")
		}
		if _, err := Decode(out); err != nil {
			t.Fatalf("output is not valid: %v: %q", err, out)
		}
		out2, err := Apply(doc, patch)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("Apply is not deterministic: %q vs %q (%v)", out, out2, err)
		}
		// Diff back from the result must restore the original document.
		back, err := Diff(out, doc)
		if err != nil {
			t.Fatal(err)
		}
		restored, err := Apply(out, back)
		if err != nil {
			t.Fatalf("Apply(out, Diff(out, doc)): %v", err)
		}
		a, _ := Decode(restored)
		b, _ := Decode(doc)
		if !Equal(a, b) {
			t.Fatalf("Diff did not restore %q, got %q", doc, restored)
		}
	})
}

func FuzzDiff(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,3],"b":{"c":1}}`), []byte(`{"a":[2,3,4],"b":{"d":1},"e":null}`))
	f.Add([]byte(`[1,2,3]`), []byte(`[3,2,1]`))
	f.Add([]byte(`{"~/":1}`), []byte(`{"/~":1}`))
	f.Add([]byte(`[1,2,3,4,5,6,7,8]`), []byte(`[1,3,4,9,5,6,8,[2]]`))
	f.Add([]byte(`{"l":[{"a":1},{"b":2},{"c":3}]}`), []byte(`{"l":[{"b":2},{"c":3.0},{"a":1}]}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if _, err := Decode(a); err != nil {
			return
		}
		if _, err := Decode(b); err != nil {
			return
		}
		checkDiff(t, a, b)
	})
}

func FuzzPointer(f *testing.F) {
	for _, s := range []string{"", "/", "/a~1b/~0", "#/c%25d", "/~2", "/00", "/-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePointer(s)
		if err != nil {
			return
		}
		if p.String() != s {
			t.Fatalf("ParsePointer(%q).String() = %q", s, p.String())
		}
		doc, _ := Decode([]byte(`{"a":[1,{"b":2}],"":{"":3},"~":4,"/":5}`))
		_, _ = p.Get(doc) // must not panic
	})
}
