package jsonpatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"math/rand/v2"
	"strconv"

	"github.com/google/go-cmp/cmp"
)

func mustApply(t *testing.T, doc, patch string) string {
	t.Helper()
	out, err := Apply([]byte(doc), []byte(patch))
	if err != nil {
		t.Fatalf("Apply(%s, %s): %v", doc, patch, err)
	}
	return string(out)
}

func TestApplyKeepsMemberOrder(t *testing.T) {
	tests := []struct{ name, doc, patch, want string }{
		{"add appends", `{"b":1,"a":2}`, `[{"op":"add","path":"/c","value":3}]`, `{"b":1,"a":2,"c":3}`},
		{"replace keeps place", `{"b":1,"a":2,"c":3}`, `[{"op":"replace","path":"/a","value":[]}]`, `{"b":1,"a":[],"c":3}`},
		{"add to existing keeps place", `{"b":1,"a":2}`, `[{"op":"add","path":"/b","value":0}]`, `{"b":0,"a":2}`},
		{"remove closes gap", `{"z":1,"y":2,"x":3}`, `[{"op":"remove","path":"/y"}]`, `{"z":1,"x":3}`},
		{"move appends at target", `{"z":1,"y":2}`, `[{"op":"move","from":"/z","path":"/w"}]`, `{"y":2,"w":1}`},
		{"nested value order kept", `{}`, `[{"op":"add","path":"/v","value":{"q":1,"p":{"k":2,"j":3}}}]`, `{"v":{"q":1,"p":{"k":2,"j":3}}}`},
		{"large object uses index", `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9}`,
			`[{"op":"remove","path":"/k3"},{"op":"replace","path":"/k9","value":"x"},{"op":"add","path":"/k3","value":"y"}]`,
			`{"k0":0,"k1":1,"k2":2,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":"x","k3":"y"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustApply(t, tt.doc, tt.patch); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestApplyPreservesNumbersAndStrings(t *testing.T) {
	doc := `{"big":123456789012345678901234567890,"f":1.50e+300,"tiny":-0.000000000000000000000000000001,"s":"\u00e9\ud83d\ude00 <&> \u2028 \"q\" \\ \n\t\u0001"}`
	got := mustApply(t, doc, `[{"op":"add","path":"/x","value":18446744073709551617}]`)
	want := `{"big":123456789012345678901234567890,"f":1.50e+300,"tiny":-0.000000000000000000000000000001,"s":"é😀 <&> ` + "\u2028" + ` \"q\" \\ \n\t\u0001","x":18446744073709551617}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// The output must mean the same as the input to a standard decoder.
	var a, b map[string]any
	if err := json.Unmarshal([]byte(doc), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(got), &b); err != nil {
		t.Fatal(err)
	}
	delete(b, "x")
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("round trip changed the document (-in +out):\n%s", diff)
	}
}

func TestTestComparesNumbersExactly(t *testing.T) {
	tests := []struct {
		doc, value string
		equal      bool
	}{
		{"1", "1.0", true},
		{"1", "1e0", true},
		{"1", "10e-1", true},
		{"100", "1E+2", true},
		{"0", "-0", true},
		{"0.0", "0e10", true},
		{"-1.5", "-15e-1", true},
		{"1", "2", false},
		{"1", "-1", false},
		{"123456789012345678901234567890", "123456789012345678901234567891", false},
		{"123456789012345678901234567890", "1.2345678901234567890123456789e29", true},
		{"1e400", "10e399", true},
		{"1e400", "1e401", false},
		{"9007199254740993", "9007199254740992", false}, // equal as float64, not as numbers
		{"1", `"1"`, false},
		{"1", "true", false},
	}
	for _, tt := range tests {
		patch := fmt.Sprintf(`[{"op":"test","path":"/n","value":%s}]`, tt.value)
		_, err := Apply([]byte(`{"n":`+tt.doc+`}`), []byte(patch))
		if (err == nil) != tt.equal {
			t.Errorf("test %s == %s: err = %v, want equal=%v", tt.doc, tt.value, err, tt.equal)
		}
		if err != nil && !IsKind(err, KindTestFailed) {
			t.Errorf("test %s == %s: error kind: %v", tt.doc, tt.value, err)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name, doc, patch string
		kind             Kind
		op               int
		msg              string
	}{
		{"missing member names op and path", `{"a":{}}`,
			`[{"op":"test","path":"/a","value":{}},{"op":"remove","path":"/a/b"}]`,
			KindPath, 1, `operation 1 (remove): path "/a/b": no member "b"`},
		{"missing parent", `{}`, `[{"op":"add","path":"/a/b","value":1}]`,
			KindPath, 0, `operation 0 (add): path "/a/b": no member "a" at the document root`},
		{"scalar parent", `{"a":"s"}`, `[{"op":"add","path":"/a/b","value":1}]`,
			KindPath, 0, `operation 0 (add): path "/a/b": "/a" is a string, not an object or array`},
		{"test failed", `{"a":1}`, `[{"op":"test","path":"/a","value":2}]`,
			KindTestFailed, 0, `operation 0 (test): path "/a": test failed: value is 1, want 2`},
		{"unknown op", `{}`, `[{"op":"merge","path":"/a"}]`,
			KindInvalidPatch, 0, `operation 0: unknown op "merge" (want add, remove, replace, move, copy or test)`},
		{"not an array", `{}`, `{"op":"add"}`,
			KindInvalidPatch, -1, `a patch must be a JSON array of operations, got object`},
		{"op not object", `{}`, `[1]`,
			KindInvalidPatch, 0, `operation 0: an operation must be a JSON object, got number`},
		{"bad pointer escape", `{}`, `[{"op":"add","path":"/a~2","value":1}]`,
			KindInvalidPatch, 0, `operation 0 (add): path "/a~2": invalid JSON pointer "/a~2": '~' must be followed by '0' or '1' (write ~0 for '~', ~1 for '/')`},
		{"move into own child", `{"a":{}}`, `[{"op":"move","from":"/a","path":"/a/b"}]`,
			KindInvalidPatch, 0, `operation 0 (move): path "/a/b": cannot move "/a" into its own child`},
		{"remove root", `{}`, `[{"op":"remove","path":""}]`,
			KindPath, 0, `operation 0 (remove): path "": cannot remove the whole document (use replace with path "")`},
		{"dash is not an element", `[1]`, `[{"op":"replace","path":"/-","value":1}]`,
			KindPath, 0, `operation 0 (replace): path "/-": index "-" (past the end of the array) names no element`},
		{"duplicate member in document", `{"a":1,"a":2}`, `[]`,
			KindInvalidDocument, -1, `cannot read the document: invalid JSON at byte 7: duplicate member name "a"`},
		{"trailing data in patch", `{}`, `[] []`,
			KindInvalidPatch, -1, `cannot read the patch: invalid JSON at byte 3: unexpected '[' after the value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Apply([]byte(tt.doc), []byte(tt.patch))
			if err == nil {
				t.Fatalf("no error, got %s", out)
			}
			if out != nil {
				t.Errorf("output %q returned with an error", out)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not *Error: %v", err, err)
			}
			if pe.Kind != tt.kind || pe.Op != tt.op {
				t.Errorf("kind %q op %d, want %q op %d", pe.Kind, pe.Op, tt.kind, tt.op)
			}
			if err.Error() != tt.msg {
				t.Errorf("message\n got  %s\n want %s", err, tt.msg)
			}
		})
	}
}

func TestApplyIsAtomic(t *testing.T) {
	doc := []byte(`{"list":[1,2,3],"o":{"k":"v"}}`)
	orig := bytes.Clone(doc)
	// The first two operations succeed, the third fails: nothing may be returned.
	_, err := Apply(doc, []byte(`[{"op":"remove","path":"/list/0"},{"op":"add","path":"/o/n","value":1},{"op":"test","path":"/o/k","value":"w"}]`))
	if err == nil {
		t.Fatal("want an error")
	}
	if !bytes.Equal(doc, orig) {
		t.Errorf("input modified: %s", doc)
	}
	// The decoded form is modified in place, so ApplyTo on a copy keeps the original.
	v, _ := Decode(doc)
	p, err := DecodePatch([]byte(`[{"op":"remove","path":"/list/0"},{"op":"remove","path":"/nope"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ApplyTo(DeepCopy(v)); err == nil {
		t.Fatal("want an error")
	}
	if got, _ := Encode(v); string(got) != string(orig) {
		t.Errorf("original value changed: %s", got)
	}
}

func TestPatchIsReusable(t *testing.T) {
	p, err := DecodePatch([]byte(`[{"op":"add","path":"/a","value":{"n":[]}},{"op":"add","path":"/a/n/-","value":1},{"op":"copy","from":"/a","path":"/b"},{"op":"add","path":"/b/n/-","value":2}]`))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		v, err := p.ApplyTo(NewObject(0))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := Encode(v)
		if want := `{"a":{"n":[1]},"b":{"n":[1,2]}}`; string(got) != want {
			t.Fatalf("run %d: got %s, want %s", i, got, want)
		}
	}
}

func TestPointer(t *testing.T) {
	for _, s := range []string{"", "/", "//", "/a~1b/~0/~01", "/0/-", "/ /é"} {
		p, err := ParsePointer(s)
		if err != nil {
			t.Errorf("ParsePointer(%q): %v", s, err)
			continue
		}
		if p.String() != s {
			t.Errorf("ParsePointer(%q).String() = %q", s, p.String())
		}
	}
	p, _ := ParsePointer("/a~1b/~0/~01")
	if diff := cmp.Diff(Pointer{"a/b", "~", "~1"}, p); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
	for _, s := range []string{"a", "#/a", "/~", "/a~", "/~2", "/~a"} {
		if _, err := ParsePointer(s); err == nil {
			t.Errorf("ParsePointer(%q): want an error", s)
		}
	}
	for _, s := range []string{"/a", "#/%zz"} {
		if _, err := ParseFragment(s); err == nil {
			t.Errorf("ParseFragment(%q): want an error", s)
		}
	}
	doc, _ := Decode([]byte(`{"a":[10,{"b":null}]}`))
	for ptr, want := range map[string]string{"/a/1/b": "null", "/a/0": "10", "": `{"a":[10,{"b":null}]}`} {
		v, err := MustPointer(t, ptr).Get(doc)
		if err != nil {
			t.Errorf("Get(%q): %v", ptr, err)
			continue
		}
		if got, _ := Encode(v); string(got) != want {
			t.Errorf("Get(%q) = %s, want %s", ptr, got, want)
		}
	}
	for ptr, msg := range map[string]string{
		"/a/2":   `array index 2 out of range (array has 2 elements) at "/a"`,
		"/a/01":  `"01" is not an array index (want 0 or a number without leading zeros) at "/a"`,
		"/a/-":   `index "-" (past the end of the array) names no element at "/a"`,
		"/a/0/x": `"/a/0" is a number, not an object or array`,
		"/b":     `no member "b" at the document root`,
	} {
		_, err := MustPointer(t, ptr).Get(doc)
		if err == nil || err.Error() != msg {
			t.Errorf("Get(%q) error = %v, want %s", ptr, err, msg)
		}
	}
}

func MustPointer(t *testing.T, s string) Pointer {
	t.Helper()
	p, err := ParsePointer(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecodeErrors(t *testing.T) {
	tests := map[string]string{
		``:                  "unexpected end of input",
		`{"a":1,}`:          `unexpected '}', want a member name`,
		`[1,]`:              `unexpected ']', want a value`,
		`01`:                `unexpected '1' after the value`,
		`1.`:                "want a digit after '.'",
		`"a` + "\x01" + `"`: "control character 0x01",
		`"\x"`:              `invalid escape '\x'`,
		"\"\xff\"":          "invalid UTF-8",
		`"\u12"`:            `invalid \u escape`,
		`tru`:               "want true",
		`{"a" 1}`:           "want ':'",
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1): "nesting deeper than",
	}
	for in, want := range tests {
		_, err := Decode([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode(%.20q) error = %v, want it to contain %q", in, err, want)
		}
	}
	v, err := Decode([]byte(`"\ud83d\ude00 \ud83d x \ude00"`))
	if err != nil {
		t.Fatal(err)
	}
	if v != "😀 \ufffd x \ufffd" {
		t.Errorf("surrogates decoded to %q", v)
	}
}

func TestDiff(t *testing.T) {
	tests := []struct{ name, a, b, want string }{
		{"equal", `{"a":[1,{"b":2}]}`, `{"a":[1,{"b":2.0}]}`, `[]`},
		{"append", `{"facts":[1]}`, `{"facts":[1,2]}`, `[{"op":"add","path":"/facts/1","value":2}]`},
		{"remove first of many", `[1,2,3,4]`, `[2,3,4]`, `[{"op":"remove","path":"/0"}]`},
		{"insert middle", `[1,2,4]`, `[1,2,3,4]`, `[{"op":"add","path":"/2","value":3}]`},
		{"members", `{"a":1,"b":2}`, `{"b":3,"c":4}`, `[{"op":"remove","path":"/a"},{"op":"replace","path":"/b","value":3},{"op":"add","path":"/c","value":4}]`},
		{"escaped keys", `{}`, `{"a/b":1,"~":2}`, `[{"op":"add","path":"/a~1b","value":1},{"op":"add","path":"/~0","value":2}]`},
		{"type change", `{"a":[1]}`, `{"a":{"0":1}}`, `[{"op":"replace","path":"/a","value":{"0":1}}]`},
		{"root", `[1]`, `"x"`, `[{"op":"replace","path":"","value":"x"}]`},
		{"shrink", `[1,2,3,4,5]`, `[1,9,5]`, `[{"op":"replace","path":"/1","value":9},{"op":"remove","path":"/2"},{"op":"remove","path":"/2"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Diff([]byte(tt.a), []byte(tt.b))
			if err != nil {
				t.Fatal(err)
			}
			if string(p) != tt.want {
				t.Errorf("Diff = %s\nwant   %s", p, tt.want)
			}
			checkDiff(t, []byte(tt.a), []byte(tt.b))
		})
	}
}

// checkDiff asserts that applying Diff(a, b) to a yields b.
func checkDiff(t *testing.T, a, b []byte) {
	t.Helper()
	p, err := Diff(a, b)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	out, err := Apply(a, p)
	if err != nil {
		t.Fatalf("Apply(a, Diff(a, b)) with a=%s b=%s patch=%s: %v", a, b, p, err)
	}
	got, _ := Decode(out)
	want, _ := Decode(b)
	if !Equal(got, want) {
		t.Fatalf("Apply(a, Diff(a, b)) = %s, want %s (patch %s)", out, b, p)
	}
}

func TestEncodeGoValues(t *testing.T) {
	got, err := Encode(map[string]any{"b": []any{1, int64(2), 2.5, json.Number("1e3")}, "a": nil, "c": true})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":null,"b":[1,2,2.5,1e3],"c":true}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	for _, bad := range []any{json.Number("1x"), struct{}{}, []any{make(chan int)}} {
		if _, err := Encode(bad); err == nil {
			t.Errorf("Encode(%#v): want an error", bad)
		}
	}
	if got, _ := Encode("a\xffb"); string(got) != `"a\ufffdb"` {
		t.Errorf("invalid UTF-8 encoded as %s", got)
	}
}

func TestDiffLongLists(t *testing.T) {
	a := factDoc(2000)
	b, err := Apply(a, []byte(`[{"op":"remove","path":"/facts/17"},{"op":"replace","path":"/facts/500/value","value":"x"},{"op":"add","path":"/facts/-","value":{"id":"new"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Diff(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"remove","path":"/facts/17"},{"op":"replace","path":"/facts/500/value","value":"x"},{"op":"add","path":"/facts/1999","value":{"id":"new"}}]`
	if string(p) != want {
		t.Errorf("Diff = %.300s\nwant   %s", p, want)
	}
	checkDiff(t, a, b)
	// Lists that differ everywhere exceed the edit bound and fall back, still correctly.
	x := `[` + strings.TrimSuffix(strings.Repeat(`1,`, 300), ",") + `]`
	y := `[` + strings.TrimSuffix(strings.Repeat(`2,`, 250), ",") + `]`
	checkDiff(t, []byte(x), []byte(y))
}

// TestMyersIsShortest compares the edit count with a dynamic-programming LCS.
func TestMyersIsShortest(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for iter := 0; iter < 500; iter++ {
		a := make([]any, rng.IntN(12))
		b := make([]any, rng.IntN(12))
		for i := range a {
			a[i] = json.Number(strconv.Itoa(rng.IntN(4)))
		}
		for i := range b {
			b[i] = json.Number(strconv.Itoa(rng.IntN(4)))
		}
		script, ok := myers(a, b, maxEdits)
		if !ok {
			t.Fatal("bound exceeded on tiny lists")
		}
		lcs := make([][]int, len(a)+1)
		for i := range lcs {
			lcs[i] = make([]int, len(b)+1)
		}
		for i := len(a) - 1; i >= 0; i-- {
			for j := len(b) - 1; j >= 0; j-- {
				if Equal(a[i], b[j]) {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		edits, xi, yi := 0, 0, 0
		for _, e := range script {
			switch e {
			case editKeep:
				if !Equal(a[xi], b[yi]) {
					t.Fatalf("%v -> %v: script keeps unequal elements", a, b)
				}
				xi, yi = xi+1, yi+1
			case editDel:
				edits, xi = edits+1, xi+1
			case editIns:
				edits, yi = edits+1, yi+1
			}
		}
		if xi != len(a) || yi != len(b) {
			t.Fatalf("%v -> %v: script covers %d/%d elements", a, b, xi, yi)
		}
		if want := len(a) + len(b) - 2*lcs[0][0]; edits != want {
			t.Fatalf("%v -> %v: %d edits, shortest is %d", a, b, edits, want)
		}
	}
}

func TestHashAgreesWithEqual(t *testing.T) {
	pairs := [][2]string{
		{`{"a":1,"b":[1.0,"x"]}`, `{"b":[1,"x"],"a":10e-1}`},
		{`-0`, `0.0`},
		{`1e400`, `10e399`},
	}
	for _, p := range pairs {
		a, _ := Decode([]byte(p[0]))
		b, _ := Decode([]byte(p[1]))
		if !Equal(a, b) || hashValue(a) != hashValue(b) {
			t.Errorf("%s vs %s: equal %v, hashes %x %x", p[0], p[1], Equal(a, b), hashValue(a), hashValue(b))
		}
	}
}

func TestApplyPersistentSharesUnchangedParts(t *testing.T) {
	v, _ := Decode([]byte(`{"a":{"x":[1,2]},"b":{"y":[3]},"c":[{"z":1},{"z":2}]}`))
	p, err := DecodePatch([]byte(`[{"op":"add","path":"/a/x/-","value":9},{"op":"remove","path":"/c/0/z"},{"op":"move","from":"/b/y","path":"/a/y"}]`))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := Encode(v)
	r, err := p.ApplyPersistent(v)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := Encode(v); string(after) != string(before) {
		t.Errorf("input changed: %s", after)
	}
	got, _ := Encode(r)
	if want := `{"a":{"x":[1,2,9],"y":[3]},"b":{},"c":[{},{"z":2}]}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	oc, _ := v.(*Object).Get("c")
	nc, _ := r.(*Object).Get("c")
	if oc.([]any)[1].(*Object) != nc.([]any)[1].(*Object) {
		t.Error("an untouched element was copied instead of shared")
	}
	// A failing patch leaves the input intact too.
	bad, _ := DecodePatch([]byte(`[{"op":"remove","path":"/a"},{"op":"test","path":"/b","value":0}]`))
	if _, err := bad.ApplyPersistent(v); err == nil {
		t.Fatal("want an error")
	}
	if after, _ := Encode(v); string(after) != string(before) {
		t.Errorf("input changed by a failed patch: %s", after)
	}
}
