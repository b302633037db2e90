package attack

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A client of the daemon's API that is not the user: another process
// without the token, a web page in the user's browser (cross-site form
// posts, DNS rebinding), or a client sending oversized bodies.
func TestAPIHostileClients(t *testing.T) {
	s := newSandbox(t)
	d := startDaemon(t, s)
	tid := d.NewThread(t, "api")

	// The token: every route but /health refuses a request without the right one.
	badAuth := []struct{ name, header string }{
		{"none", ""},
		{"empty bearer", "Bearer "},
		{"wrong", "Bearer relay_0000000000000000000000000000000000000000000000000000000000000000"},
		{"prefix of the token", "Bearer " + d.Token[:len(d.Token)-1]},
		{"token plus a byte", "Bearer " + d.Token + "x"},
		{"basic auth", "Basic " + d.Token},
		{"token without scheme", d.Token},
		{"token with a NUL", "Bearer " + d.Token[:10] + "\x00" + d.Token[11:]},
	}
	routes := []struct{ method, path, body string }{
		{"GET", "/threads", ""},
		{"GET", "/threads/" + tid + "/state", ""},
		{"POST", "/threads", `{"name":"x"}`},
		{"POST", "/threads/" + tid + "/state/patch", `[]`},
		{"GET", "/threads/" + tid + "/export", ""},
		{"POST", "/import", "PK"},
		{"POST", "/cap/invoke", `{}`},
		{"GET", "/status", ""},
	}
	client := &http.Client{Timeout: time.Minute}
	for _, a := range badAuth {
		for _, rt := range routes {
			req, _ := http.NewRequest(rt.method, d.URL+rt.path, strings.NewReader(rt.body))
			if a.header != "" {
				req.Header["Authorization"] = []string{a.header}
			}
			resp, err := client.Do(req)
			if err != nil {
				// net/http refuses to send a header with a NUL: also a refusal
				continue
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s with %s: status %d, want 401", rt.method, rt.path, a.name, resp.StatusCode)
			}
		}
	}
	// the token in the query string counts only for EventSource's stream
	if st, _ := d.Do(t, "GET", "/threads?access_token="+d.Token, nil, "Authorization", ""); st == http.StatusOK {
		t.Errorf("?access_token= opened /threads")
	}

	// Browsers: a page elsewhere cannot change data (CSRF) or rebind a name to 127.0.0.1.
	browser := []struct {
		name   string
		header []string
		want   int
	}{
		{"cross-site fetch", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"foreign origin", []string{"Origin", "https://evil.example"}, 403},
		{"null origin", []string{"Origin", "null"}, 403},
		{"origin with the right port on another name", []string{"Origin", strings.Replace(d.URL, "127.0.0.1", "evil.example", 1)}, 403},
		{"rebound host name", []string{"Host", "evil.example"}, 403},
		{"rebound host with port", []string{"Host", "evil.example:80"}, 403},
		{"rebound subdomain of a real name", []string{"Host", "127.0.0.1.evil.example"}, 403},
	}
	for _, b := range browser {
		req, _ := http.NewRequest("POST", d.URL+"/threads", strings.NewReader(`{"name":"csrf"}`))
		req.Header.Set("Authorization", "Bearer "+d.Token) // even with the token (a stolen cookie would be no better)
		req.Header.Set("Content-Type", "text/plain")
		for i := 0; i+1 < len(b.header); i += 2 {
			if b.header[i] == "Host" {
				req.Host = b.header[i+1]
			} else {
				req.Header.Set(b.header[i], b.header[i+1])
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != b.want {
			t.Errorf("%s: status %d, want %d", b.name, resp.StatusCode, b.want)
		}
	}

	// Bodies are bounded: an oversized import or patch is refused without being kept.
	big := bytes.Repeat([]byte("A"), 71<<20)
	if st, b := d.Do(t, "POST", "/import", bytes.NewReader(big), "Content-Type", "application/zip"); st != http.StatusRequestEntityTooLarge {
		t.Errorf("71 MB import: %d %s", st, b)
	}
	if st, b := d.Do(t, "POST", "/threads/"+tid+"/state/patch", io.LimitReader(bytes.NewReader(big), 2<<20), "Content-Type", "application/json"); st != http.StatusRequestEntityTooLarge {
		t.Errorf("2 MB patch: %d %s", st, b)
	}
	// Raw artifact bytes never render as a page in the daemon's origin.
	st, b := d.Do(t, "POST", "/threads/"+tid+"/artifacts?name=page.html&type=html",
		strings.NewReader("<script>fetch('/threads')</script>"), "Content-Type", "application/octet-stream")
	if st >= 300 {
		t.Fatalf("put html: %d %s", st, b)
	}
	var ref struct {
		Ref string `json:"ref"`
	}
	_ = jsonUnmarshal(b, &ref)
	req, _ := http.NewRequest("GET", d.URL+"/threads/"+tid+"/artifacts/"+ref.Ref+"?raw=1", nil)
	req.Header.Set("Authorization", "Bearer "+d.Token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if ct := h.Get("Content-Type"); strings.Contains(ct, "html") || h.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.Contains(h.Get("Content-Security-Policy"), "sandbox") || !strings.HasPrefix(h.Get("Content-Disposition"), "attachment") {
		t.Errorf("an HTML artifact is served as %q with %v", ct, h)
	}
}

// Other local users: the token and the store are readable only by the user.
func TestLocalFileModes(t *testing.T) {
	s := newSandbox(t)
	startDaemon(t, s)
	for _, f := range []struct {
		path string
		mask os.FileMode
	}{
		{s.Relay, 0o077},
		{filepath.Join(s.Relay, "config.json"), 0o077},
		{filepath.Join(s.Relay, "daemon.json"), 0o077},
		{filepath.Join(s.Relay, "daemon.log"), 0o077},
	} {
		fi, err := os.Stat(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&f.mask != 0 {
			t.Errorf("%s is mode %04o: other users can read it", f.path, fi.Mode().Perm())
		}
	}
}

// TestStoreSecretsRedacted (issue 22 row 14): a store URL's secret (the
// password, sslpassword, a password in options, the libpq keyword form) is
// never printed by up, doctor or status, nor written to daemon.log.
func TestStoreSecretsRedacted(t *testing.T) {
	for i, store := range []string{
		"postgres://relay:hunter2@127.0.0.1:1/relay",
		"postgres://relay@127.0.0.1:1/relay?sslpassword=hunter2",
		"postgres://relay@127.0.0.1:1/relay?options=-c%20password%3Dhunter2",
		"host=127.0.0.1 port=1 user=relay password=hunter2 dbname=relay",
		"host=127.0.0.1 port=1 options='-c password=hunter2'",
	} {
		t.Run(fmt.Sprint("form ", i), func(t *testing.T) { // the name becomes a temp path: no secret in it
			t.Parallel()
			s := newSandbox(t)
			s.Env = append(s.Env, "RELAY_STORE="+store, "RELAY_URL=")
			var out strings.Builder
			for _, args := range [][]string{{"up", "--port", "1"}, {"doctor"}, {"status"}} {
				r := s.Run("", args...)
				out.WriteString(r.Stdout + r.Stderr)
			}
			if b, err := os.ReadFile(filepath.Join(s.Relay, "daemon.log")); err == nil {
				out.Write(b)
			}
			if strings.Contains(out.String(), "hunter2") {
				t.Errorf("the store's secret was printed or logged:\n%s", out.String())
			}
		})
	}
}
