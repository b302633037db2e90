package server

// Web UI mounting and browser-facing protections. The token check and the cross-site refusal
// of state-changing requests live in guard (server.go); this file adds what a browser needs on
// top: the UI at /ui/, response headers that stop framing and content sniffing, and a Host
// check against DNS rebinding.

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/relaydev/relay/internal/memory/server/ui"
)

func (s *Server) uiRoutes() {
	h := ui.Handler()
	s.mux.Handle("GET /ui", h)
	s.mux.Handle("GET /ui/", h)
}

// apiCSP is for every non-UI response: JSON and raw artifact bytes must never run as a page in
// the daemon's origin (an HTML artifact fetched by http.fetch could otherwise script the API).
const apiCSP = "default-src 'none'; frame-ancestors 'none'; sandbox"

// browserGuard sets protective headers on every response and refuses requests whose Host is a
// DNS name other than localhost: a DNS-rebinding page (evil.example resolving to 127.0.0.1)
// sends its own name as Host, while real clients use an IP literal or localhost.
func browserGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if r.URL.Path != "/ui" && !strings.HasPrefix(r.URL.Path, "/ui/") {
			h.Set("Content-Security-Policy", apiCSP)
		}
		if !AllowedHost(r.Host) {
			writeJSON(w, http.StatusForbidden, map[string]any{"error": map[string]any{
				"code": "forbidden",
				"message": fmt.Sprintf("host %q is not allowed: relay answers only to localhost and IP addresses "+
					"(DNS-rebinding protection); use http://127.0.0.1:<port>", r.Host),
			}})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// AllowedHost accepts IP literals (any: a rebinding attack needs a DNS name), localhost and
// *.localhost (which resolve only to loopback), and an empty Host (HTTP/1.0 clients).
// relay mcp --http answers to the same hosts.
func AllowedHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "" {
		return true
	}
	if net.ParseIP(host) != nil {
		return true
	}
	host = strings.ToLower(host)
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}
