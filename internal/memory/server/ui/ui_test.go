package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func get(t *testing.T, method, target string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, req)
	return rec.Result()
}

func TestServesIndexWithSecurityHeaders(t *testing.T) {
	res := get(t, "GET", "/ui/", nil)
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type %q", ct)
	}
	if !strings.Contains(string(body), `<script type="module" src="app.js">`) {
		t.Errorf("index.html does not load app.js:\n%s", body)
	}
	for h, want := range map[string]string{
		"X-Frame-Options":        "DENY",
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "no-referrer",
	} {
		if got := res.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	csp := res.Header.Get("Content-Security-Policy")
	for _, d := range []string{"frame-ancestors 'none'", "script-src 'self'", "default-src 'none'", "connect-src 'self'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("CSP %q lacks %q", csp, d)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP allows unsafe sources: %q", csp)
	}
}

func TestPathsAndMethods(t *testing.T) {
	tests := []struct {
		method, path string
		status       int
		ctype        string
	}{
		{"GET", "/ui/app.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/ui/style.css", 200, "text/css; charset=utf-8"},
		{"GET", "/ui/favicon.svg", 200, "image/svg+xml"},
		{"GET", "/ui/index.html", 200, "text/html; charset=utf-8"},
		{"HEAD", "/ui/diff.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/app.js", 200, "text/javascript; charset=utf-8"}, // prefix already stripped
		{"GET", "/ui/nope.js", 404, ""},
		{"GET", "/ui/../ui.go", 404, ""},
		{"GET", "/ui/%2e%2e/ui.go", 404, ""},
		{"GET", "/ui/static/app.js", 404, ""},
		{"POST", "/ui/", 405, ""},
		{"DELETE", "/ui/app.js", 405, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			res := get(t, tt.method, tt.path, nil)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.status)
			}
			if tt.ctype != "" && res.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type %q, want %q", res.Header.Get("Content-Type"), tt.ctype)
			}
			if res.Header.Get("X-Frame-Options") != "DENY" {
				t.Errorf("missing X-Frame-Options on a %d", res.StatusCode)
			}
			if tt.status == 405 && res.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow %q", res.Header.Get("Allow"))
			}
		})
	}
}

func TestRedirectsBarePrefix(t *testing.T) {
	res := get(t, "GET", "/ui", nil)
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/ui/" {
		t.Fatalf("got %d Location=%q", res.StatusCode, res.Header.Get("Location"))
	}
}

func TestETagRevalidation(t *testing.T) {
	first := get(t, "GET", "/ui/app.js", nil)
	etag := first.Header.Get("ETag")
	if etag == "" || first.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q Cache-Control %q", etag, first.Header.Get("Cache-Control"))
	}
	again := get(t, "GET", "/ui/app.js", map[string]string{"If-None-Match": etag})
	if again.StatusCode != http.StatusNotModified {
		t.Fatalf("status %d, want 304", again.StatusCode)
	}
	other := get(t, "GET", "/ui/style.css", nil).Header.Get("ETag")
	if other == etag {
		t.Errorf("two files share ETag %s", etag)
	}
}

// Every file the UI references (script src, link href, ES module imports) is embedded.
func TestReferencedFilesExist(t *testing.T) {
	names := Files()
	refs := regexp.MustCompile(`(?:src|href)="([^"#:]+)"|from "\./([^"]+)"`)
	for _, n := range names {
		if !strings.HasSuffix(n, ".html") && !strings.HasSuffix(n, ".js") {
			continue
		}
		for _, m := range refs.FindAllStringSubmatch(string(files()[n].data), -1) {
			ref := m[1] + m[2]
			if !slices.Contains(names, ref) {
				t.Errorf("%s references %q, which is not embedded", n, ref)
			}
		}
	}
}

// The UI must never turn daemon data into markup: no innerHTML/outerHTML/insertAdjacentHTML,
// document.write, eval or new Function in any script, and no inline script or handler in HTML.
func TestNoHTMLInjectionSinks(t *testing.T) {
	sinks := regexp.MustCompile(`\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function\(`)
	inline := regexp.MustCompile(`<script>|<script [^>]*>[^<]|\son[a-z]+="|javascript:`)
	for _, n := range Files() {
		src := string(files()[n].data)
		if strings.HasSuffix(n, ".js") {
			if loc := sinks.FindStringIndex(src); loc != nil {
				t.Errorf("%s uses an HTML sink: %q", n, src[loc[0]:loc[1]])
			}
		}
		if strings.HasSuffix(n, ".html") {
			if loc := inline.FindStringIndex(src); loc != nil {
				t.Errorf("%s has inline script/handler (blocked by CSP anyway): %q", n, src[loc[0]:loc[1]])
			}
		}
	}
}

// Any request path either serves one of the embedded files (with its own bytes) or is a
// clean 3xx/404: never a panic, a 500, or something outside static/.
func FuzzHandlerPath(f *testing.F) {
	for _, s := range []string{"/ui/", "/ui", "/ui/app.js", "/ui/../ui.go", "/ui//style.css", "/ui/%2e%2e/x", "/ui/./index.html", "/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		req, err := http.NewRequest("GET", "http://127.0.0.1"+p, nil)
		if err != nil || req.URL.Path == "" {
			return
		}
		rec := httptest.NewRecorder()
		Handler().ServeHTTP(rec, req)
		switch rec.Code {
		case 200:
			body := rec.Body.Bytes()
			for _, fl := range files() {
				if string(fl.data) == string(body) {
					return
				}
			}
			t.Fatalf("%q served bytes that are not an embedded file", p)
		case 301, 404:
		default:
			t.Fatalf("%q: status %d", p, rec.Code)
		}
	})
}
