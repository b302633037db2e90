package statedoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/relaydev/relay/internal/memory/jsonpatch"
)

// build returns a valid document with the given lists (raw JSON arrays).
func build(t testing.TB, lists map[string]string) []byte {
	t.Helper()
	var ops []string
	for k, v := range lists {
		ops = append(ops, fmt.Sprintf(`{"op":"replace","path":"/%s","value":%s}`, k, v))
	}
	out, err := jsonpatch.Apply(NewAt("th-1", t0), []byte("["+strings.Join(ops, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(out); err != nil {
		t.Fatal(err)
	}
	return out
}

func items(n int, f func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = f(i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func fact(i int) string { return fmt.Sprintf(`{"id":"f%d","key":"k%d","value":%d}`, i, i, i) }

type hdr struct {
	Schema    string            `json:"$schema"`
	ThreadID  string            `json:"thread_id"`
	Version   int               `json:"version"`
	Facts     []json.RawMessage `json:"top_facts"`
	Cons      []json.RawMessage `json:"top_constraints"`
	Questions []json.RawMessage `json:"open_questions"`
	Steps     []json.RawMessage `json:"next_steps"`
	Artifacts []json.RawMessage `json:"artifact_refs"`
	Actions   []json.RawMessage `json:"last_actions"`
	Metrics   map[string]int64  `json:"metrics"`
	Totals    map[string]int    `json:"totals"`
	Truncated map[string]int    `json:"truncated"`
}

func getHeader(t testing.TB, doc []byte, m Metrics) (hdr, []byte) {
	t.Helper()
	b, err := Header(doc, m)
	if err != nil {
		t.Fatalf("Header: %v", err)
	}
	if len(b) > MaxHeaderBytes {
		t.Fatalf("header is %d bytes, over %d", len(b), MaxHeaderBytes)
	}
	var h hdr
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		t.Fatalf("header is not the documented JSON: %v\n%s", err, b)
	}
	return h, b
}

func ids(raw []json.RawMessage) string {
	var out []string
	for _, r := range raw {
		var x struct {
			ID  string `json:"id"`
			Ref string `json:"ref"`
			D   string `json:"description"`
		}
		_ = json.Unmarshal(r, &x)
		if x.ID == "" && x.Ref == "" {
			x.ID = x.D
		}
		out = append(out, x.ID+x.Ref)
	}
	return strings.Join(out, ",")
}

func TestHeaderBounds(t *testing.T) {
	doc := build(t, map[string]string{
		"facts":       items(25, fact),
		"constraints": items(8, func(i int) string { return fmt.Sprintf(`{"id":"c%d","description":"d","severity":"hard"}`, i) }),
		"open_questions": items(9, func(i int) string {
			st := []string{`"status":"open",`, `"status":"resolved",`, ``}[i%3]
			return fmt.Sprintf(`{"id":"q%d",%s"question":"?"}`, i, st)
		}),
		"plan": items(12, func(i int) string {
			st := []string{"pending", "done", "skipped", ""}[i%4]
			return fmt.Sprintf(`{"id":"p%d","step":"s","status":%q}`, i, st)
		}),
		"artifacts":    items(13, func(i int) string { return fmt.Sprintf(`{"ref":"r%d","type":"text"}`, i) }),
		"last_actions": items(7, func(i int) string { return fmt.Sprintf(`{"description":"a%d"}`, i) }),
		"decisions":    `[{"id":"d1","description":"not in the header"}]`,
	})
	h, raw := getHeader(t, doc, Metrics{})
	got := map[string]string{
		"facts": ids(h.Facts), "constraints": ids(h.Cons), "questions": ids(h.Questions),
		"steps": ids(h.Steps), "artifacts": ids(h.Artifacts), "actions": ids(h.Actions),
	}
	want := map[string]string{
		"facts":       "f15,f16,f17,f18,f19,f20,f21,f22,f23,f24", // newest 10, document order
		"constraints": "c0,c1,c2,c3,c4",                          // first 5
		"questions":   "q0,q2,q3,q5,q6",                          // open or no status
		"steps":       "p0,p3,p4,p7,p8",                          // pending or empty status
		"artifacts":   "r3,r4,r5,r6,r7,r8,r9,r10,r11,r12",        // newest 10
		"actions":     "a2,a3,a4,a5,a6",                          // newest 5
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("header lists (-want +got):\n%s", diff)
	}
	wantTotals := map[string]int{"top_facts": 25, "top_constraints": 8, "open_questions": 6, "next_steps": 6, "artifact_refs": 13, "last_actions": 7}
	if diff := cmp.Diff(wantTotals, h.Totals); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	if h.Truncated != nil || bytes.Contains(raw, []byte("truncated")) {
		t.Errorf("truncated set without need: %s", raw)
	}
	if h.Schema != Schema || h.ThreadID != "th-1" || h.Version != 1 {
		t.Errorf("identity: %+v", h)
	}
	if !bytes.HasPrefix(raw, []byte(`{"$schema":"com.relay.state.v1","thread_id":"th-1","version":1,"top_facts":[{"id":"f15","key":"k15","value":15}`)) {
		t.Errorf("member order: %.120s", raw)
	}
}

func TestHeaderMetrics(t *testing.T) {
	doc := build(t, map[string]string{"metrics": `{"cache_hits":4,"tokens_avoided":900,"hop_count":2}`})
	for _, tt := range []struct {
		m          Metrics
		hits, toks int64
	}{
		{Metrics{}, 4, 900},
		{Metrics{CacheHits: 7}, 7, 900},
		{Metrics{CacheHits: 7, TokensAvoided: 12345678901}, 7, 12345678901},
	} {
		h, _ := getHeader(t, doc, tt.m)
		want := map[string]int64{"cache_hits": tt.hits, "tokens_avoided": tt.toks}
		if diff := cmp.Diff(want, h.Metrics); diff != "" {
			t.Errorf("metrics with %+v (-want +got):\n%s", tt.m, diff)
		}
	}
}

func TestHeaderCap(t *testing.T) {
	big := strings.Repeat("x", 300)
	// Ten 320-byte facts cannot fit: the oldest go first and the header says how many.
	doc := build(t, map[string]string{
		"facts":       items(40, func(i int) string { return fmt.Sprintf(`{"id":"f%d","key":"k","value":%q}`, i, big) }),
		"constraints": `[{"id":"c1","description":"keep me"}]`,
	})
	h, raw := getHeader(t, doc, Metrics{})
	if len(h.Facts) == 0 || len(h.Facts) >= 10 {
		t.Fatalf("%d facts kept", len(h.Facts))
	}
	if n := h.Truncated["top_facts"]; n != 10-len(h.Facts) {
		t.Errorf("truncated = %v with %d facts kept", h.Truncated, len(h.Facts))
	}
	if ids(h.Facts)[len(ids(h.Facts))-3:] != "f39" || ids(h.Cons) != "c1" {
		t.Errorf("kept facts %s, constraints %s", ids(h.Facts), ids(h.Cons))
	}
	// Not one byte could be spared: one more fact would not fit.
	if extra := len(raw) + 1 + len(h.Facts[0]); extra <= MaxHeaderBytes {
		t.Errorf("header %d bytes dropped a fact that fit (would be %d)", len(raw), extra)
	}
	_, trunc, err := HeaderInfo(doc, Metrics{})
	if err != nil || !trunc {
		t.Errorf("HeaderInfo truncated = %v, %v", trunc, err)
	}

	// When facts are gone, other lists give way in the documented order.
	huge := strings.Repeat("y", 700)
	doc = build(t, map[string]string{
		"constraints":  items(5, func(i int) string { return fmt.Sprintf(`{"id":"c%d","description":%q}`, i, huge) }),
		"last_actions": `[{"description":"a"}]`,
		"facts":        `[{"id":"f","key":"k","value":1}]`,
	})
	h, _ = getHeader(t, doc, Metrics{})
	wantTrunc := map[string]int{"top_facts": 1, "last_actions": 1, "top_constraints": 3}
	if diff := cmp.Diff(wantTrunc, h.Truncated); diff != "" {
		t.Errorf("truncated (-want +got):\n%s", diff)
	}
	if ids(h.Cons) != "c0,c1" {
		t.Errorf("constraints kept: %s", ids(h.Cons))
	}
}

func TestHeaderReadsAnyLayout(t *testing.T) {
	doc := build(t, map[string]string{"facts": items(12, fact), "plan": `[{"id":"p","step":"s \"q\" \\ ]}"}]`})
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, doc, "", "\t  "); err != nil {
		t.Fatal(err)
	}
	// Escaped member names mean the same thing.
	escaped := bytes.Replace(pretty.Bytes(), []byte(`"facts"`), []byte(`"\u0066acts"`), 1)
	_, want := getHeader(t, doc, Metrics{})
	for name, d := range map[string][]byte{"pretty": pretty.Bytes(), "escaped key": escaped} {
		if _, got := getHeader(t, d, Metrics{}); !bytes.Equal(got, want) {
			t.Errorf("%s: header differs:\n got %s\nwant %s", name, got, want)
		}
	}
}

func TestHeaderTenThousandFacts(t *testing.T) {
	doc := bigState(t, 10000)
	h, raw := getHeader(t, doc, Metrics{CacheHits: 1})
	if h.Totals["top_facts"] != 10000 || ids(h.Facts[len(h.Facts)-1:]) != "f9999" {
		t.Errorf("totals %v, last fact %s", h.Totals, ids(h.Facts))
	}
	t.Logf("header of a %d-byte, 10,000-fact state: %d bytes", len(doc), len(raw))
}

func TestHeaderErrors(t *testing.T) {
	for _, doc := range []string{``, `[]`, `{"facts":[1,2`, `{"facts":[{"a":"b}]}`, `{"version":1 2}`, `{"facts":[1,,2]}`} {
		if h, err := Header([]byte(doc), Metrics{}); err == nil {
			t.Errorf("Header(%q) = %s, want an error", doc, h)
		}
	}
	long := strings.Repeat("z", 3000)
	if _, err := Header([]byte(`{"thread_id":"`+long+`"}`), Metrics{}); err == nil || !strings.Contains(err.Error(), "cannot fit") {
		t.Errorf("oversized thread id: %v", err)
	}
}

// reference computes the header lists with encoding/json, independently of the scanner.
func reference(doc []byte) map[string][]string {
	var st map[string][]json.RawMessage
	var all map[string]json.RawMessage
	_ = json.Unmarshal(doc, &all)
	st = map[string][]json.RawMessage{}
	for _, k := range Lists {
		var l []json.RawMessage
		_ = json.Unmarshal(all[k], &l)
		st[k] = l
	}
	status := func(r json.RawMessage) string {
		var x struct{ Status string }
		_ = json.Unmarshal(r, &x)
		return x.Status
	}
	compactAll := func(l []json.RawMessage) []string {
		var out []string
		for _, r := range l {
			var b bytes.Buffer
			_ = json.Compact(&b, r)
			out = append(out, b.String())
		}
		return out
	}
	filter := func(l []json.RawMessage, ok string) []json.RawMessage {
		var out []json.RawMessage
		for _, r := range l {
			if s := status(r); s == "" || s == ok {
				out = append(out, r)
			}
		}
		return out
	}
	lastN := func(l []json.RawMessage, n int) []json.RawMessage { return l[max(0, len(l)-n):] }
	firstN := func(l []json.RawMessage, n int) []json.RawMessage { return l[:min(n, len(l))] }
	return map[string][]string{
		"top_facts":       compactAll(lastN(st["facts"], 10)),
		"top_constraints": compactAll(firstN(st["constraints"], 5)),
		"open_questions":  compactAll(firstN(filter(st["open_questions"], "open"), 5)),
		"next_steps":      compactAll(firstN(filter(st["plan"], "pending"), 5)),
		"artifact_refs":   compactAll(lastN(st["artifacts"], 10)),
		"last_actions":    compactAll(lastN(st["last_actions"], 5)),
	}
}

// TestHeaderMatchesReference checks random small documents (under the cap) against an
// encoding/json implementation of the same selection rules.
func TestHeaderMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		return []string{"a", "é", `q"uote`, `back\slash`, "]},[{", "\u2028", ""}[rng.IntN(7)]
	}
	compared := 0
	for iter := 0; iter < 300; iter++ {
		n := func() int { return rng.IntN(8) }
		lists := map[string]string{
			"facts": items(n()+rng.IntN(10), func(i int) string {
				return fmt.Sprintf(`{"id":"f%d","key":%s,"value":{"n":[%d,%s]}}`, i, jq("k"+str()), i, jq(str()))
			}),
			"constraints": items(n(), func(i int) string {
				return fmt.Sprintf(`{"severity":"soft","id":"c%d","description":%s}`, i, jq("d"+str()))
			}),
			"open_questions": items(n(), func(i int) string {
				return fmt.Sprintf(`{"id":"q%d","question":"?","status":%q}`, i, []string{"open", "resolved", ""}[rng.IntN(3)])
			}),
			"plan": items(n(), func(i int) string {
				return fmt.Sprintf(`{"status":%q,"id":"p%d","step":"s"}`, []string{"pending", "done", "skipped", ""}[rng.IntN(4)], i)
			}),
			"artifacts":    items(n()+rng.IntN(6), func(i int) string { return fmt.Sprintf(`{"ref":"r%d"}`, i) }),
			"last_actions": items(n(), func(i int) string { return fmt.Sprintf(`{"description":%s}`, jq(fmt.Sprintf("a%d%s", i, str()))) }),
		}
		doc := build(t, lists)
		var pretty bytes.Buffer
		_ = json.Indent(&pretty, doc, "", " ")
		h, raw := getHeader(t, pretty.Bytes(), Metrics{})
		if h.Truncated != nil {
			continue // the reference does not model the cap; TestHeaderCap does
		}
		var gotLists map[string]json.RawMessage
		_ = json.Unmarshal(raw, &gotLists)
		got := map[string][]string{}
		for k := range reference(doc) {
			var l []json.RawMessage
			_ = json.Unmarshal(gotLists[k], &l)
			got[k] = []string{}
			for _, r := range l {
				got[k] = append(got[k], string(r))
			}
		}
		if diff := cmp.Diff(reference(doc), got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("iteration %d: header differs from reference (-want +got):\n%s\ndoc %s", iter, diff, doc)
		}
		compared++
	}
	if compared < 200 {
		t.Errorf("only %d of 300 random documents were under the cap", compared)
	}
}

// jq quotes s as a JSON string.
func jq(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
