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
	ThreadID  string            `json:"t"`
	Version   int               `json:"v"`
	Facts     []json.RawMessage `json:"facts"`
	Cons      []json.RawMessage `json:"constraints"`
	Questions []json.RawMessage `json:"questions"`
	Steps     []json.RawMessage `json:"next"`
	Artifacts []json.RawMessage `json:"refs"`
	Actions   []json.RawMessage `json:"actions"`
	Metrics   map[string]int64  `json:"m"`
	Totals    map[string]int    `json:"n"`
	Truncated map[string]int    `json:"cut"`
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
		if json.Unmarshal(r, &x) != nil {
			var s string
			_ = json.Unmarshal(r, &s)
			x.Ref, _, _ = strings.Cut(s, " ")
		}
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
	wantTotals := map[string]int{"facts": 25, "constraints": 8, "questions": 6, "next": 6, "refs": 13, "actions": 7}
	if diff := cmp.Diff(wantTotals, h.Totals); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	if h.Truncated != nil || bytes.Contains(raw, []byte(`"cut"`)) {
		t.Errorf("truncated set without need: %s", raw)
	}
	if h.ThreadID != "th-1" || h.Version != 1 {
		t.Errorf("identity: %+v", h)
	}
	if !bytes.HasPrefix(raw, []byte(`{"t":"th-1","v":1,"facts":[{"id":"f15","key":"k15","value":15}`)) {
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
		want := map[string]int64{"hits": tt.hits, "saved": tt.toks}
		if diff := cmp.Diff(want, h.Metrics); diff != "" {
			t.Errorf("metrics with %+v (-want +got):\n%s", tt.m, diff)
		}
	}
}

// TestHeaderCountersOnlyWhenPositive: a negative or zero counter is left out of the header
// (a fresh thread's header costs more tokens than it saved: "saved":-24 tells an agent
// nothing it can use), by Header and by WithSaved alike.
func TestHeaderCountersOnlyWhenPositive(t *testing.T) {
	doc := build(t, nil)
	h, raw := getHeader(t, doc, Metrics{TokensAvoided: -24})
	if h.Metrics != nil {
		t.Errorf("header with tokens avoided -24 has counters: %s", raw)
	}
	h, raw = getHeader(t, doc, Metrics{CacheHits: 2, TokensAvoided: -24})
	if diff := cmp.Diff(map[string]int64{"hits": 2}, h.Metrics); diff != "" {
		t.Errorf("counters (-want +got):\n%s\n%s", diff, raw)
	}
	for _, tt := range []struct {
		saved int64
		want  string
	}{
		{-24, `{"t":"th-1","v":0}`},
		{0, `{"t":"th-1","v":0}`},
		{31, `{"t":"th-1","v":0,"m":{"saved":31}}`},
	} {
		got, err := WithSaved([]byte(`{"t":"th-1","v":0,"m":{"saved":5}}`), tt.saved)
		if err != nil || string(got) != tt.want {
			t.Errorf("WithSaved(%d) = %s, %v; want %s", tt.saved, got, err, tt.want)
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
	if n := h.Truncated["facts"]; n != 10-len(h.Facts) {
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
	wantTrunc := map[string]int{"facts": 1, "actions": 1, "constraints": 3}
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
	if h.Totals["facts"] != 10000 || ids(h.Facts[len(h.Facts)-1:]) != "f9999" {
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
	// The thread id is cut to 8 characters, so no id can push the header over the cap.
	long := strings.Repeat("z", 3000)
	if h, err := Header([]byte(`{"thread_id":"`+long+`"}`), Metrics{}); err != nil || !bytes.HasPrefix(h, []byte(`{"t":"zzzzzzzz","v":0}`)) {
		t.Errorf("oversized thread id: %s, %v", h, err)
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
		"facts":       compactAll(lastN(st["facts"], 10)),
		"constraints": compactAll(firstN(st["constraints"], 5)),
		"questions":   compactAll(firstN(filter(st["open_questions"], "open"), 5)),
		"next":        compactAll(firstN(filter(st["plan"], "pending"), 5)),
		"refs":        refStrings(compactAll(lastN(st["artifacts"], 10))),
		"actions":     compactAll(lastN(st["last_actions"], 5)),
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

// refStrings turns {"ref":"r1"} items into the header's "r1" form.
func refStrings(l []string) []string {
	out := []string{}
	for _, r := range l {
		var x struct {
			Ref  string `json:"ref"`
			Name string `json:"name"`
		}
		_ = json.Unmarshal([]byte(r), &x)
		s := x.Ref
		if x.Name != "" {
			s += " " + x.Name
		}
		out = append(out, jq(s))
	}
	return out
}
