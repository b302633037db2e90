package server

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAllowedHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:7474":        true,
		"127.0.0.1":             true,
		"[::1]:7474":            true,
		"localhost:7474":        true,
		"LOCALHOST":             true,
		"relay.localhost:7474":  true,
		"192.168.1.20:7474":     true,
		"":                      true,
		"evil.example:7474":     false,
		"evil.example":          false,
		"localhost.evil.com":    false,
		"127.0.0.1.nip.io:7474": false,
		"example.com":           false,
	} {
		if got := AllowedHost(host); got != want {
			t.Errorf("AllowedHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestBrowserGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h := browserGuard(ok)

	req := httptest.NewRequest("GET", "/threads", nil)
	req.Host = "127.0.0.1:7474"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNoContent {
		t.Fatalf("loopback request: status %d", rec.Code)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("API CSP = %q", csp)
	}
	if rec.Header().Get("X-Frame-Options") != "DENY" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("missing headers: %v", rec.Header())
	}

	req = httptest.NewRequest("GET", "/threads", nil)
	req.Host = "rebind.evil.example:7474"
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `"code":"forbidden"`) || !strings.Contains(rec.Body.String(), "DNS-rebinding") {
		t.Fatalf("rebinding host: status %d body %s", rec.Code, rec.Body)
	}
}

// The UI is mounted, public (no token for static files), and the API behind it still needs one.
func TestUIMountedThroughServer(t *testing.T) {
	s := New(Options{Store: nil, Token: "secret"})
	srv := httptest.NewServer(browserGuard(s.Handler()))
	defer srv.Close()

	res, err := http.Get(srv.URL + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /ui/: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if !strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("UI CSP = %q", res.Header.Get("Content-Security-Policy"))
	}

	res, err = http.Get(srv.URL + "/ui/app.js")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET /ui/app.js: %d", res.StatusCode)
	}

	res, err = http.Post(srv.URL+"/ui/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == 200 {
		t.Errorf("POST /ui/ succeeded")
	}

	res, err = http.Get(srv.URL + "/threads")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /threads without token: %d, want 401", res.StatusCode)
	}
}

// AllowedHost never panics, and whatever it accepts is an IP literal, empty, or a localhost name.
func FuzzAllowedHost(f *testing.F) {
	for _, s := range []string{"127.0.0.1:7474", "[::1]:1", "localhost", "a.localhost:1", "evil.example", "", "[", "::1", "1.2.3.4.nip.io"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if !AllowedHost(host) {
			return
		}
		h := host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			h = hh
		}
		h = strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
		if h != "" && net.ParseIP(h) == nil && h != "localhost" && !strings.HasSuffix(h, ".localhost") {
			t.Fatalf("accepted %q", host)
		}
	})
}
