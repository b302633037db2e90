package server

import (
	"bufio"
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

	"github.com/relaydev/relay/internal/memory"
)

type testAPI struct {
	t     *testing.T
	srv   *httptest.Server
	token string
	store *sqlite.SQLite
}

func newTestAPI(t *testing.T, token string) *testAPI {
	t.Helper()
	st, err := sqlite.OpenSQLite(t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Store: st, Token: token, Version: "test"})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); srv.Close(); st.Close() })
	return &testAPI{t: t, srv: srv, token: token, store: st}
}

// do sends a request and returns status, headers and body.
func (a *testAPI) do(method, path, ctype string, body []byte, hdr ...string) (int, http.Header, []byte) {
	a.t.Helper()
	req, _ := http.NewRequest(method, a.srv.URL+path, bytes.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func (a *testAPI) newThread() string {
	a.t.Helper()
	code, _, b := a.do("POST", "/threads", "application/json", []byte(`{"name":"t"}`))
	if code != 201 {
		a.t.Fatalf("create thread: %d %s", code, b)
	}
	var th memory.Thread
	json.Unmarshal(b, &th)
	return th.ID
}

func errCode(b []byte) string {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil || e.Error.Message == "" {
		return "<no error body: " + string(b) + ">"
	}
	return e.Error.Code
}

func TestRoutes(t *testing.T) {
	a := newTestAPI(t, "")
	if code, _, b := a.do("GET", "/health", "", nil); code != 200 || !bytes.Contains(b, []byte(`"ok"`)) {
		t.Fatalf("health %d %s", code, b)
	}
	if code, _, b := a.do("GET", "/version", "", nil); code != 200 || !bytes.Contains(b, []byte(`"version":"test"`)) {
		t.Fatalf("version %d %s", code, b)
	}
	tid := a.newThread()
	if code, _, b := a.do("GET", "/threads", "", nil); code != 200 || !bytes.Contains(b, []byte(tid)) {
		t.Fatalf("list %d %s", code, b)
	}
	if code, _, b := a.do("GET", "/threads/"+tid, "", nil); code != 200 || !bytes.Contains(b, []byte(`"header"`)) {
		t.Fatalf("detail %d %s", code, b)
	}
	// Patch forms: bare array + If-Match, object with expected_version, query parameter.
	code, h, b := a.do("POST", "/threads/"+tid+"/state/patch", "application/json",
		[]byte(`[{"op":"add","path":"/facts/-","value":{"id":"f1","key":"a","value":1}}]`), "If-Match", `"v1"`)
	if code != 200 || h.Get("ETag") != `"v2"` || !bytes.Contains(b, []byte(`"state_ref":"v2"`)) {
		t.Fatalf("patch 1: %d %v %s", code, h, b)
	}
	code, _, b = a.do("POST", "/threads/"+tid+"/state/patch", "application/json",
		[]byte(`{"patch":[{"op":"add","path":"/open_questions/-","value":{"id":"q1","question":"why?","status":"open"}}],"expected_version":2,"author":"bob"}`))
	if code != 200 {
		t.Fatalf("patch 2: %d %s", code, b)
	}
	code, _, b = a.do("POST", "/threads/"+tid+"/state/patch?expected_version=3", "application/json", []byte(`[]`))
	if code != 200 {
		t.Fatalf("patch 3: %d %s", code, b)
	}
	code, h, b = a.do("POST", "/threads/"+tid+"/state/patch", "application/json", []byte(`[]`), "If-Match", "v2")
	if code != 409 || errCode(b) != "version_conflict" || h.Get("ETag") != `"v4"` || !bytes.Contains(b, []byte(`"current_version":4`)) {
		t.Fatalf("stale patch: %d %v %s", code, h, b)
	}
	code, h, b = a.do("GET", "/threads/"+tid+"/state", "", nil)
	if code != 200 || h.Get("X-Relay-Version") != "4" || !bytes.Contains(b, []byte(`"f1"`)) {
		t.Fatalf("state %d %s", code, b)
	}
	if code, _, _ := a.do("GET", "/threads/"+tid+"/state", "", nil, "If-None-Match", `"v4"`); code != 304 {
		t.Errorf("If-None-Match: %d", code)
	}
	code, _, b = a.do("GET", "/threads/"+tid+"/state?version=1", "", nil)
	if code != 200 || bytes.Contains(b, []byte(`"f1"`)) || !bytes.Contains(b, []byte(`"version":1`)) {
		t.Fatalf("state v1 %d %s", code, b)
	}
	code, h, b = a.do("GET", "/threads/"+tid+"/state/header", "", nil)
	if code != 200 || h.Get("ETag") != `"v4"` || !bytes.Contains(b, []byte(`"facts"`)) || len(b) > 2049 {
		t.Fatalf("header %d %s", code, b)
	}
	code, _, b = a.do("GET", "/threads/"+tid+"/state/versions?after=1", "", nil)
	if code != 200 || !bytes.Contains(b, []byte(`"author":"bob"`)) || !bytes.Contains(b, []byte(`"current_version":4`)) {
		t.Fatalf("versions %d %s", code, b)
	}
	// Artifacts: raw body and JSON forms, dedupe, raw download.
	code, h, b = a.do("POST", "/threads/"+tid+"/artifacts?name=a.md&created_by=me", "text/markdown", []byte("# A\nbody\n"))
	var art memory.Artifact
	json.Unmarshal(b, &art)
	if code != 201 || art.Type != "markdown" || art.Provenance.CreatedBy != "me" || h.Get("Location") == "" {
		t.Fatalf("put raw %d %s", code, b)
	}
	code, _, b = a.do("POST", "/threads/"+tid+"/artifacts", "application/json", []byte(`{"name":"same.md","content":"# A\nbody\n"}`))
	if code != 200 || !bytes.Contains(b, []byte(`"deduplicated":true`)) || !bytes.Contains(b, []byte(art.Ref)) {
		t.Fatalf("dedupe %d %s", code, b)
	}
	code, _, b = a.do("POST", "/threads/"+tid+"/artifacts", "application/json", []byte(`{"type":"binary","content_base64":"AAECAw=="}`))
	if code != 201 || !bytes.Contains(b, []byte(`"size":4`)) {
		t.Fatalf("put base64 %d %s", code, b)
	}
	code, h, b = a.do("GET", "/threads/"+tid+"/artifacts/"+art.Ref+"?raw=1", "", nil)
	if code != 200 || string(b) != "# A\nbody\n" || h.Get("ETag") != `"`+art.Hash+`"` || !strings.HasPrefix(h.Get("Content-Type"), "text/markdown") {
		t.Fatalf("raw %d %v %q", code, h, b)
	}
	if code, _, b := a.do("GET", "/threads/"+tid+"/artifacts/"+art.Ref, "", nil); code != 200 || !bytes.Contains(b, []byte(`"preview"`)) {
		t.Fatalf("meta %d %s", code, b)
	}
	if code, _, b := a.do("GET", "/threads/"+tid+"/artifacts?type=binary", "", nil); code != 200 || bytes.Count(b, []byte(`"ref"`)) != 1 {
		t.Fatalf("list %d %s", code, b)
	}
	code, _, b = a.do("GET", "/threads/"+tid+"/events?after=0&limit=3", "", nil)
	var evs struct {
		Events []memory.Event `json:"events"`
		LastID int64          `json:"last_id"`
	}
	json.Unmarshal(b, &evs)
	if code != 200 || len(evs.Events) != 3 || evs.Events[0].Type != "thread.created" || evs.LastID != evs.Events[2].ID {
		t.Fatalf("events %d %s", code, b)
	}
}

// Names are unique per store: a taken name is a 409 naming the thread that has it, unless the
// request says to reuse it (200) or take the next free name (201).
func TestThreadNames(t *testing.T) {
	a := newTestAPI(t, "")
	code, _, b := a.do("POST", "/threads", "application/json", []byte(`{"name":"demo"}`))
	var demo memory.Thread
	if json.Unmarshal(b, &demo) != nil || code != 201 {
		t.Fatalf("create demo: %d %s", code, b)
	}
	code, _, b = a.do("POST", "/threads", "application/json", []byte(`{"name":"demo"}`))
	var e struct {
		Error struct {
			Code     string `json:"code"`
			Message  string `json:"message"`
			ThreadID string `json:"thread_id"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil || code != 409 || e.Error.Code != "name_taken" || e.Error.ThreadID != demo.ID || !strings.Contains(e.Error.Message, demo.ID) {
		t.Fatalf("a second demo: %d %s", code, b)
	}
	code, _, b = a.do("POST", "/threads", "application/json", []byte(`{"name":"demo","if_name_taken":"reuse"}`))
	if code != 200 || !bytes.Contains(b, []byte(demo.ID)) || !bytes.Contains(b, []byte(`"reused":true`)) {
		t.Fatalf("reuse demo: %d %s", code, b)
	}
	code, _, b = a.do("POST", "/threads", "application/json", []byte(`{"name":"demo","if_name_taken":"next"}`))
	if code != 201 || !bytes.Contains(b, []byte(`"name":"demo (2)"`)) {
		t.Fatalf("next after demo: %d %s", code, b)
	}
	if code, _, b = a.do("POST", "/threads", "application/json", []byte(`{"name":"demo","if_name_taken":"error"}`)); code != 409 {
		t.Fatalf("if_name_taken error: %d %s", code, b)
	}
	if code, _, b = a.do("POST", "/threads", "application/json", []byte(`{"name":"demo","if_name_taken":"maybe"}`)); code != 400 || errCode(b) != "bad_request" {
		t.Fatalf("unknown if_name_taken: %d %s", code, b)
	}
}

func TestBadInput(t *testing.T) {
	a := newTestAPI(t, "")
	tid := a.newThread()
	unknown := "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
	big := bytes.Repeat([]byte(" "), MaxJSONBody+10)
	cases := []struct {
		name, method, path, ctype string
		body                      []byte
		hdr                       []string
		status                    int
		code                      string
	}{
		{"malformed thread json", "POST", "/threads", "application/json", []byte(`{"name":`), nil, 400, "bad_request"},
		{"wrong type name", "POST", "/threads", "application/json", []byte(`{"name":5}`), nil, 400, "bad_request"},
		{"name too long", "POST", "/threads", "application/json", []byte(`{"name":"` + strings.Repeat("n", 300) + `"}`), nil, 400, "bad_request"},
		{"thread body too large", "POST", "/threads", "application/json", bytes.Repeat([]byte("x"), MaxThreadBody+1), nil, 413, "too_large"},
		{"unknown thread", "GET", "/threads/" + unknown, "", nil, nil, 404, "not_found"},
		{"bad thread id", "GET", "/threads/not-a-uuid/state", "", nil, nil, 400, "bad_request"},
		{"unknown version", "GET", "/threads/" + tid + "/state?version=99", "", nil, nil, 404, "not_found"},
		{"bad version", "GET", "/threads/" + tid + "/state?version=x", "", nil, nil, 400, "bad_request"},
		{"malformed patch", "POST", "/threads/" + tid + "/state/patch", "application/json", []byte(`[{"op":`), nil, 400, "bad_request"},
		{"empty patch body", "POST", "/threads/" + tid + "/state/patch", "application/json", nil, nil, 400, "bad_request"},
		{"patch not array", "POST", "/threads/" + tid + "/state/patch", "application/json", []byte(`"x"`), nil, 400, "invalid_patch"},
		{"bad pointer", "POST", "/threads/" + tid + "/state/patch", "application/json", []byte(`[{"op":"add","path":"facts","value":1}]`), nil, 400, "invalid_patch"},
		{"missing member", "POST", "/threads/" + tid + "/state/patch", "application/json", []byte(`[{"op":"remove","path":"/nope/x"}]`), nil, 400, "invalid_patch"},
		{"wrong value type", "POST", "/threads/" + tid + "/state/patch", "application/json", []byte(`[{"op":"add","path":"/facts/-","value":"str"}]`), nil, 400, "invalid_state"},
		{"failed test op", "POST", "/threads/" + tid + "/state/patch", "application/json", []byte(`[{"op":"test","path":"/facts","value":[1]}]`), nil, 409, "test_failed"},
		{"bad If-Match", "POST", "/threads/" + tid + "/state/patch", "application/json", []byte(`[]`), []string{"If-Match", "seven"}, 400, "bad_request"},
		{"stale If-Match", "POST", "/threads/" + tid + "/state/patch", "application/json", []byte(`[]`), []string{"If-Match", "v9"}, 409, "version_conflict"},
		{"patch too large", "POST", "/threads/" + tid + "/state/patch", "application/json", big, nil, 413, "too_large"},
		{"patch unknown thread", "POST", "/threads/" + unknown + "/state/patch", "application/json", []byte(`[]`), nil, 404, "not_found"},
		{"artifact unknown thread", "POST", "/threads/" + unknown + "/artifacts", "text/plain", []byte("x"), nil, 404, "not_found"},
		{"artifact bad type", "POST", "/threads/" + tid + "/artifacts?type=pdf", "text/plain", []byte("x"), nil, 400, "bad_request"},
		{"artifact json without content", "POST", "/threads/" + tid + "/artifacts", "application/json", []byte(`{"name":"x"}`), nil, 400, "bad_request"},
		{"artifact bad base64", "POST", "/threads/" + tid + "/artifacts", "application/json", []byte(`{"content_base64":"!!"}`), nil, 400, "bad_request"},
		{"artifact too large", "POST", "/threads/" + tid + "/artifacts", "application/octet-stream", make([]byte, MaxArtifactBody+1), nil, 413, "too_large"},
		{"unknown ref", "GET", "/threads/" + tid + "/artifacts/01a2009722c816508ba33af7e4", "", nil, nil, 404, "not_found"},
		{"path traversal", "GET", "/threads/" + tid + "/artifacts/../../etc", "", nil, nil, 400, "bad_request"},
		{"bad ref syntax", "GET", "/threads/" + tid + "/artifacts/xyz", "", nil, nil, 400, "bad_request"},
		{"bad events after", "GET", "/threads/" + tid + "/events?after=-1", "", nil, nil, 400, "bad_request"},
		{"bad limit", "GET", "/threads?limit=5000", "", nil, nil, 400, "bad_request"},
		{"bad Last-Event-ID", "GET", "/threads/" + tid + "/events/stream", "", nil, []string{"Last-Event-ID", "abc"}, 400, "bad_request"},
		{"unknown route", "GET", "/nope", "", nil, nil, 404, "not_found"},
		{"wrong method", "DELETE", "/threads/" + tid + "/state", "", nil, nil, 405, "method_not_allowed"},
		{"wrong method on patch", "GET", "/threads/" + tid + "/state/patch", "", nil, nil, 405, "method_not_allowed"},
		{"cross-site write", "POST", "/threads", "application/json", []byte(`{}`), []string{"Origin", "http://evil.example"}, 403, "forbidden"},
		{"rebinding host", "GET", "/threads", "", nil, []string{"Host", "evil.example"}, 403, "forbidden"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, a.srv.URL+c.path, bytes.NewReader(c.body))
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			for i := 0; i+1 < len(c.hdr); i += 2 {
				req.Header.Set(c.hdr[i], c.hdr[i+1])
				if c.hdr[i] == "Host" {
					req.Host = c.hdr[i+1]
				}
			}
			resp, err := a.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || errCode(b) != c.code {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, b, c.status, c.code)
			}
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Errorf("error Content-Type %q", resp.Header.Get("Content-Type"))
			}
		})
	}
	// Nothing above changed the thread.
	if code, _, b := a.do("GET", "/threads/"+tid, "", nil); code != 200 || !bytes.Contains(b, []byte(`"version":1`)) {
		t.Errorf("bad input changed the thread: %s", b)
	}
}

func TestAuth(t *testing.T) {
	a := newTestAPI(t, "s3cret")
	get := func(path, auth string) int {
		req, _ := http.NewRequest("GET", a.srv.URL+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := a.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 401 && (errCode(b) != "unauthorized" || resp.Header.Get("WWW-Authenticate") == "") {
			t.Errorf("401 without the error body or challenge: %s", b)
		}
		return resp.StatusCode
	}
	cases := []struct {
		path, auth string
		want       int
	}{
		{"/health", "", 200},
		{"/threads", "", 401},
		{"/threads", "Bearer wrong", 401},
		{"/threads", "Bearer s3cret2", 401},
		{"/threads", "Basic s3cret", 401},
		{"/threads", "Bearer s3cret", 200},
		{"/threads", "bearer s3cret", 200},
		{"/version", "", 401},
	}
	for _, c := range cases {
		if got := get(c.path, c.auth); got != c.want {
			t.Errorf("GET %s with %q: %d, want %d", c.path, c.auth, got, c.want)
		}
	}
	tid := a.newThread()
	if got := get("/threads/"+tid+"/events/stream?access_token=wrong", ""); got != 401 {
		t.Errorf("stream with wrong access_token: %d", got)
	}
}

// TestConcurrentWriters: 8 writers x 500 patches, each stating its base version. Every
// accepted patch is in the final state exactly once; every refused one got 409.
func TestConcurrentWriters(t *testing.T) {
	a := newTestAPI(t, "")
	tid := a.newThread()
	const writers, each = 8, 500
	var mu sync.Mutex
	accepted, refused := map[string]bool{}, 0
	var wg sync.WaitGroup
	client := a.srv.Client()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := 1
			for i := 0; i < each; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				body := `[{"op":"add","path":"/facts/-","value":{"id":"` + id + `","key":"k","value":1}}]`
				req, _ := http.NewRequest("POST", a.srv.URL+"/threads/"+tid+"/state/patch", strings.NewReader(body))
				req.Header.Set("If-Match", fmt.Sprintf("v%d", base))
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var r struct {
					Version int `json:"version"`
					Error   struct {
						Code           string `json:"code"`
						CurrentVersion int    `json:"current_version"`
					} `json:"error"`
				}
				json.Unmarshal(b, &r)
				mu.Lock()
				switch {
				case resp.StatusCode == 200:
					accepted[id] = true
					base = r.Version
				case resp.StatusCode == 409 && r.Error.Code == "version_conflict" && r.Error.CurrentVersion > 0:
					refused++
					base = r.Error.CurrentVersion // rebase on what the server says
				default:
					t.Errorf("unexpected %d %s", resp.StatusCode, b)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	_, _, b := a.do("GET", "/threads/"+tid+"/state", "", nil)
	var doc struct {
		Version int                   `json:"version"`
		Facts   []struct{ ID string } `json:"facts"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, f := range doc.Facts {
		count[f.ID]++
	}
	for id := range accepted {
		if count[id] != 1 {
			t.Errorf("accepted patch %s is in the state %d times", id, count[id])
		}
	}
	if len(doc.Facts) != len(accepted) || doc.Version != len(accepted)+1 || len(accepted)+refused != writers*each {
		t.Fatalf("facts %d, accepted %d, refused %d, version %d", len(doc.Facts), len(accepted), refused, doc.Version)
	}
	t.Logf("%d accepted, %d refused with 409", len(accepted), refused)
}

func TestEventStreamResume(t *testing.T) {
	a := newTestAPI(t, "")
	tid := a.newThread()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	read := func(lastID string, n int) []memory.Event {
		req, _ := http.NewRequestWithContext(ctx, "GET", a.srv.URL+"/threads/"+tid+"/events/stream", nil)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := a.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("Content-Type %q", ct)
		}
		var out []memory.Event
		sc := bufio.NewScanner(resp.Body)
		var id, typ string
		for sc.Scan() && len(out) < n {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = line[4:]
			case strings.HasPrefix(line, "event: "):
				typ = line[7:]
			case strings.HasPrefix(line, "data: "):
				var e memory.Event
				if err := json.Unmarshal([]byte(line[6:]), &e); err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(e.ID) != id || e.Type != typ {
					t.Fatalf("frame id/event %s/%s do not match data %+v", id, typ, e)
				}
				out = append(out, e)
			}
		}
		return out
	}
	// Live: the stream is open before the patches happen.
	got := make(chan []memory.Event)
	go func() { got <- read("", 3) }()
	time.Sleep(200 * time.Millisecond)
	for i := 2; i <= 3; i++ {
		if code, _, b := a.do("POST", "/threads/"+tid+"/state/patch", "application/json", []byte(`[]`), "If-Match", fmt.Sprintf("v%d", i-1)); code != 200 {
			t.Fatalf("patch %d %s", code, b)
		}
	}
	first := <-got
	if len(first) != 3 || first[0].Type != "thread.created" || first[2].Type != "state.patched" {
		t.Fatalf("live events %+v", first)
	}
	a.do("POST", "/threads/"+tid+"/artifacts", "text/plain", []byte("x"))
	// Resume after the second event: exactly the third and the fourth, no gaps or repeats.
	resumed := read(fmt.Sprint(first[1].ID), 2)
	if len(resumed) != 2 || resumed[0].ID != first[2].ID || resumed[1].Type != "artifact.stored" {
		t.Fatalf("resumed %+v", resumed)
	}
}
