package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/memory/statedoc"
)

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) versionInfo() map[string]any {
	return map[string]any{"version": s.version, "api": "v1", "state_schema": "com.relay.state.v1",
		"go": runtime.Version(), "started_at": memory.Time{Time: s.started},
		"uptime_seconds": time.Since(s.started).Round(time.Millisecond).Seconds()}
}

func (s *Server) handleVersion(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, s.versionInfo())
	return nil
}

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) error {
	out := s.versionInfo()
	st, err := s.store.Stats(r.Context())
	if err != nil && !memory.IsTransient(s.store, err) {
		return err
	}
	if err != nil {
		// The daemon is up and says so; the store's figures wait for its database.
		st.Path = s.store.Describe().Location
		out["store_error"] = "the store is not answering (its database is restarting or unreachable): " + err.Error()
	}
	info := s.store.Describe()
	out["pid"] = os.Getpid()
	out["url"] = s.url
	out["store"] = st
	out["auth"] = len(s.token) > 0
	out["mirror_error"] = info.MirrorError
	if info.Listen != nil {
		out["listen"] = info.Listen
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) handleCreateThread(w http.ResponseWriter, r *http.Request) error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxThreadBody))
	if err != nil {
		return err
	}
	var in struct {
		Name        string `json:"name"`
		IfNameTaken string `json:"if_name_taken"`
	}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &in); err != nil {
			return jsonError(err)
		}
	}
	if in.IfNameTaken == "error" {
		in.IfNameTaken = memory.NameTakenFail
	}
	t, err := s.store.CreateThread(r.Context(), memory.CreateThreadParams{Name: in.Name, IfNameTaken: in.IfNameTaken})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/threads/"+t.ID)
	status := http.StatusCreated
	if t.Reused {
		status = http.StatusOK
	}
	writeJSON(w, status, t)
	return nil
}

// intParam parses an optional non-negative integer query parameter within [0, max].
func intParam(r *http.Request, name string, def, max int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || (max > 0 && n > max) {
		if max > 0 {
			return 0, badRequest("query parameter %s=%q must be an integer between 0 and %d", name, v, max)
		}
		return 0, badRequest("query parameter %s=%q must be a non-negative integer", name, v)
	}
	return n, nil
}

func limitParam(r *http.Request, def int) (int, error) {
	n, err := intParam(r, "limit", int64(def), 1000)
	if err == nil && n == 0 {
		n = int64(def)
	}
	return int(n), err
}

func (s *Server) handleListThreads(w http.ResponseWriter, r *http.Request) error {
	limit, err := limitParam(r, 50)
	if err != nil {
		return err
	}
	ts, err := s.store.ListThreads(r.Context(), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"threads": ts})
	return nil
}

func (s *Server) handleGetThread(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	t, err := s.store.GetThread(r.Context(), id)
	if err != nil {
		return err
	}
	h, err := s.store.Header(r.Context(), id)
	if err != nil {
		return err
	}
	hj, saved, err := s.withSaved(r, id, h.JSON)
	if err != nil {
		return err
	}
	if s.saved != nil {
		t.Metrics.TokensAvoided = saved
	}
	writeJSON(w, http.StatusOK, struct {
		memory.Thread
		Header json.RawMessage `json:"header"`
	}{t, hj})
	return nil
}

func etag(v int) string { return `"` + memory.StateRef(v) + `"` }

// notModified answers 304 when the client already has this version.
func notModified(w http.ResponseWriter, r *http.Request, tag string) bool {
	if m := r.Header.Get("If-None-Match"); m != "" && (m == tag || m == "*") {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	return false
}

func (s *Server) handleState(w http.ResponseWriter, r *http.Request) error {
	var v int64
	if q := r.URL.Query().Get("version"); strings.HasPrefix(q, "v") || strings.HasPrefix(q, "V") {
		n, ok := parseVersion(q)
		if !ok {
			return badRequest("version=%q must name a version like v7", q)
		}
		v = int64(n)
	} else if n, err := intParam(r, "version", 0, 1<<31); err != nil {
		return err
	} else {
		v = n
	}
	st, err := s.store.State(r.Context(), r.PathValue("id"), int(v))
	if err != nil {
		return err
	}
	tag := etag(st.Version)
	w.Header().Set("ETag", tag)
	w.Header().Set("X-Relay-Version", strconv.Itoa(st.Version))
	if notModified(w, r, tag) {
		return nil
	}
	writeRawJSON(w, http.StatusOK, st.Doc)
	return nil
}

func (s *Server) handleHeader(w http.ResponseWriter, r *http.Request) error {
	if q := r.URL.Query().Get("since"); q != "" {
		return s.handleHeaderSince(w, r, q)
	}
	h, err := s.store.Header(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	tag := etag(h.Version)
	w.Header().Set("ETag", tag)
	w.Header().Set("X-Relay-Version", strconv.Itoa(h.Version))
	if h.Truncated {
		w.Header().Set("X-Relay-Truncated", "true")
	}
	hj, err := s.withSavedNow(r, r.PathValue("id"), h.JSON)
	if err != nil {
		return err
	}
	writeRawJSON(w, http.StatusOK, hj)
	return nil
}

// withSaved puts the thread's tokens avoided, as stats compute it, into a full header, so the
// header, stats, reports and the UI state one figure.
func (s *Server) withSaved(r *http.Request, id string, header []byte) ([]byte, int64, error) {
	if s.saved == nil {
		return header, 0, nil
	}
	n, err := s.saved(r.Context(), id)
	if err != nil {
		return nil, 0, err
	}
	b, err := statedoc.WithSaved(header, n)
	return b, n, err
}

// withSavedNow is withSaved for the header: the last figure known, never computed on the
// request (left out until the first one is).
func (s *Server) withSavedNow(r *http.Request, id string, header []byte) ([]byte, error) {
	if s.savedNow == nil {
		return header, nil
	}
	n, _, err := s.savedNow(r.Context(), id)
	if err != nil {
		return nil, err
	}
	return statedoc.WithSaved(header, n)
}

// handleHeaderSince answers ?since=vN with what changed since the header at vN
// ({"since":N,"v":M,…}, X-Relay-Delta: delta), or with the full header (X-Relay-Delta: full)
// when the delta would not be smaller or vN is unknown.
func (s *Server) handleHeaderSince(w http.ResponseWriter, r *http.Request, q string) error {
	since, ok := parseVersion(q)
	if !ok {
		return badRequest("since=%q must name a version like v7", q)
	}
	ch, err := memory.HeaderSince(r.Context(), s.store, r.PathValue("id"), since)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", etag(ch.Version))
	w.Header().Set("X-Relay-Version", strconv.Itoa(ch.Version))
	if ch.Truncated {
		w.Header().Set("X-Relay-Truncated", "true")
	}
	if ch.Delta == nil {
		full, err := s.withSavedNow(r, r.PathValue("id"), ch.Full)
		if err != nil {
			return err
		}
		w.Header().Set("X-Relay-Delta", "full")
		writeRawJSON(w, http.StatusOK, full)
		return nil
	}
	w.Header().Set("X-Relay-Delta", "delta")
	writeRawJSON(w, http.StatusOK, ch.DeltaJSON())
	return nil
}

// parseVersion accepts v7, "v7", W/"v7" and 7.
func parseVersion(s string) (int, bool) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "W/")
	s = strings.Trim(s, `"`)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "v"), "V")
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

func (s *Server) handlePatch(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxJSONBody))
	if err != nil {
		return err
	}
	body = bytes.TrimSpace(body)
	var patch []byte
	expected, author := 0, r.URL.Query().Get("author")
	switch {
	case len(body) == 0:
		return badRequest("request body is empty; send a JSON Patch array like [{\"op\":\"add\",\"path\":\"/facts/-\",\"value\":{…}}]")
	case body[0] == '[':
		if !json.Valid(body) {
			var v any
			return jsonError(json.Unmarshal(body, &v))
		}
		patch = body
	case body[0] == '{':
		var in struct {
			Patch           json.RawMessage `json:"patch"`
			ExpectedVersion *int            `json:"expected_version"`
			Author          string          `json:"author"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return jsonError(err)
		}
		if len(in.Patch) == 0 || in.Patch[0] != '[' {
			return &apiError{Status: http.StatusBadRequest, Code: "invalid_patch", Msg: `body object needs "patch": a JSON Patch array`}
		}
		patch = in.Patch
		if in.ExpectedVersion != nil {
			if *in.ExpectedVersion < 1 {
				return badRequest("expected_version must be a positive integer")
			}
			expected = *in.ExpectedVersion
		}
		if in.Author != "" {
			author = in.Author
		}
	default:
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_patch", Msg: "body must be a JSON Patch array or an object with \"patch\""}
	}
	if q := r.URL.Query().Get("expected_version"); q != "" {
		n, ok := parseVersion(q)
		if !ok {
			return badRequest("expected_version=%q must be a positive integer", q)
		}
		expected = n
	}
	if h := r.Header.Get("If-Match"); h != "" && h != "*" {
		n, ok := parseVersion(h)
		if !ok {
			return badRequest("If-Match %q must name a version like v7", h)
		}
		expected = n
	}
	res, err := s.store.PatchState(r.Context(), id, patch, expected, author)
	if err != nil {
		var ce *memory.ConflictError
		if asConflict(err, &ce) {
			w.Header().Set("ETag", etag(ce.Current))
		}
		return err
	}
	w.Header().Set("ETag", etag(res.Version))
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) handleVersions(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	after, err := intParam(r, "after", 0, 1<<31)
	if err != nil {
		return err
	}
	limit, err := limitParam(r, 100)
	if err != nil {
		return err
	}
	vs, err := s.store.Versions(r.Context(), id, int(after), limit)
	if err != nil {
		return err
	}
	t, err := s.store.GetThread(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"versions": vs, "current_version": t.Version})
	return nil
}

func (s *Server) handlePutArtifact(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	q := r.URL.Query()
	p := memory.PutArtifactParams{Name: q.Get("name"), Type: q.Get("type"), CreatedBy: q.Get("created_by"), Capability: q.Get("capability")}
	if v := q.Get("source_refs"); v != "" {
		p.SourceRefs = strings.Split(v, ",")
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "application/json" {
		body, err := s.readJSONUpload(w, r, &p)
		if err != nil {
			return err
		}
		defer body.Close()
		if sp, ok := s.store.(streamingStore); ok && sp.StreamsBodies() {
			a, err := sp.PutArtifactBody(r.Context(), id, p, body)
			if err != nil {
				return err
			}
			return s.writeArtifactCreated(w, r, id, a)
		}
		if p.Content, err = body.Bytes(); err != nil {
			return err
		}
		p.Sum = body.Sum
	} else if sp, ok := s.store.(streamingStore); ok && sp.StreamsBodies() {
		// A raw upload to a store that streams: hashed while read, held in memory up to
		// spoolThreshold and in a temporary file above it, never whole in memory.
		limit := memory.ArtifactLimit(s.store)
		body, err := blob.Spool(http.MaxBytesReader(w, r.Body, limit), limit, spoolThreshold, "")
		if errors.Is(err, blob.ErrTooLarge) {
			return &memory.TooLargeError{What: "the artifact", Limit: limit}
		}
		if err != nil {
			return err
		}
		defer body.Close()
		a, err := sp.PutArtifactBody(r.Context(), id, p, body)
		if err != nil {
			return err
		}
		return s.writeArtifactCreated(w, r, id, a)
	} else {
		var buf bytes.Buffer
		if n := r.ContentLength; n > 0 && n <= MaxArtifactBody {
			buf.Grow(int(n) + bytes.MinRead) // one allocation instead of doubling
		}
		if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, MaxArtifactBody)); err != nil {
			return err
		}
		p.Content = buf.Bytes()
	}
	a, err := s.store.PutArtifact(r.Context(), id, p)
	if err != nil {
		return err
	}
	return s.writeArtifactCreated(w, r, id, a)
}

func (s *Server) writeArtifactCreated(w http.ResponseWriter, r *http.Request, id string, a memory.Artifact) error {
	named, err := s.named(r.Context(), a)
	if err != nil {
		return err
	}
	a = named[0]
	status := http.StatusCreated
	if a.Deduplicated {
		status = http.StatusOK
	}
	w.Header().Set("Location", "/threads/"+id+"/artifacts/"+a.Ref)
	writeJSON(w, status, a)
	return nil
}

// named returns the artifacts with their refs (and source refs) as relay shows them: what
// every response carries, so an artifact has one ref wherever it is read.
func (s *Server) named(ctx context.Context, as ...memory.Artifact) ([]memory.Artifact, error) {
	var refs []string
	for _, a := range as {
		// A ref its put drew unique store-wide needs no lookup (for a small put the lookup
		// was a fifth of its CPU): left out, Names shows its short form.
		if !a.ShortUnique {
			refs = append(refs, a.Ref)
		}
		refs = append(refs, a.Provenance.SourceRefs...)
	}
	name, err := memory.Names(ctx, s.store.SharedShorts, refs)
	if err != nil {
		return nil, err
	}
	out := make([]memory.Artifact, len(as))
	for i, a := range as {
		out[i] = a.Named(name)
	}
	return out, nil
}

// spoolThreshold is the size above which a streamed upload goes to a temporary file.
const spoolThreshold = 1 << 20

// streamingStore is a store that takes and serves artifact bodies as streams (PostgreSQL,
// and SQLite with a bucket): uploads are spooled to a temporary file above spoolThreshold
// and reads are copied as they come, so a large artifact never sits whole in memory.
type streamingStore interface {
	PutArtifactBody(ctx context.Context, threadID string, p memory.PutArtifactParams, body *blob.Body) (memory.Artifact, error)
	OpenArtifact(ctx context.Context, threadID, ref string) (memory.Artifact, io.ReadCloser, error)
	// StreamsBodies is false when whole bodies are cheaper (SQLite keeping them in its
	// own file, at most memory.MaxArtifactSize).
	StreamsBodies() bool
}

func (s *Server) handleListArtifacts(w http.ResponseWriter, r *http.Request) error {
	limit, err := limitParam(r, 100)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	id, after := r.PathValue("id"), q.Get("after")
	if after != "" && !memory.ValidRef(after) {
		// A cursor is any ref of the thread the client was given: the listed form is short.
		a, err := s.store.GetArtifact(r.Context(), id, after)
		if err != nil {
			return err
		}
		after = a.Ref
	}
	as, err := s.store.ListArtifacts(r.Context(), id, memory.ListArtifactsOptions{Type: q.Get("type"), After: after, Limit: limit})
	if err != nil {
		return err
	}
	if as, err = s.named(r.Context(), as...); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"artifacts": as})
	return nil
}

// handleFindArtifact is GET /artifacts/{ref}: an artifact named by its full or short ref,
// without its thread (which the answer names); ?raw=1 serves the bytes.
func (s *Server) handleFindArtifact(w http.ResponseWriter, r *http.Request) error {
	a, err := s.store.FindArtifact(r.Context(), r.PathValue("ref"))
	if err != nil {
		return err
	}
	return s.serveArtifact(w, r, a.ThreadID, a.Ref)
}

func (s *Server) handleGetArtifact(w http.ResponseWriter, r *http.Request) error {
	return s.serveArtifact(w, r, r.PathValue("id"), r.PathValue("ref"))
}

// serveArtifact answers with the thread's artifact ref: its metadata, or with ?raw=1 its bytes.
func (s *Server) serveArtifact(w http.ResponseWriter, r *http.Request, id, ref string) error {
	raw := r.URL.Query().Get("raw")
	if raw != "1" && raw != "true" {
		a, err := s.store.GetArtifact(r.Context(), id, ref)
		if err != nil {
			return err
		}
		named, err := s.named(r.Context(), a)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, named[0])
		return nil
	}
	if sp, ok := s.store.(streamingStore); ok && sp.StreamsBodies() {
		return s.streamArtifact(w, r, sp, id, ref)
	}
	a, b, err := s.store.ArtifactContent(r.Context(), id, ref)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", servedMime(a.Mime))
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("ETag", `"`+a.Hash+`"`)
	h.Set("X-Relay-Artifact-Type", a.Type)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Disposition", `attachment; filename="`+memory.Short(a.Ref)+memory.ExtFor(a.Type, a.Mime)+`"`)
	if notModified(w, r, `"`+a.Hash+`"`) {
		return nil
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(b)
	}
	return nil
}

// streamArtifact sends an artifact's bytes as they come from the store (a bucket, for a
// large one), never holding them whole; the store's reader checks the hash at the end, and a
// mismatch cuts the response short rather than completing it.
func (s *Server) streamArtifact(w http.ResponseWriter, r *http.Request, sp streamingStore, id, ref string) error {
	a, err := s.store.GetArtifact(r.Context(), id, ref)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", servedMime(a.Mime))
	h.Set("ETag", `"`+a.Hash+`"`)
	h.Set("X-Relay-Artifact-Type", a.Type)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Disposition", `attachment; filename="`+memory.Short(a.Ref)+memory.ExtFor(a.Type, a.Mime)+`"`)
	if notModified(w, r, `"`+a.Hash+`"`) {
		return nil
	}
	_, body, err := sp.OpenArtifact(r.Context(), id, ref)
	if err != nil {
		return err
	}
	defer body.Close()
	h.Set("Content-Length", strconv.FormatInt(a.Size, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := io.Copy(w, body); err != nil {
		s.log.Error("artifact body failed mid-stream", "thread", id, "ref", ref, "err", err)
		panic(http.ErrAbortHandler) // the client must see a broken response, not a short file
	}
	return nil
}

// servedMime is the Content-Type an artifact is served with: its stored mime
// when that is well-formed and inert; content a browser would run (HTML, SVG,
// XML, scripts) as text/plain; anything malformed as octet-stream. With
// nosniff, Content-Disposition: attachment and the sandbox CSP (browserGuard),
// no artifact renders as a page.
func servedMime(m string) string {
	switch {
	case !memory.ValidMime(m):
		return "application/octet-stream"
	case memory.ActiveMime(m):
		return "text/plain; charset=utf-8"
	}
	return m
}

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) error {
	after, err := intParam(r, "after", 0, 0)
	if err != nil {
		return err
	}
	limit, err := limitParam(r, 100)
	if err != nil {
		return err
	}
	evs, err := s.store.Events(r.Context(), r.PathValue("id"), after, limit)
	if err != nil {
		return err
	}
	last := after
	if len(evs) > 0 {
		last = evs[len(evs)-1].ID
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": evs, "last_id": last})
	return nil
}

// MaxEventBody bounds an appended event: its data is a summary, big content goes in an artifact.
const MaxEventBody = 16 << 10

// handleAppendEvent records an event a client made (an ask answered, a transaction applied):
// {"type":"ask.answered","data":{…}}. The daemon's own event types cannot be forged.
func (s *Server) handleAppendEvent(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := decodeJSON(w, r, MaxEventBody, &in); err != nil {
		return err
	}
	if !validEventType(in.Type) {
		return badRequest("event type %q must be dotted lower-case words like ask.answered (at most 64 characters)", in.Type)
	}
	switch in.Type {
	case memory.EventThreadCreated, memory.EventStatePatched, memory.EventArtifactStored:
		return badRequest("event type %q is recorded by the daemon itself", in.Type)
	}
	if len(in.Data) == 0 {
		in.Data = json.RawMessage(`{}`)
	}
	ev, err := s.store.AppendEvent(r.Context(), r.PathValue("id"), in.Type, in.Data)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, ev)
	return nil
}

func validEventType(t string) bool {
	if len(t) == 0 || len(t) > 64 || !strings.Contains(t, ".") || t[0] == '.' || t[len(t)-1] == '.' || strings.Contains(t, "..") {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// threadExists is the check a request makes before it acts on a thread: the store's own
// when it has one (SQLite's answers from memory once it has seen the thread; a capability
// call made a whole GetThread for it, a tenth of a cached search's CPU), else GetThread.
func (s *Server) threadExists(ctx context.Context, id string) error {
	if c, ok := s.store.(interface {
		ThreadExists(ctx context.Context, id string) error
	}); ok {
		return c.ThreadExists(ctx, id)
	}
	_, err := s.store.GetThread(ctx, id)
	return err
}
