// Package server serves a memory.Store over HTTP on loopback: JSON routes with Go 1.22
// method patterns, bearer-token auth, JSON errors, body caps, Server-Sent Events, the web UI,
// capabilities and agent-to-agent messages, and graceful shutdown. docs/api.md is the contract.
//
// Every route is registered by New from the Options it is given; nothing is wired in by a
// package's init, so what a daemon serves is what its caller configured.
package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/relaydev/relay/internal/jsonstream"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/relaydev/relay/internal/memory"
)

// Body caps (docs/api.md).
const (
	MaxThreadBody   = 64 << 10
	MaxJSONBody     = 1 << 20
	MaxArtifactBody = memory.MaxArtifactSize
	MaxArtifactJSON = 70 << 20
	maxAnyBody      = MaxArtifactJSON
)

// Options configure a Server.
type Options struct {
	Store   memory.Store
	Token   string // empty = no auth
	Logger  *slog.Logger
	Version string
	// Home is $RELAY_HOME (for routes that need files there); may be empty in tests.
	Home string
	// Capabilities configures /cap/*, /a2a, reports and export/import; the zero value is
	// the defaults. Validate it with CapabilityOptions.Validate before serving.
	Capabilities CapabilityOptions
}

// Server is the daemon's HTTP handler.
type Server struct {
	store   memory.Store
	token   []byte
	log     *slog.Logger
	version string
	home    string
	started time.Time
	mux     *http.ServeMux

	doneOnce sync.Once
	done     chan struct{} // closed at shutdown so SSE streams end
	url      string

	// saved returns a thread's tokens avoided as stats compute it (set by the report
	// layer); headers state that figure in m.saved.
	saved func(ctx context.Context, threadID string) (int64, error)
	// savedNow is saved without computing: the last figure, ok false when none is known yet.
	savedNow func(ctx context.Context, threadID string) (n int64, ok bool, err error)

	codes signinCodes // one-time sign-in codes for the web UI (signin.go)
	idle  *idleWatch  // tells Run when the daemon has gone quiet (idle.go)
}

// New builds a Server with every route: the core API, the web UI and, when it has a store,
// capabilities, agent-to-agent messages, reports and bundles.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := &Server{store: o.Store, token: []byte(o.Token), log: o.Logger, version: o.Version, home: o.Home,
		started: time.Now(), mux: http.NewServeMux(), done: make(chan struct{}), idle: newIdleWatch()}
	s.codes.now = time.Now
	s.routes()
	s.signinRoutes()
	s.uiRoutes()
	if o.Store != nil { // a server without a store (UI tests) has nothing to invoke or export
		s.capabilityRoutes(o.Capabilities)
	}
	s.mux.Handle("/", s.api(s.handleNoRoute))
	return s
}

// Store returns the server's store.
func (s *Server) Store() memory.Store { return s.store }

// Close ends open event streams; call before http.Server.Shutdown.
func (s *Server) Close() { s.doneOnce.Do(func() { close(s.done) }) }

// Handler returns the full middleware chain.
func (s *Server) Handler() http.Handler {
	return s.idle.track(browserGuard(s.recoverer(s.logRequests(s.guard(s.mux)))))
}

func (s *Server) routes() {
	m := s.mux
	m.Handle("GET /health", s.api(s.handleHealth))
	m.Handle("GET /version", s.api(s.handleVersion))
	m.Handle("GET /status", s.api(s.handleStatus))
	m.Handle("POST /threads", s.api(s.handleCreateThread))
	m.Handle("GET /threads", s.api(s.handleListThreads))
	m.Handle("GET /threads/{id}", s.api(s.handleGetThread))
	m.Handle("GET /threads/{id}/state", s.api(s.handleState))
	m.Handle("GET /threads/{id}/state/header", s.api(s.handleHeader))
	m.Handle("POST /threads/{id}/state/patch", s.api(s.handlePatch))
	m.Handle("GET /threads/{id}/state/versions", s.api(s.handleVersions))
	m.Handle("POST /threads/{id}/artifacts", s.api(s.handlePutArtifact))
	m.Handle("POST /threads/{id}/events", s.api(s.handleAppendEvent))
	m.Handle("GET /threads/{id}/artifacts", s.api(s.handleListArtifacts))
	m.Handle("GET /threads/{id}/artifacts/{ref}", s.api(s.handleGetArtifact))
	m.Handle("GET /artifacts/{ref}", s.api(s.handleFindArtifact))
	m.Handle("GET /threads/{id}/events", s.api(s.handleEvents))
	m.Handle("GET /threads/{id}/events/stream", s.api(s.handleStream))
	m.Handle("GET /store/gc", s.api(s.handleGC))
	m.Handle("POST /store/gc", s.api(s.handleGC))
}

// handleNoRoute answers what no pattern matched: 405 with Allow when the path exists for
// other methods (the catch-all pattern hides the mux's own 405), else 404; JSON either way.
func (s *Server) handleNoRoute(w http.ResponseWriter, r *http.Request) error {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pat := s.mux.Handler(probe); pat != "" && pat != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		return &apiError{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
			Msg: fmt.Sprintf("%s is not supported on %s; use %s", r.Method, r.URL.Path, strings.Join(allow, " or "))}
	}
	return notFound("no route %s %s; see docs/api.md", r.Method, r.URL.Path)
}

// apiError is an error with an HTTP status and API code; Extra fields go into the error object.
type apiError struct {
	Status int
	Code   string
	Msg    string
	Extra  map[string]any
}

func (e *apiError) Error() string { return e.Msg }

func badRequest(format string, a ...any) error {
	return &apiError{Status: http.StatusBadRequest, Code: "bad_request", Msg: fmt.Sprintf(format, a...)}
}

func notFound(format string, a ...any) error {
	return &apiError{Status: http.StatusNotFound, Code: "not_found", Msg: fmt.Sprintf(format, a...)}
}

// api adapts a handler that returns an error to http.Handler, writing the JSON error body.
func (s *Server) api(h func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := toAPIError(err)
	if e.Status >= 500 && memory.IsTransient(s.store, err) {
		if r.Context().Err() != nil {
			return
		}
		// The store's database is restarting or unreachable: the client should retry, and
		// the log needs one line, not a stack of 500s.
		s.log.Warn("store unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]any{
			"code": "unavailable", "retry_after": retryAfterSeconds,
			"message": "the store is not answering (its database is restarting or unreachable); retry in a moment. " +
				"A write answered this way may or may not have been applied: read before repeating it"}})
		return
	}
	if e.Status >= 500 && memory.IsFull(s.store, err) {
		// Not relay's failure, and the user can fix it: say where, and that the write was undone.
		s.log.Warn("storage full", "method", r.Method, "path", r.URL.Path, "err", err)
		where := "its data directory"
		if s.store != nil {
			where = s.store.Describe().Location
		}
		writeJSON(w, http.StatusInsufficientStorage, map[string]any{"error": map[string]any{
			"code": "storage_full",
			"message": "relay's storage is full (" + where + "): the write that needed room was undone, nothing of it kept; " +
				"free space on that disk (or raise its quota), then retry"}})
		return
	}
	if e.Status >= 500 {
		if r.Context().Err() != nil {
			return // the client went away; nothing to report
		}
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		e.Msg = "internal error; details are in daemon.log (relay doctor can help)"
	}
	body := map[string]any{"code": e.Code, "message": e.Msg}
	for k, v := range e.Extra {
		body[k] = v
	}
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="relay"`)
	}
	writeJSON(w, e.Status, map[string]any{"error": body})
}

// retryAfterSeconds is the Retry-After of a 503: a restarting database is usually back
// within a second or two.
const retryAfterSeconds = 1

func toAPIError(err error) *apiError {
	var ae *apiError
	var nf *memory.NotFoundError
	var ce *memory.ConflictError
	var ie *memory.InvalidError
	var tl *memory.TooLargeError
	var co *memory.CorruptError
	var nt *memory.NameTakenError
	var mb *http.MaxBytesError
	var nb *memory.NoBucketError
	switch {
	case errors.As(err, &nb):
		return &apiError{Status: http.StatusConflict, Code: "no_bucket", Msg: nb.Error()}
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &mb):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large",
			Msg: fmt.Sprintf("request body is larger than the limit of %d bytes; store big content as an artifact", mb.Limit), Extra: map[string]any{"limit": mb.Limit}}
	case errors.As(err, &nf):
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Msg: nf.Error()}
	case errors.As(err, &ce):
		return &apiError{Status: http.StatusConflict, Code: "version_conflict", Msg: ce.Error(),
			Extra: map[string]any{"current_version": ce.Current, "state_ref": memory.StateRef(ce.Current)}}
	case errors.As(err, &ie):
		st := http.StatusBadRequest
		if ie.Code == "test_failed" {
			st = http.StatusConflict
		}
		e := &apiError{Status: st, Code: ie.Code, Msg: ie.Msg}
		if ie.Op >= 0 {
			e.Extra = map[string]any{"op": ie.Op, "path": ie.Path}
		}
		return e
	case errors.As(err, &nt):
		return &apiError{Status: http.StatusConflict, Code: "name_taken", Msg: nt.Error(), Extra: map[string]any{"thread_id": nt.ThreadID}}
	case errors.As(err, &co):
		// unreadable stored data is not a server failure: say which thread and what
		return &apiError{Status: http.StatusUnprocessableEntity, Code: "corrupt_state", Msg: co.Error()}
	case errors.As(err, &tl):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large", Msg: tl.Error(), Extra: map[string]any{"limit": tl.Limit}}
	}
	return &apiError{Status: http.StatusInternalServerError, Code: "internal", Msg: err.Error()}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"cannot encode response"}}`)
	}
	writeRawJSON(w, status, b)
}

func writeRawJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b)
	w.Write([]byte{'\n'})
}

// decodeJSON decodes a JSON body of at most limit bytes into v; bad JSON is a 400.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return jsonError(decodeJSONFrom(http.MaxBytesReader(w, r.Body, limit), v))
}

// decodeJSONFrom decodes one JSON value from r into v, with nothing after it; the errors of
// encoding/json come back as they are, for jsonError.
func decodeJSONFrom(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return badRequest("request body has data after the JSON value")
	}
	return nil
}

func jsonError(err error) error {
	if err == nil {
		return nil
	}
	var ab *apiError
	var mb *http.MaxBytesError
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var sse *jsonstream.SyntaxError
	switch {
	case errors.As(err, &mb), errors.As(err, &ab):
		return err
	case errors.As(err, &sse):
		return badRequest("malformed JSON at byte %d: %v", sse.Offset, err)
	case errors.As(err, &te):
		return badRequest("field %q must be %s, got %s", te.Field, te.Type.String(), te.Value)
	case errors.As(err, &se):
		return badRequest("malformed JSON at byte %d: %v", se.Offset, err)
	case errors.Is(err, io.EOF):
		return badRequest("request body is empty; send a JSON value")
	}
	return badRequest("malformed JSON: %v", err)
}

// guard enforces the body cap, the token and same-origin state changes.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := int64(maxAnyBody)
		if l := memory.ArtifactLimit(s.store); l > memory.MaxArtifactSize {
			// Raw and JSON uploads and bundles to a store with a bucket; each route caps its own.
			limit = max(limit+l, jsonUploadLimit(l))
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if !safeMethod(r.Method) {
			if why := CrossSite(r); why != "" {
				s.writeError(w, r, &apiError{Status: http.StatusForbidden, Code: "forbidden", Msg: why + " may not change relay data"})
				return
			}
		}
		if len(s.token) > 0 && !s.publicPath(r) && !s.authorized(r) {
			s.writeError(w, r, &apiError{Status: http.StatusUnauthorized, Code: "unauthorized",
				Msg: "missing or wrong API token; send Authorization: Bearer <token> (the \"token\" of the config.json in the daemon's relay home, ~/.relay unless RELAY_HOME is set)"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// publicPath: /health for probes, POST /auth/code (trades a one-time code), and the UI's static files (they hold no data; the UI asks
// for the token before calling the API).
func (s *Server) publicPath(r *http.Request) bool {
	if r.URL.Path == "/health" {
		return true
	}
	if r.Method == http.MethodPost && r.URL.Path == "/auth/code" {
		return true // the one-time code is the credential (signin.go)
	}
	return safeMethod(r.Method) && (r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, "/ui/"))
}

func (s *Server) authorized(r *http.Request) bool {
	if _, ok := bearer(r); !ok && strings.HasSuffix(r.URL.Path, "/events/stream") {
		got := r.URL.Query().Get("access_token") // EventSource cannot set headers
		return subtle.ConstantTimeCompare([]byte(got), s.token) == 1
	}
	return HasToken(r, s.token)
}

// HasToken reports whether r carries Authorization: Bearer token (compared in
// constant time). relay mcp --http checks its callers with it too.
func HasToken(r *http.Request, token []byte) bool {
	got, _ := bearer(r)
	return subtle.ConstantTimeCompare([]byte(got), token) == 1
}

func bearer(r *http.Request) (string, bool) {
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:]), true
	}
	return "", false
}

// CrossSite says why r comes from another site ("cross-site requests",
// "requests from origin X"), or "" when it does not: a browser page must not
// drive relay with the person's own network position.
func CrossSite(r *http.Request) string {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return "cross-site requests"
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		return fmt.Sprintf("requests from origin %s", o)
	}
	return ""
}

type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		level := slog.LevelDebug // success is routine; keep the log about problems
		if sw.status >= 400 {
			level = slog.LevelInfo
		}
		if !s.log.Enabled(r.Context(), level) {
			return // the arguments below cost allocations even when the record is dropped
		}
		s.log.Log(r.Context(), level, "request", "method", r.Method, "path", r.URL.Path, "status", sw.status,
			"bytes", sw.bytes, "ms", float64(time.Since(start).Microseconds())/1000)
	})
}

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				buf := make([]byte, 8<<10)
				buf = buf[:runtime.Stack(buf, false)]
				s.log.Error("panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(buf))
				s.writeError(w, r, fmt.Errorf("panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}
