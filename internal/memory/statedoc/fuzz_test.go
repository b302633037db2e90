package statedoc

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func FuzzHeader(f *testing.F) {
	f.Add(NewAt("t", t0))
	f.Add([]byte(`{"facts":[{"id":"a\"]}","key":"k","value":[1,{"x":"\\"}]}],"plan":[{"status":"pending","step":"s"}],"thread_id":"t"}`))
	f.Add([]byte(`{"open_questions":[1,"x",{"status":null},{"status":"open"}],"metrics":{"cache_hits":"x"}}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		h, err := Header(doc, Metrics{TokensAvoided: 3})
		valid := Validate(doc) == nil
		if err != nil {
			if valid {
				t.Fatalf("Header failed on a valid document: %v", err)
			}
			return
		}
		if len(h) > MaxHeaderBytes || !json.Valid(h) {
			t.Fatalf("bad header (%d bytes): %s", len(h), h)
		}
		if !valid {
			return
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(h, &got); err != nil {
			t.Fatal(err)
		}
		if _, truncated := got["truncated"]; truncated {
			return
		}
		lists := map[string][]string{}
		for k := range reference(doc) {
			var l []json.RawMessage
			_ = json.Unmarshal(got[k], &l)
			lists[k] = []string{}
			for _, r := range l {
				lists[k] = append(lists[k], string(r))
			}
		}
		if diff := cmp.Diff(reference(doc), lists, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("header differs from the reference (-want +got):\n%s", diff)
		}
	})
}

func FuzzApplyPatch(f *testing.F) {
	f.Add([]byte(`[{"op":"add","path":"/facts/-","value":{"id":"f","key":"k","value":1}}]`))
	f.Add([]byte(`[{"op":"add","path":"/plan/0","value":{"id":"p","step":"s","status":"pending"}},{"op":"copy","from":"/plan/0","path":"/plan/-"}]`))
	f.Add([]byte(`[{"op":"replace","path":"","value":{}}]`))
	f.Add([]byte(`[{"op":"move","from":"/facts","path":"/plan"}]`))
	base, err := ApplyPatch(NewAt("t", t0), []byte(`[{"op":"add","path":"/facts/-","value":{"id":"a","key":"k","value":[1,{"x":null}]}},`+
		`{"op":"add","path":"/facts/-","value":{"id":"b","key":"k","value":2}},{"op":"add","path":"/plan/-","value":{"id":"p","step":"s"}},`+
		`{"op":"add","path":"/artifacts/-","value":{"ref":"r"}}]`), 1, t0)
	if err != nil {
		f.Fatal(err)
	}
	st, err := Parse(base)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, patch []byte) {
		out, err := ApplyPatch(base, patch, 2, t0)
		next, serr := st.Patch(patch, 2, t0)
		if (err == nil) != (serr == nil) {
			t.Fatalf("ApplyPatch error %v, State.Patch error %v", err, serr)
		}
		if err == nil {
			got, _ := next.JSON()
			if string(got) != string(out) {
				t.Fatalf("State.Patch %s\nApplyPatch  %s", got, out)
			}
		}
		if err != nil {
			var ve *ValidationError
			var se interface{ Error() string }
			if !errors.As(err, &ve) && !errors.As(err, &se) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if err := Validate(out); err != nil {
			t.Fatalf("ApplyPatch produced an invalid document: %v\n%s", err, out)
		}
		var id struct {
			Version  int    `json:"version"`
			ThreadID string `json:"thread_id"`
		}
		if err := json.Unmarshal(out, &id); err != nil || id.Version != 2 || id.ThreadID != "t" {
			t.Fatalf("identity changed: %+v %v", id, err)
		}
		if h, err := Header(out, Metrics{}); err != nil || len(h) > MaxHeaderBytes {
			t.Fatalf("header: %v (%d bytes)", err, len(h))
		}
	})
}
