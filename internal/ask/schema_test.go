package ask

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestExtractJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1}`:                              `{"a":1}`,
		"  [1,2]\n":                            `[1,2]`,
		"Here:\n```json\n{\"a\": 2}\n```\nbye": `{"a": 2}`,
		"Result: {\"a\": {\"b\": [3]}} hope it helps": `{"a": {"b": [3]}}`,
	} {
		got, err := extractJSON(in)
		if err != nil || string(got) != want {
			t.Errorf("extractJSON(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "no json here", "{not: json}", "```json\n{```"} {
		if got, err := extractJSON(bad); err == nil {
			t.Errorf("extractJSON(%q) = %s, want an error", bad, got)
		}
	}
}

func TestSchemaCheck(t *testing.T) {
	s, err := parseSchema([]byte(`{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.check(json.RawMessage(`{"ok":true}`)); err != nil {
		t.Errorf("valid instance refused: %v", err)
	}
	for _, bad := range []string{`{"ok":"yes"}`, `{}`, `[true]`} {
		if err := s.check(json.RawMessage(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	for _, bad := range []string{`{"type":5}`, `not json`, `{"$ref":"https://example.com/s.json"}`, `{"type":"object"` + strings.Repeat(" ", MaxSchemaBytes) + `}`} {
		if _, err := parseSchema([]byte(bad)); err == nil {
			t.Errorf("parseSchema(%.40q) accepted it", bad)
		}
	}
	if _, err := parseSchema([]byte(VerdictSchema)); err != nil {
		t.Fatalf("the verdict schema itself: %v", err)
	}
}

func TestDeriveVerdict(t *testing.T) {
	v, raw := deriveVerdict(json.RawMessage(`{"verdict":"approve","summary":"s","findings":[{"file":"a.go","line":null,"severity":"major","title":"t","detail":"d"}]}`))
	if v.Verdict != "request-changes" || !v.Derived || !strings.Contains(string(raw), `"derived":true`) {
		t.Fatalf("approve with a major finding: %+v %s", v, raw)
	}
	v, _ = deriveVerdict(json.RawMessage(`{"verdict":"approve","summary":"s","findings":[{"file":"a.go","line":3,"severity":"nit","title":"t","detail":"d"}]}`))
	if v.Verdict != "approve" || v.Derived {
		t.Fatalf("approve with a nit: %+v", v)
	}
}

func FuzzExtractJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n[1]\n```", "x {\"a\":[}] y", "[[[[", "}{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := extractJSON(s)
		if err == nil && !json.Valid(v) {
			t.Fatalf("extractJSON(%q) returned invalid JSON %q", s, v)
		}
	})
}
