package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/memory/sqlite"

	"github.com/relaydev/relay/internal/memory"
)

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"v7", `"v7"`, `W/"v7"`, "7", "", "v", "v-1", "v0", "V12", " v3 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := parseVersion(s)
		if ok && n < 1 {
			t.Fatalf("%q parsed as %d", s, n)
		}
	})
}

// FuzzRequests: no body, header or query makes a handler answer 5xx or a non-JSON error.
func FuzzRequests(f *testing.F) {
	st, err := sqlite.OpenSQLite(f.TempDir(), sqlite.Options{Sync: "normal"})
	if err != nil {
		f.Fatal(err)
	}
	defer st.Close()
	s := New(Options{Store: st})
	defer s.Close()
	h := s.Handler()
	th, _ := st.CreateThread(f.Context(), memory.CreateThreadParams{})
	f.Add("POST", "/state/patch", `[{"op":"add","path":"/facts/-","value":{"id":"a","key":"k","value":1}}]`, "v1", "application/json")
	f.Add("POST", "/state/patch", `{"patch":[{"op":"move","from":"/facts","path":"/facts/0"}],"expected_version":1}`, "", "application/json")
	f.Add("POST", "/artifacts?type=json&name=x.json", `{"a":1}`, "", "text/plain")
	f.Add("POST", "/artifacts", `{"content_base64":"AA=="}`, "", "application/json")
	f.Add("GET", "/state?version=0", "", "", "")
	f.Add("GET", "/events?after=1&limit=5", "", "", "")
	f.Fuzz(func(t *testing.T, method, suffix, body, ifMatch, ctype string) {
		if method != "GET" && method != "POST" {
			method = "POST"
		}
		if strings.Contains(suffix, "/events/stream") {
			return // streams never end on their own
		}
		req, err := http.NewRequest(method, "http://127.0.0.1/threads/"+th.ID+suffix, bytes.NewBufferString(body))
		if err != nil {
			return
		}
		req.Header.Set("If-Match", ifMatch)
		req.Header.Set("Content-Type", ctype)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, suffix, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && !strings.Contains(rec.Body.String(), `"error":{"code":`) {
			t.Fatalf("%d without a JSON error body: %s", rec.Code, rec.Body)
		}
	})
}
