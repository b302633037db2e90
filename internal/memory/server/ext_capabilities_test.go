package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/memory/sqlite"
	"github.com/relaydev/relay/plugin"

	"github.com/relaydev/relay/internal/memory"
)

func capServer(t *testing.T) (*httptest.Server, *sqlite.SQLite) {
	t.Helper()
	st, err := sqlite.OpenSQLite(t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := New(Options{Store: st, Version: "test"})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); s.Close() })
	return srv, st
}

func call(t *testing.T, srv *httptest.Server, method, path string, body any) (int, map[string]any, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, srv.URL+path, rd)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, raw
}

func TestCapRoutes(t *testing.T) {
	srv, st := capServer(t)
	ctx := context.Background()
	th, _ := st.CreateThread(ctx, memory.CreateThreadParams{Name: "q"})
	if _, err := st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "notes.md", Type: "markdown", Content: []byte("# My Notes\nHello, relay.")}); err != nil {
		t.Fatal(err)
	}

	code, m, raw := call(t, srv, "GET", "/cap/list", nil)
	if code != 200 || len(m["capabilities"].([]any)) != 2 || !strings.Contains(string(raw), `"retrieval.search"`) || !strings.Contains(string(raw), `"http.fetch"`) {
		t.Fatalf("list: %d %s", code, raw)
	}

	code, m, raw = call(t, srv, "POST", "/cap/invoke", map[string]any{"thread_id": th.ID, "capability": "retrieval.search", "args": map[string]any{"query": "hello", "limit": 500}})
	if code != 400 || m["error"].(map[string]any)["code"] != "invalid_args" || !strings.Contains(m["error"].(map[string]any)["message"].(string), "/limit: must be <= 50") {
		t.Fatalf("bad args: %d %s", code, raw)
	}
	code, _, raw = call(t, srv, "POST", "/cap/invoke", map[string]any{"thread_id": "00000000-0000-4000-8000-000000000000", "capability": "retrieval.search", "args": map[string]any{"query": "hello"}})
	if code != 404 || !strings.Contains(string(raw), "not_found") {
		t.Fatalf("unknown thread: %d %s", code, raw)
	}
	code, _, raw = call(t, srv, "POST", "/cap/invoke", map[string]any{"thread_id": th.ID, "capability": "nope.nope", "args": map[string]any{}})
	if code != 404 || !strings.Contains(string(raw), "unknown_capability") {
		t.Fatalf("unknown: %d %s", code, raw)
	}

	var first map[string]any
	var saved []int64 // the thread's tokens avoided after each call: a hit saves what the miss did
	for i, wantCached := range []bool{false, true} {
		code, m, raw = call(t, srv, "POST", "/cap/invoke", map[string]any{"thread_id": th.ID, "capability": "retrieval.search", "args": map[string]any{"query": "hello"}})
		if code != 200 || m["cached"] != wantCached || m["event_id"] == nil {
			t.Fatalf("invoke %d: %d %s", i, code, raw)
		}
		got, err := st.GetThread(ctx, th.ID)
		if err != nil {
			t.Fatal(err)
		}
		saved = append(saved, got.Metrics.TokensAvoided)
		if !strings.Contains(string(raw), `"count":1`) || !strings.Contains(string(raw), `**Hello**`) {
			t.Fatalf("preview: %s", raw)
		}
		if first == nil {
			first = m
		} else if m["artifact_ref"] != first["artifact_ref"] {
			t.Fatalf("cache hit returned another ref")
		}
	}
	if saved[0] <= 0 || saved[1] != 2*saved[0] {
		t.Fatalf("tokens avoided after the miss and the hit: %v (want n > 0, then 2n)", saved)
	}
	// The loopback guard holds through the daemon unless RELAY_FETCH_ALLOW says otherwise.
	code, _, raw = call(t, srv, "POST", "/cap/invoke", map[string]any{"thread_id": th.ID, "capability": "http.fetch", "args": map[string]any{"url": srv.URL + "/health"}})
	if code != 403 || !strings.Contains(string(raw), "blocked_address") {
		t.Fatalf("fetch loopback: %d %s", code, raw)
	}

	code, m, raw = call(t, srv, "GET", "/threads/"+th.ID+"/stats", nil)
	if code != 200 || m["cache_hits"] != float64(1) || m["session_cache_hits"] != float64(1) || m["artifacts"] != float64(2) || m["naive_tokens"] == float64(0) {
		t.Fatalf("stats: %d %s", code, raw)
	}
	hdr, _ := st.Header(ctx, th.ID)
	if !strings.Contains(string(hdr.JSON), `"hits":1`) {
		t.Fatalf("header metrics: %s", hdr.JSON)
	}

	code, m, raw = call(t, srv, "POST", "/reports/"+th.ID, nil)
	if code != 200 || m["artifact_ref"] == "" || m["token_savings"].(map[string]any)["avoided_tokens"] == nil {
		t.Fatalf("report json: %d %s", code, raw)
	}
	code, _, raw = call(t, srv, "POST", "/reports/"+th.ID, map[string]any{"format": "md"})
	if code != 200 || !strings.HasPrefix(string(raw), "# relay report: q") || !strings.Contains(string(raw), "| retrieval.search | 2 | 1 |") {
		t.Fatalf("report md: %d %s", code, raw)
	}
}

func TestA2ARoute(t *testing.T) {
	srv, st := capServer(t)
	ctx := context.Background()
	th, _ := st.CreateThread(ctx, memory.CreateThreadParams{Name: "a2a"})
	st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "n.md", Type: "markdown", Content: []byte("zebra")})
	env := func(key string, payload string) []byte {
		return []byte(fmt.Sprintf(`{"msg_id":"m-%s","thread_id":%q,"from":"agent-a","to_capability":"retrieval.search","type":"request","schema":"com.relay.a2a.envelope.v1","payload":%s,"idempotency_key":%q,"timestamp":%q,"ttl":300}`,
			key, th.ID, payload, key, time.Now().UTC().Format(time.RFC3339)))
	}
	var wg sync.WaitGroup
	refs := make([]string, 8)
	for i := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, m, raw := call(t, srv, "POST", "/a2a", env("k1", `{"query":"zebra"}`))
			if code != 200 {
				t.Errorf("a2a: %d %s", code, raw)
				return
			}
			refs[i] = m["response"].(map[string]any)["msg_id"].(string)
		}()
	}
	wg.Wait()
	for _, r := range refs {
		if r != refs[0] {
			t.Fatalf("duplicates got different responses: %v", refs)
		}
	}
	evs, _ := st.Events(ctx, th.ID, 0, 100)
	n := 0
	for _, e := range evs {
		if e.Type == "a2a.received" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("envelope ran %d times, want 1", n)
	}
	code, m, raw := call(t, srv, "POST", "/a2a", env("k2", `{"doc":"`+strings.Repeat("x", 17000)+`"}`))
	if code != 413 || m["error"].(map[string]any)["rule"] != "payload_max_16kb" {
		t.Fatalf("big payload: %d %s", code, raw)
	}
	code, m, raw = call(t, srv, "POST", "/a2a", env("k3", `{"query":"x","limit":99}`))
	if code != 400 || !strings.Contains(m["error"].(map[string]any)["message"].(string), "/limit: must be <= 50") {
		t.Fatalf("bad args via a2a: %d %s", code, raw)
	}
}

func TestExportImportRoutes(t *testing.T) {
	srv, st := capServer(t)
	ctx := context.Background()
	th, _ := st.CreateThread(ctx, memory.CreateThreadParams{Name: "x"})
	st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "n.md", Type: "markdown", Content: []byte("zebra")})
	code, _, zipb := call(t, srv, "GET", "/threads/"+th.ID+"/export", nil)
	if code != 200 || !bytes.HasPrefix(zipb, []byte("PK")) {
		t.Fatalf("export: %d", code)
	}
	code, _, raw := call(t, srv, "POST", "/import", zipb)
	if code != 409 || !strings.Contains(string(raw), "thread_exists") {
		t.Fatalf("import existing: %d %s", code, raw)
	}
	code, m, raw := call(t, srv, "POST", "/import?as_new=1", zipb)
	if code != 200 || m["thread_id"] == th.ID {
		t.Fatalf("import as new: %d %s", code, raw)
	}
	code, _, raw = call(t, srv, "POST", "/import", []byte("not a zip"))
	if code != 400 || !strings.Contains(string(raw), "unsafe_bundle") {
		t.Fatalf("import garbage: %d %s", code, raw)
	}
}

func TestCapabilityOptionsValidateRefusesBadExtras(t *testing.T) {
	h := func(context.Context, *plugin.InvokeRequest) (*plugin.InvokeResult, error) { return nil, nil }
	for _, tc := range []struct {
		name string
		cap  plugin.Capability
		want string
	}{
		{"built-in name", plugin.Capability{Name: "http.fetch", ArgsSchema: json.RawMessage(`{"type":"object"}`)}, "built in"},
		{"bad name", plugin.Capability{Name: "NoDots", ArgsSchema: json.RawMessage(`{"type":"object"}`)}, "dotted lowercase"},
		{"cache without ttl", plugin.Capability{Name: "my.tool", ArgsSchema: json.RawMessage(`{"type":"object"}`), Cacheable: true}, "CacheTTL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CapabilityOptions{Extra: []Extra{{Capability: tc.cap, Handler: h}}}.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	ok := plugin.Capability{Name: "my.tool", ArgsSchema: json.RawMessage(`{"type":"object"}`)}
	if err := (CapabilityOptions{Extra: []Extra{{Capability: ok, Handler: h}}}).Validate(); err != nil {
		t.Fatalf("a good extra: %v", err)
	}
}
