package server

// Routes of the capability layer: capabilities, the A2A envelope, reports, stats, export/import.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/relaydev/relay/internal/lowprio"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/a2a"
	"github.com/relaydev/relay/internal/memory/bundle"
	"github.com/relaydev/relay/internal/memory/capability"
	"github.com/relaydev/relay/internal/memory/capability/fetch"
	"github.com/relaydev/relay/internal/memory/capability/search"
	"github.com/relaydev/relay/internal/memory/report"
	"github.com/relaydev/relay/internal/tokens"
	"github.com/relaydev/relay/plugin"
)

// CapabilityOptions are the capability layer's limits, built and validated by the caller
// (relay up reads them from the environment and config.json).
type CapabilityOptions struct {
	Fetch fetch.Options
	// MaxHops bounds agent-to-agent hops per thread; 0 is the default.
	MaxHops int
	// Extra capabilities served beside the built-in ones (plugin.Capability).
	Extra []Extra
}

// Extra is one embedder-provided capability.
type Extra struct {
	Capability plugin.Capability
	Handler    plugin.Handler
}

// Validate reports the first unusable value.
func (o CapabilityOptions) Validate() error {
	if o.MaxHops < 0 {
		return fmt.Errorf("the A2A hop limit is %d; it must be a positive integer", o.MaxHops)
	}
	if o.Fetch.Timeout < 0 || o.Fetch.MaxBytes < 0 {
		return errors.New("the fetch timeout and size limit must not be negative")
	}
	// The extras go through the same checks New's registry makes, so New never meets a
	// capability it must refuse.
	r := capability.New(capability.NewMemStore(), nil)
	for _, e := range o.Extra {
		if e.Capability.Name == search.Name || e.Capability.Name == fetch.Name {
			return fmt.Errorf("capability %s is built in; give yours another name", e.Capability.Name)
		}
		if err := r.Register(e.Capability, e.Handler); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) capabilityRoutes(o CapabilityOptions) {
	x, err := newCapExt(s, o)
	if err != nil {
		// Validate refuses every extra the registry would; a built-in refused is a bug.
		panic(fmt.Sprintf("relay: capability setup: %v", err))
	}
	s.saved = x.savedFor
	s.savedNow = x.savedNow
	go x.refreshSaved(s.done)
	mux := s.mux
	mux.Handle("GET /cap/list", s.api(x.handleCapList))
	mux.Handle("POST /cap/invoke", s.api(x.handleCapInvoke))
	mux.Handle("POST /a2a", s.api(x.handleA2A))
	mux.Handle("POST /reports/{id}", s.api(x.handleReport))
	mux.Handle("GET /threads/{id}/stats", s.api(x.handleStats))
	mux.Handle("GET /threads/{id}/export", s.api(x.handleExport))
	mux.Handle("POST /import", s.api(x.handleImport))
}

// capExt holds the per-server capability registry and A2A processor.
type capExt struct {
	s     *Server
	reg   *capability.Registry
	calls capability.Store
	a2a   *a2a.Processor

	tokOnce sync.Once
	tok     *tokens.Cache
	tokErr  error

	savedCache sync.Map    // thread id -> savedEntry
	refreshing sync.Map    // thread id -> struct{}: queued for refreshSaved
	refresh    chan string // threads whose figure refreshSaved computes
}

// refreshQueue bounds the threads waiting for their figure; a header beyond it asks again.
const refreshQueue = 1024

type threadArtifacts struct {
	s              *Server
	thread, capabl string
}

// PutArtifact stores a capability's result and returns its ref as relay shows it: what the
// invoke answer, its event and the cache hand to agents. A result the put drew a new ref
// for (every search's) is named without a lookup (Server.named).
func (t threadArtifacts) PutArtifact(ctx context.Context, a plugin.NewArtifact) (string, error) {
	art, err := t.s.store.PutArtifact(ctx, t.thread, memory.PutArtifactParams{Name: a.Name, Type: a.Type, Content: a.Content,
		CreatedBy: "relay", Capability: t.capabl, SourceRefs: a.SourceRefs})
	if err != nil {
		return "", err
	}
	art.Provenance.SourceRefs = nil // the answer names the result alone
	named, err := t.s.named(ctx, art)
	if err != nil {
		return "", err
	}
	return named[0].Ref, nil
}

func newCapExt(s *Server, o CapabilityOptions) (*capExt, error) {
	x := &capExt{s: s, refresh: make(chan string, refreshQueue)}
	x.calls = s.store
	x.reg = capability.New(x.calls, func(thread, name string) plugin.ArtifactStore {
		return threadArtifacts{s: s, thread: thread, capabl: name}
	})
	x.reg.OnCall = x.onCall
	if err := x.reg.Register(search.Capability(s.store)); err != nil {
		return nil, err
	}
	c, h := fetch.Capability(o.Fetch)
	if err := x.reg.Register(c, h); err != nil {
		return nil, err
	}
	for _, e := range o.Extra {
		if err := x.reg.Register(e.Capability, e.Handler); err != nil {
			return nil, err
		}
	}
	lim := a2a.Limits{MaxHops: o.MaxHops}
	x.a2a = a2a.NewProcessor(s.store, lim, x.runEnvelope)
	x.a2a.ThreadExists = s.threadExists
	return x, nil
}

// onCall says what a call adds to its thread (the registry writes it with the call log, in
// one transaction): an event, the cache-hit counter and the tokens the agent did not have
// to read (full result minus preview, bytes/4 as in the header metrics).
func (x *capExt) onCall(ctx context.Context, inv *capability.Invocation) (memory.CallEffects, error) {
	eff := memory.CallEffects{EventType: "cap.invoked", EventData: map[string]any{
		"capability": inv.Capability, "artifact_ref": inv.ArtifactRef, "cached": inv.CacheHit, "duration_ms": inv.DurationMS}}
	if inv.CacheHit {
		eff.Metrics.CacheHits = 1
	}
	size, ok := inv.ResultSize() // a miss stored its result just now; a hit's came with its entry, or is looked up
	if !ok {
		if a, err := x.s.store.GetArtifact(ctx, inv.ThreadID, inv.ArtifactRef); err == nil {
			size, ok = a.Size, true
		}
	}
	if ok {
		eff.Metrics.TokensAvoided = max(0, int64(tokens.Estimate(int(size))-tokens.Estimate(len(inv.Preview))))
	}
	return eff, nil
}

func (x *capExt) tokens() (*tokens.Cache, error) {
	x.tokOnce.Do(func() {
		c, err := tokens.New(tokens.Default)
		x.tok, x.tokErr = tokens.NewCache(c), err
		if err == nil {
			reserveMemory(tokens.Resident(tokens.Default))
		}
	})
	return x.tok, x.tokErr
}

func (x *capExt) source() (report.Source, error) {
	tc, err := x.tokens()
	if err != nil {
		return report.Source{}, err
	}
	src := report.Source{Store: x.s.store, Tokens: tc, Calls: x.calls.Calls, SessionCacheHits: x.reg.SessionCacheHits}
	src.Hops = x.s.store.Hops
	return src, nil
}

func (x *capExt) handleCapList(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"capabilities": x.reg.List()})
	return nil
}

func (x *capExt) capError(err error) error {
	if memory.IsTransient(x.s.store, err) {
		return err // 503: the capability's own store write failed for now, not the capability
	}
	var ae *capability.ArgsError
	var nf *capability.NotFoundError
	var re *capability.ResultError
	var he *capability.HandlerError
	var be *fetch.BlockedError
	switch {
	case errors.As(err, &ae):
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_args", Msg: ae.Error(), Extra: map[string]any{"problems": ae.Problems}}
	case errors.As(err, &nf):
		extra := map[string]any{"available": nf.Known}
		if s := nf.Suggestions(); len(s) > 0 {
			extra["did_you_mean"] = s
		}
		return &apiError{Status: http.StatusNotFound, Code: "unknown_capability", Msg: nf.Error(), Extra: extra}
	case errors.As(err, &be):
		return &apiError{Status: http.StatusForbidden, Code: "blocked_address", Msg: err.Error()}
	case errors.As(err, &re):
		return &apiError{Status: http.StatusUnprocessableEntity, Code: "capability_failed", Msg: re.Error()}
	case errors.As(err, &he):
		var me *memory.InvalidError
		var tl *memory.TooLargeError
		if errors.As(err, &me) || errors.As(err, &tl) {
			return err
		}
		return &apiError{Status: http.StatusUnprocessableEntity, Code: "capability_failed", Msg: he.Error()}
	}
	return err
}

func (x *capExt) handleCapInvoke(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		ThreadID   string          `json:"thread_id"`
		Capability string          `json:"capability"`
		Args       json.RawMessage `json:"args"`
		NoCache    bool            `json:"no_cache"`
	}
	if err := decodeJSON(w, r, MaxJSONBody, &req); err != nil {
		return err
	}
	if req.ThreadID == "" || req.Capability == "" {
		return badRequest("thread_id and capability are required")
	}
	if err := x.s.threadExists(r.Context(), req.ThreadID); err != nil {
		return err
	}
	inv, err := x.reg.InvokeOpts(r.Context(), req.ThreadID, req.Capability, req.Args, req.NoCache)
	if err != nil {
		return x.capError(err)
	}
	writeJSON(w, http.StatusOK, inv)
	return nil
}

// runEnvelope executes an accepted A2A request by invoking its capability with the payload as args.
func (x *capExt) runEnvelope(ctx context.Context, e *a2a.Envelope) (json.RawMessage, error) {
	if _, err := x.s.store.AppendEvent(ctx, e.ThreadID, "a2a.received", map[string]any{
		"msg_id": e.MsgID, "from": e.From, "type": e.Type, "to_capability": e.ToCapability, "payload_bytes": len(e.Payload)}); err != nil {
		return nil, err
	}
	if e.Type != "request" {
		return json.RawMessage(`{"accepted":true}`), nil
	}
	inv, err := x.reg.Invoke(ctx, e.ThreadID, e.ToCapability, e.Payload)
	if err != nil {
		return nil, x.capError(err)
	}
	return json.Marshal(inv)
}

func (x *capExt) handleA2A(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxJSONBody))
	if err != nil {
		return err
	}
	res, err := x.a2a.Process(r.Context(), body)
	var re *a2a.RuleError
	if errors.As(err, &re) {
		st := re.Status
		if re.Rule == a2a.RulePayloadSize {
			st = http.StatusRequestEntityTooLarge
		}
		return &apiError{Status: st, Code: "envelope_rejected", Msg: re.Error(), Extra: map[string]any{"rule": re.Rule}}
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (x *capExt) handleStats(w http.ResponseWriter, r *http.Request) error {
	src, err := x.source()
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	th, err := x.s.store.GetThread(r.Context(), id)
	if err != nil {
		return err
	}
	st, err := report.ComputeStats(r.Context(), src, id)
	if err != nil {
		return err
	}
	// The figure as of th (or newer): headers answer it without computing it again.
	x.savedCache.Store(id, savedEntry{lastEvent: th.LastEventID, version: th.Version, avoided: int64(st.TokensAvoided)})
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (x *capExt) handleReport(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Format string `json:"format"`
		Store  *bool  `json:"store"`
	}
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, MaxThreadBody, &req); err != nil {
			return err
		}
	}
	if req.Format == "" {
		req.Format = "json"
	}
	if req.Format != "json" && req.Format != "md" {
		return badRequest("format must be md or json, got %q", req.Format)
	}
	src, err := x.source()
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	rep, err := report.Build(r.Context(), src, id, time.Now())
	if err != nil {
		return err
	}
	var body []byte
	typ, name := memory.TypeJSON, "report.json"
	if req.Format == "md" {
		body, typ, name = rep.Markdown(), memory.TypeMarkdown, "report.md"
	} else {
		body, _ = json.MarshalIndent(rep, "", "  ")
	}
	ref := ""
	if req.Store == nil || *req.Store {
		a, err := x.s.store.PutArtifact(r.Context(), id, memory.PutArtifactParams{Name: name, Type: typ, Content: body, CreatedBy: "relay report"})
		if err != nil {
			return err
		}
		named, err := x.s.named(r.Context(), a)
		if err != nil {
			return err
		}
		ref = named[0].Ref
		if _, err := x.s.store.AppendEvent(r.Context(), id, "report.generated", map[string]any{"artifact_ref": ref, "format": req.Format, "size": len(body)}); err != nil {
			return err
		}
	}
	w.Header().Set("X-Relay-Artifact-Ref", ref)
	if req.Format == "md" {
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Write(body)
		return nil
	}
	out, _ := json.Marshal(struct {
		*report.Report
		ArtifactRef string `json:"artifact_ref"`
		Format      string `json:"format"`
	}{rep, ref, req.Format})
	writeRawJSON(w, http.StatusOK, out)
	return nil
}

func (x *capExt) handleExport(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	// Spool to a temp file so a failure mid-way is an error response, not a truncated zip.
	tmp, err := os.CreateTemp("", "relay-export-*.zip")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if _, err := bundle.Export(r.Context(), x.s.store, id, x.s.version, tmp); err != nil {
		return err
	}
	size, err := tmp.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.Header().Set("Content-Disposition", `attachment; filename="relay-`+id+`.zip"`)
	_, err = io.Copy(w, tmp)
	if err != nil {
		x.s.log.Info("export interrupted", "thread", id, "err", err)
	}
	return nil
}

// MaxImportBody is the largest bundle POST /import accepts (compressed).
const MaxImportBody = MaxArtifactJSON

// importSlots bounds concurrent imports: each inflates up to one artifact
// (50 MB) at a time plus its metadata, so a few at once stay bounded too.
var importSlots = make(chan struct{}, 2)

func (x *capExt) handleImport(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	asNew, name := q.Get("as_new"), q.Get("name")
	if name != "" && (asNew != "1" && asNew != "true") {
		return &apiError{Status: http.StatusBadRequest, Code: "bad_request", Msg: "name renames only a copy; pass as_new=1 with it"}
	}
	if len([]rune(name)) > memory.MaxNameLen || strings.ContainsAny(name, "\x00\n\r") {
		return &apiError{Status: http.StatusBadRequest, Code: "bad_request", Msg: fmt.Sprintf("name must be at most %d characters on one line", memory.MaxNameLen)}
	}
	// The zip is spooled to a temp file, not held in memory; the import then
	// inflates one entry at a time. At most two imports run at once.
	tmp, err := os.CreateTemp("", "relay-import-*.zip")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	limit := int64(MaxImportBody)
	if l := memory.ArtifactLimit(x.s.store); l > memory.MaxArtifactSize {
		limit += l // a store with a bucket takes artifacts (and so bundles) this much larger
	}
	size, err := io.Copy(tmp, http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return err
	}
	select {
	case importSlots <- struct{}{}:
		defer func() { <-importSlots }()
	case <-r.Context().Done():
		return r.Context().Err()
	}
	res, err := bundle.Import(r.Context(), x.s.store, tmp, size, bundle.ImportOptions{AsNew: asNew == "1" || asNew == "true", Name: name, MaxArtifactBytes: memory.ArtifactLimit(x.s.store)})
	var ue *bundle.UnsafeError
	var ee *bundle.ExistsError
	switch {
	case errors.As(err, &ue):
		return &apiError{Status: http.StatusBadRequest, Code: "unsafe_bundle", Msg: err.Error()}
	case errors.As(err, &ee):
		return &apiError{Status: http.StatusConflict, Code: "thread_exists", Msg: err.Error()}
	case err != nil:
		return err
	}
	// No thread.imported event: the imported event log stays exactly the exported one.
	writeJSON(w, http.StatusOK, res)
	return nil
}

// savedEntry is a thread's tokens avoided as of its last event.
type savedEntry struct {
	lastEvent int64
	version   int
	avoided   int64
}

// savedFor computes a thread's tokens avoided with the report's one definition, once per
// change of the thread (its last event id), for GET /threads/{id}.
func (x *capExt) savedFor(ctx context.Context, id string) (int64, error) {
	th, err := x.s.store.GetThread(ctx, id)
	if err != nil {
		return 0, err
	}
	if v, ok := x.savedCache.Load(id); ok {
		if e := v.(savedEntry); e.lastEvent == th.LastEventID && e.version == th.Version {
			return e.avoided, nil
		}
	}
	return x.computeSaved(ctx, th)
}

func (x *capExt) computeSaved(ctx context.Context, th memory.Thread) (int64, error) {
	src, err := x.source()
	if err != nil {
		return 0, err
	}
	st, err := report.ComputeStats(ctx, src, th.ID)
	if err != nil {
		return 0, err
	}
	x.savedCache.Store(th.ID, savedEntry{lastEvent: th.LastEventID, version: th.Version, avoided: int64(st.TokensAvoided)})
	return int64(st.TokensAvoided), nil
}

// savedNow is the figure for the header, which agents read every turn: never computed on the
// request, since computing counts the tokens of every artifact of the thread (~30 MB/s: a
// second for a thread of a few hundred 100 KB artifacts, after a restart). It answers the
// last figure computed, ok false when there is none yet, and has the current one computed in
// the background when the thread has changed since.
func (x *capExt) savedNow(ctx context.Context, id string) (int64, bool, error) {
	th, err := x.s.store.GetThread(ctx, id)
	if err != nil {
		return 0, false, err
	}
	v, ok := x.savedCache.Load(id)
	e, _ := v.(savedEntry)
	if !ok || e.lastEvent != th.LastEventID || e.version != th.Version {
		if _, queued := x.refreshing.LoadOrStore(id, struct{}{}); !queued {
			select {
			case x.refresh <- id:
			default:
				x.refreshing.Delete(id) // full: the next header asks again
			}
		}
	}
	return e.avoided, ok, nil
}

// refreshSaved computes the figures savedNow queued, one thread at a time, until done closes.
func (x *capExt) refreshSaved(done <-chan struct{}) {
	lowprio.Thread(10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-done; cancel() }()
	for {
		select {
		case <-done:
			return
		case id := <-x.refresh:
			if th, err := x.s.store.GetThread(ctx, id); err == nil {
				x.computeSaved(ctx, th) // a failure leaves the old figure; the next header asks again
			}
			x.refreshing.Delete(id)
		}
	}
}
