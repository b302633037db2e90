package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// checkPatchByDecoding is CheckPatch as it was before arrayShape: decode to count, compact
// to log. The fuzz target holds the two to the same answers.
func checkPatchByDecoding(patch []byte) (int, []byte, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(patch, &list); err != nil {
		return 0, nil, err
	}
	var cb bytes.Buffer
	compact := patch
	if json.Compact(&cb, patch) == nil {
		compact = cb.Bytes()
	}
	return len(list), compact, nil
}

func FuzzCheckPatch(f *testing.F) {
	for _, s := range []string{
		`[]`, ` [ ] `, `[{"op":"add","path":"/facts/-","value":{"id":"f1","key":"k","value":"v, [x]"}}]`,
		"[\n {\"op\": \"remove\", \"path\": \"/facts/0\"},\n {\"op\":\"test\",\"path\":\"/a\",\"value\":\"\\\"]\\\\\"}\n]",
		`[[],[[]],{}]`, `[1,2,3]`, `null`, `{}`, `[1]]`, `[1][2]`, `[`, `"["`, `[1,]`, ``, `[ "a\u2028" ]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, patch []byte) {
		n, compact, err := CheckPatch("0b7e3c1e-5f2a-4d6b-9c1e-2f3a4b5c6d7e", patch, "")
		wn, wcompact, werr := checkPatchByDecoding(patch)
		if (err != nil) != (werr != nil) {
			t.Fatalf("%q: error %v, decoding says %v", patch, err, werr)
		}
		if err != nil {
			var ie *InvalidError
			if !errors.As(err, &ie) || ie.Msg != "patch must be a JSON array of operations: "+werr.Error() {
				t.Fatalf("%q: error %v, want the decoder's %v", patch, err, werr)
			}
			return
		}
		if n != wn || !bytes.Equal(compact, wcompact) {
			t.Fatalf("%q: %d ops, compact %q; decoding says %d, %q", patch, n, compact, wn, wcompact)
		}
	})
}

// BenchmarkCheckPatch: the prologue of a one-fact append, as bench/memory sends it.
func BenchmarkCheckPatch(b *testing.B) {
	patch := []byte(`[{"op":"add","path":"/facts/-","value":{"id":"f1234","key":"build.step.1234","value":"step 1234 finished: 14 files changed, tests pass"}}]`)
	b.Run("now", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := CheckPatch("0b7e3c1e-5f2a-4d6b-9c1e-2f3a4b5c6d7e", patch, "agent"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decoding", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := checkPatchByDecoding(patch); err != nil {
				b.Fatal(err)
			}
		}
	})
}
