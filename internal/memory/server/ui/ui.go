// Package ui serves relay's web UI: plain HTML, CSS and ES modules embedded in the binary, so
// running the daemon needs no build step and no download. The UI talks to the daemon's JSON API
// with the bearer token; it holds no server-side state.
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed static
var static embed.FS

// Prefix is where the daemon mounts Handler.
const Prefix = "/ui/"

// ContentSecurityPolicy allows only the UI's own files and same-origin API calls: no inline
// script, no third-party anything, no framing (clickjacking), no form posts elsewhere.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type file struct {
	name    string
	data    []byte
	etag    string
	ctype   string
	modTime time.Time
}

// files is loaded on first use: mime lookups read the system's MIME tables,
// which would otherwise cost every relay command ~2 ms at start-up.
var files = sync.OnceValue(mustLoad)

func mustLoad() map[string]*file {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err)
	}
	out := map[string]*file{}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		ctype := mime.TypeByExtension(path.Ext(p))
		switch path.Ext(p) {
		case ".js", ".mjs":
			ctype = "text/javascript; charset=utf-8" // some systems map .js to application/x-javascript
		case ".svg":
			ctype = "image/svg+xml"
		}
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		out[p] = &file{name: p, data: data, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, ctype: ctype}
		return nil
	})
	if err != nil {
		panic(err)
	}
	return out
}

// Files lists the embedded file names (for tests and diagnostics).
func Files() []string {
	names := make([]string, 0, len(files()))
	for n := range files() {
		names = append(names, n)
	}
	return names
}

// SetSecurityHeaders sets the headers every UI response carries.
func SetSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()")
}

// Handler serves the UI. Mount it at Prefix ("/ui/"); it also accepts paths with the prefix
// already stripped. "/ui" redirects to "/ui/".
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	SetSecurityHeaders(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: the UI is read-only; use GET", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if p == "/ui" {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	}
	p = strings.TrimPrefix(p, "/ui")
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" {
		p = "index.html"
	}
	f, ok := files()[p]
	if !ok {
		http.Error(w, "not found: the UI has no file "+p+"; open /ui/", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", f.ctype)
	w.Header().Set("ETag", f.etag)
	// Revalidate every time: the files change with the binary, and a 304 costs almost nothing.
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, f.name, f.modTime, bytes.NewReader(f.data))
}
