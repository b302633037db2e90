package statedoc

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/relaydev/relay/internal/memory/jsonpatch"
)

var t0 = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

func TestNew(t *testing.T) {
	doc := NewAt("th-1", t0)
	want := `{"$schema":"com.relay.state.v1","version":1,"thread_id":"th-1","updated_at":"2026-11-22T00:00:00Z",` +
		`"facts":[],"constraints":[],"open_questions":[],"decisions":[],"plan":[],"artifacts":[],"last_actions":[],` +
		`"metrics":{"cache_hits":0,"cache_misses":0,"tokens_estimate":0,"tokens_avoided":0,"hop_count":0}}`
	if string(doc) != want {
		t.Errorf("NewAt =\n%s\nwant\n%s", doc, want)
	}
	if err := Validate(New("x")); err != nil {
		t.Errorf("Validate(New): %v", err)
	}
}

// withItems returns a fresh document with the list replaced by items (raw JSON array).
func withMember(t *testing.T, member, raw string) []byte {
	t.Helper()
	out, err := jsonpatch.Apply(NewAt("th-1", t0), []byte(fmt.Sprintf(`[{"op":"replace","path":"/%s","value":%s}]`, member, raw)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name, member, raw string
		want              string // substring of the error; "" means valid
	}{
		{"good fact", "facts", `[{"id":"f1","key":"phase","value":{"n":1},"at":"2026-01-02T03:04:05Z","extra":true}]`, ""},
		{"facts must stay an array", "facts", `{}`, `/facts: must be an array, got object`},
		{"fact needs key", "facts", `[{"id":"f1","value":1}]`, `/facts/0: missing "key"`},
		{"fact needs value", "facts", `[{"id":"f1","key":"k"}]`, `/facts/0: missing "value"`},
		{"fact value may be null", "facts", `[{"id":"f1","key":"k","value":null}]`, ""},
		{"fact item must be object", "facts", `["x"]`, `/facts/0: must be an object, got string`},
		{"bad at", "facts", `[{"id":"f1","key":"k","value":1,"at":"yesterday"}]`, `/facts/0/at: must be an RFC 3339 timestamp`},
		{"duplicate fact id", "facts", `[{"id":"f1","key":"a","value":1},{"id":"f1","key":"b","value":2}]`, `/facts/1/id: duplicate id "f1" (already at /facts/0`},
		{"severity enum", "constraints", `[{"id":"c1","description":"d","severity":"medium"}]`, `/constraints/0/severity: must be one of "hard", "soft", got "medium"`},
		{"question status", "open_questions", `[{"id":"q1","question":"why?","status":"closed"}]`, `must be one of "open", "resolved"`},
		{"decision confidence", "decisions", `[{"id":"d1","description":"x","confidence":1.5}]`, `/decisions/0/confidence: must be a number from 0 to 1, got 1.5`},
		{"decision reason codes", "decisions", `[{"id":"d1","description":"x","reason_codes":["a",1]}]`, `element 1 must be a string, got number`},
		{"good decision", "decisions", `[{"id":"d1","description":"x","reason_codes":["a"],"evidence_refs":[],"confidence":0.5}]`, ""},
		{"plan status", "plan", `[{"id":"p1","step":"do","status":"later"}]`, `must be one of "pending", "done", "skipped"`},
		{"artifact type", "artifacts", `[{"ref":"r1","type":"pdf"}]`, `/artifacts/0/type: must be one of "markdown"`},
		{"duplicate artifact ref", "artifacts", `[{"ref":"r1"},{"ref":"r1"}]`, `duplicate ref "r1"`},
		{"last action", "last_actions", `[{"at":"2026-01-02T03:04:05Z"}]`, `/last_actions/0: missing "description"`},
		{"metrics type", "metrics", `[]`, `/metrics: must be an object, got array`},
		{"metric value", "metrics", `{"cache_hits":-1}`, `/metrics/cache_hits: must be an integer ≥ 0, got -1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(withMember(t, tt.member, tt.raw))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want *ValidationError, got %v", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error\n %s\nwant it to contain\n %s", err, tt.want)
			}
		})
	}
}

func TestValidateTopLevel(t *testing.T) {
	for raw, want := range map[string]string{
		`[]`: "the document must be a JSON object, got array",
		`{"$schema":"com.relay.state.v1","version":0,"thread_id":"","updated_at":"x","facts":[],"constraints":[],"open_questions":[],"decisions":[],"plan":[],"artifacts":[],"last_actions":[],"metrics":{},"notes":1}`: `/notes: unknown member`,
		`{"$schema":"v0"}`: `/$schema: must be "com.relay.state.v1", got "v0"`,
	} {
		err := Validate([]byte(raw))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(%.40s) = %v, want %q", raw, err, want)
		}
	}
	// Every problem is reported (up to a bound), not just the first.
	var ve *ValidationError
	if err := Validate([]byte(`{}`)); !errors.As(err, &ve) || len(ve.Problems) != 12 {
		t.Errorf("Validate({}) = %v, want 12 problems", err)
	}
	if !strings.Contains(ve.Error(), "; and 9 more") {
		t.Errorf("long error not summarised: %v", ve)
	}
}

func TestApplyPatch(t *testing.T) {
	doc := NewAt("th-1", t0)
	t1 := t0.Add(time.Minute)
	out, err := ApplyPatch(doc, []byte(`[{"op":"test","path":"/version","value":1},{"op":"add","path":"/facts/-","value":{"id":"f1","key":"phase","value":"done"}}]`), 2, t1)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got["version"] != 2.0 || got["updated_at"] != "2026-11-22T00:01:00Z" {
		t.Errorf("not stamped: version %v updated_at %v", got["version"], got["updated_at"])
	}
	if facts := got["facts"].([]any); len(facts) != 1 {
		t.Errorf("facts = %v", facts)
	}
	if !strings.HasPrefix(string(out), `{"$schema":"com.relay.state.v1","version":2,"thread_id":"th-1"`) {
		t.Errorf("member order changed: %.80s", out)
	}

	refused := []struct{ name, patch, want string }{
		{"list must stay an array", `[{"op":"replace","path":"/facts","value":{}}]`, "/facts: must be an array, got object"},
		{"list cannot go", `[{"op":"remove","path":"/plan"}]`, "/plan: missing"},
		{"version is owned", `[{"op":"replace","path":"/version","value":9}]`, `operation 0 (replace): path "/version": "version" is maintained by relay`},
		{"thread is owned", `[{"op":"move","from":"/thread_id","path":"/x"}]`, `"thread_id" is maintained by relay`},
		{"no other thread by root replace", `[{"op":"replace","path":"","value":` + strings.Replace(string(NewAt("th-2", t0)), `"version":1`, `"version":1`, 1) + `}]`, "/thread_id: is maintained by relay"},
		{"bad item", `[{"op":"add","path":"/plan/-","value":{"id":"p1"}}]`, `/plan/0: missing "step"`},
		{"failed test", `[{"op":"test","path":"/version","value":7}]`, "test failed: value is 1, want 7"},
		{"bad patch", `[{"op":"add","path":"facts"}]`, "must be empty or start with '/'"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			out, err := ApplyPatch(doc, []byte(tt.patch), 2, t1)
			if err == nil {
				t.Fatalf("accepted: %s", out)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
	// Copying from an owned member is harmless and allowed.
	if _, err := ApplyPatch(doc, []byte(`[{"op":"copy","from":"/thread_id","path":"/facts/-"}]`), 2, t1); err == nil ||
		!strings.Contains(err.Error(), "/facts/0: must be an object") {
		t.Errorf("copy from thread_id: %v", err)
	}
}

func TestApplyPatchKeepsAcceptedPatchesOnce(t *testing.T) {
	doc := NewAt("th", t0)
	for i := 1; i <= 50; i++ {
		p := fmt.Sprintf(`[{"op":"add","path":"/facts/-","value":{"id":"f%d","key":"k","value":%d}}]`, i, i)
		var err error
		if doc, err = ApplyPatch(doc, []byte(p), i+1, t0); err != nil {
			t.Fatal(err)
		}
	}
	// Re-adding an existing id is refused, so a retried patch cannot duplicate a fact.
	_, err := ApplyPatch(doc, []byte(`[{"op":"add","path":"/facts/-","value":{"id":"f7","key":"k","value":7}}]`), 52, t0)
	if err == nil || !strings.Contains(err.Error(), `duplicate id "f7"`) {
		t.Errorf("duplicate id: %v", err)
	}
	var st struct {
		Version int `json:"version"`
		Facts   []struct {
			ID string `json:"id"`
		} `json:"facts"`
	}
	if err := json.Unmarshal(doc, &st); err != nil {
		t.Fatal(err)
	}
	if st.Version != 51 || len(st.Facts) != 50 || st.Facts[49].ID != "f50" {
		t.Errorf("version %d, %d facts", st.Version, len(st.Facts))
	}
}

func TestProblemJSON(t *testing.T) {
	b, _ := json.Marshal(Problem{Path: "/a", Reason: "r"})
	if diff := cmp.Diff(`{"path":"/a","reason":"r"}`, string(b)); diff != "" {
		t.Error(diff)
	}
}
