// Package capability owns the capability registry: argument validation against each
// capability's JSON Schema, the result cache, and the per-thread call log behind
// cache_hits and the capability section of reports.
package capability

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/suggest"
	"github.com/relaydev/relay/plugin"
)

// NotFoundError is returned for an unknown capability name (HTTP 404).
type NotFoundError struct {
	Name  string
	Known []string
}

// Suggestions are the known names closest to the unknown one (a typo's "did you mean").
func (e *NotFoundError) Suggestions() []string { return suggest.Closest(e.Name, e.Known) }

func (e *NotFoundError) Error() string {
	mean := ""
	if s := e.Suggestions(); len(s) > 0 {
		q := make([]string, len(s))
		for i, n := range s {
			q[i] = strconv.Quote(n)
		}
		mean = "; did you mean " + strings.Join(q, " or ") + "?"
	}
	return fmt.Sprintf("unknown capability %q%s (available: %s); run `relay cap list`", e.Name, mean, strings.Join(e.Known, ", "))
}

// ResultError is a handler result that breaks the capability contract (HTTP 502).
type ResultError struct {
	Capability string
	Reason     string
}

func (e *ResultError) Error() string {
	return fmt.Sprintf("capability %s returned an invalid result: %s", e.Capability, e.Reason)
}

// HandlerError is a failure inside a capability's handler (bad input it detected, a remote
// error, a limit); the call is not cached.
type HandlerError struct {
	Capability string
	Err        error
}

func (e *HandlerError) Error() string { return e.Capability + ": " + e.Err.Error() }
func (e *HandlerError) Unwrap() error { return e.Err }

// Info is the public description of a capability (GET /cap/list).
type Info struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	ArgsSchema  json.RawMessage `json:"args_schema"`
	Cacheable   bool            `json:"cacheable"`
	CacheTTLSec int64           `json:"cache_ttl_sec"`
}

// Invocation is the outcome of one call (POST /cap/invoke).
type Invocation struct {
	Capability  string          `json:"capability"`
	ThreadID    string          `json:"thread_id"`
	ArtifactRef string          `json:"artifact_ref"`
	Preview     json.RawMessage `json:"preview"`
	CacheHit    bool            `json:"cached"`
	CacheKey    string          `json:"cache_key,omitempty"`
	DurationMS  int64           `json:"duration_ms"`
	// EventID is the thread event recording the call (the event OnCall asked for).
	EventID int64 `json:"event_id,omitempty"`

	resultSize int64 // the result artifact's size, when this call stored it or the cache knew it (sized)
	sized      bool
}

// ResultSize is the size of the result artifact when this call stored it (a miss) or the
// cache entry came with it (a hit, from a store that reads it with the entry); ok is false
// otherwise.
func (inv *Invocation) ResultSize() (size int64, ok bool) { return inv.resultSize, inv.sized }

// ArtifactsFunc returns artifact storage scoped to a thread and recording the capability as provenance.
type ArtifactsFunc func(threadID, capability string) plugin.ArtifactStore

type entry struct {
	cap      plugin.Capability
	schema   *argsSchema
	h        plugin.Handler
	defaults map[string]any // top-level property defaults, filled in before the cache key
}

type flight struct {
	done chan struct{}
	inv  *Invocation
	err  error
}

// Registry holds capabilities. It is safe for concurrent use.
type Registry struct {
	store     Store
	artifacts ArtifactsFunc
	now       func() time.Time

	// OnCall, when set, says what every successful call (hit or miss) adds to its thread
	// besides the call log: the daemon's cap.invoked event and header metrics. They are
	// written with the log (and a miss's cache entry) in one transaction, and the event's id
	// is the invocation's EventID.
	OnCall func(ctx context.Context, inv *Invocation) (memory.CallEffects, error)

	mu          sync.Mutex
	caps        map[string]*entry
	flights     map[string]*flight
	sessionHits map[string]int64 // thread → cache hits since this registry (daemon session) started
}

// New returns an empty registry. store keeps the cache and the call log.
func New(store Store, artifacts ArtifactsFunc) *Registry {
	return &Registry{
		store: store, artifacts: artifacts, now: time.Now,
		caps: map[string]*entry{}, flights: map[string]*flight{}, sessionHits: map[string]int64{},
	}
}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+$`) })

// Register adds a capability. The name must be dotted lowercase ("retrieval.search").
func (r *Registry) Register(c plugin.Capability, h plugin.Handler) error {
	if !nameRE().MatchString(c.Name) {
		return fmt.Errorf("capability name %q must be dotted lowercase like \"my.tool\"", c.Name)
	}
	if h == nil {
		return fmt.Errorf("capability %s: nil handler", c.Name)
	}
	if c.Cacheable && c.CacheTTL <= 0 {
		return fmt.Errorf("capability %s: cacheable needs a positive CacheTTL", c.Name)
	}
	sch, err := compileSchema(c.Name, c.ArgsSchema)
	if err != nil {
		return err
	}
	if len(c.ArgsSchema) == 0 {
		c.ArgsSchema = json.RawMessage(`{"type":"object"}`)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.caps[c.Name]; dup {
		return fmt.Errorf("capability %s is already registered", c.Name)
	}
	r.caps[c.Name] = &entry{cap: c, schema: sch, h: h, defaults: schemaDefaults(c.ArgsSchema)}
	return nil
}

// List returns all capabilities sorted by name.
func (r *Registry) List() []Info {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Info, 0, len(r.caps))
	for _, e := range r.caps {
		out = append(out, Info{
			Name: e.cap.Name, Description: e.cap.Description, ArgsSchema: e.cap.ArgsSchema,
			Cacheable: e.cap.Cacheable, CacheTTLSec: int64(e.cap.CacheTTL / time.Second),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (r *Registry) names() []string {
	var ns []string
	for n := range r.caps {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// SessionCacheHits returns cache hits for a thread since the registry was created.
func (r *Registry) SessionCacheHits(threadID string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessionHits[threadID]
}

// CacheKey is sha256 over capability, thread scope and canonical args (sorted keys, exact numbers).
func CacheKey(capability, threadID string, canonicalArgs []byte) string {
	h := sha256.New()
	h.Write([]byte(capability))
	h.Write([]byte{0})
	h.Write([]byte(threadID))
	h.Write([]byte{0})
	h.Write(canonicalArgs)
	return hex.EncodeToString(h.Sum(nil))
}

// Invoke validates args, serves from cache when possible, otherwise runs the handler.
// Concurrent identical calls to a cacheable capability run the handler once.
func (r *Registry) Invoke(ctx context.Context, threadID, name string, args json.RawMessage) (*Invocation, error) {
	return r.InvokeOpts(ctx, threadID, name, args, false)
}

// InvokeOpts is Invoke; noCache skips the cache lookup (the fresh result still refreshes the cache).
func (r *Registry) InvokeOpts(ctx context.Context, threadID, name string, args json.RawMessage, noCache bool) (*Invocation, error) {
	if threadID == "" {
		return nil, errors.New("a thread id is required: pass --thread <id> (create one with `relay thread new`)")
	}
	r.mu.Lock()
	e, ok := r.caps[name]
	if !ok {
		err := &NotFoundError{Name: name, Known: r.names()}
		r.mu.Unlock()
		return nil, err
	}
	r.mu.Unlock()

	v, err := parseArgs(args)
	if err != nil {
		return nil, &ArgsError{Capability: name, Problems: []string{"/: arguments are not valid JSON: " + err.Error()}}
	}
	if err := validateArgs(name, e.schema, v); err != nil {
		return nil, err
	}
	// {"query":"x"} and {"query":"x","limit":10} (the default) are one call: one cache entry
	if m, ok := v.(map[string]any); ok {
		for k, d := range e.defaults {
			if _, set := m[k]; !set {
				m[k] = d
			}
		}
	}
	canon, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("normalize arguments: %w", err)
	}
	key := CacheKey(name, threadID, canon)
	if e.cap.Cacheable && e.cap.CacheScope != nil {
		scope, err := e.cap.CacheScope(ctx, threadID)
		if err != nil {
			return nil, fmt.Errorf("capability %s: cache scope: %w", name, err)
		}
		key = CacheKey(name, threadID+"\x00"+scope, canon)
	}

	if !e.cap.Cacheable {
		return r.run(ctx, e, threadID, canon, "")
	}
	for first := true; ; first = false {
		if !noCache || !first {
			if inv, hit, err := r.fromCache(ctx, e, threadID, canon, key); err != nil || hit {
				return inv, err
			}
		}
		r.mu.Lock()
		if f, busy := r.flights[key]; busy {
			r.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if f.err != nil {
				return nil, f.err
			}
			continue // the first caller filled the cache; count this one as a hit
		}
		f := &flight{done: make(chan struct{})}
		r.flights[key] = f
		r.mu.Unlock()

		f.inv, f.err = r.run(ctx, e, threadID, canon, key)
		r.mu.Lock()
		delete(r.flights, key)
		r.mu.Unlock()
		close(f.done)
		return f.inv, f.err
	}
}

func (r *Registry) fromCache(ctx context.Context, e *entry, threadID string, canon []byte, key string) (*Invocation, bool, error) {
	start := r.now()
	c, err := r.store.CacheGet(ctx, key, start)
	if err != nil {
		return nil, false, fmt.Errorf("read capability cache: %w", err)
	}
	if c == nil {
		return nil, false, nil
	}
	inv := &Invocation{
		Capability: e.cap.Name, ThreadID: threadID, ArtifactRef: c.ArtifactRef, Preview: c.Preview,
		CacheHit: true, CacheKey: key, DurationMS: r.now().Sub(start).Milliseconds(),
		resultSize: c.ResultSize, sized: c.ResultSized,
	}
	if err := r.record(ctx, inv, canon, nil); err != nil {
		return nil, false, err
	}
	r.mu.Lock()
	r.sessionHits[threadID]++
	r.mu.Unlock()
	return inv, true, nil
}

func (r *Registry) run(ctx context.Context, e *entry, threadID string, canon []byte, key string) (*Invocation, error) {
	start := r.now()
	var store plugin.ArtifactStore
	var sized *sizedArtifacts
	if r.artifacts != nil {
		sized = &sizedArtifacts{ArtifactStore: r.artifacts(threadID, e.cap.Name)}
		store = sized
	}
	res, err := e.h(ctx, &plugin.InvokeRequest{Capability: e.cap.Name, ThreadID: threadID, Args: canon, Artifacts: store})
	if err != nil {
		return nil, &HandlerError{Capability: e.cap.Name, Err: err}
	}
	if res == nil || res.ArtifactRef == "" {
		return nil, &ResultError{Capability: e.cap.Name, Reason: "no artifact_ref (handlers must store their full result as an artifact)"}
	}
	if len(res.Preview) == 0 {
		res.Preview = json.RawMessage(`null`)
	}
	if !json.Valid(res.Preview) {
		return nil, &ResultError{Capability: e.cap.Name, Reason: "preview is not valid JSON"}
	}
	if len(res.Preview) > plugin.MaxPreviewBytes {
		return nil, &ResultError{Capability: e.cap.Name, Reason: fmt.Sprintf("preview is %d bytes, the limit is %d", len(res.Preview), plugin.MaxPreviewBytes)}
	}
	inv := &Invocation{
		Capability: e.cap.Name, ThreadID: threadID, ArtifactRef: res.ArtifactRef, Preview: res.Preview,
		CacheKey: key, DurationMS: r.now().Sub(start).Milliseconds(),
	}
	inv.resultSize, inv.sized = sized.size(res.ArtifactRef)
	var cache *CachedResult
	if e.cap.Cacheable {
		cache = &CachedResult{
			Capability: e.cap.Name, ThreadID: threadID, ArtifactRef: res.ArtifactRef, Preview: res.Preview,
			ExpiresAt: start.Add(e.cap.CacheTTL),
		}
	}
	if err := r.record(ctx, inv, canon, cache); err != nil {
		return nil, err
	}
	return inv, nil
}

// record logs the call, with the cache entry it filled (nil: none) and OnCall's event and
// metrics, in one write. All of it is bookkeeping: written with deferred durability
// (memory.Deferred), so a call, and a search above all, never waits for the disk to flush it.
func (r *Registry) record(ctx context.Context, inv *Invocation, canon []byte, cache *CachedResult) error {
	rec := memory.CallRecord{Call: Call{
		ThreadID: inv.ThreadID, Capability: inv.Capability, Args: canon, ArtifactRef: inv.ArtifactRef,
		CacheHit: inv.CacheHit, PreviewBytes: len(inv.Preview), DurationMS: inv.DurationMS, At: r.now().UTC(),
	}}
	if cache != nil {
		rec.Cache, rec.CacheKey = cache, inv.CacheKey
	}
	if r.OnCall != nil {
		effects, err := r.OnCall(ctx, inv)
		if err != nil {
			return err
		}
		rec.CallEffects = effects
	}
	ev, err := r.store.RecordCall(memory.Deferred(ctx), rec)
	if err != nil {
		return fmt.Errorf("record capability call: %w", err)
	}
	inv.EventID = ev.ID
	return nil
}

// sizedArtifacts remembers the size of what a handler stores, so the call's bookkeeping
// (the tokens its preview saved) needs no lookup of the result it just stored.
type sizedArtifacts struct {
	plugin.ArtifactStore
	mu    sync.Mutex
	sizes map[string]int64
}

func (a *sizedArtifacts) PutArtifact(ctx context.Context, n plugin.NewArtifact) (string, error) {
	ref, err := a.ArtifactStore.PutArtifact(ctx, n)
	if err == nil {
		a.mu.Lock()
		if a.sizes == nil {
			a.sizes = map[string]int64{}
		}
		a.sizes[ref] = int64(len(n.Content)) // an artifact's size is its content's length (equal content: equal size)
		a.mu.Unlock()
	}
	return ref, err
}

// size is the size of the artifact stored as ref; ok is false when it was not stored here.
func (a *sizedArtifacts) size(ref string) (int64, bool) {
	if a == nil {
		return 0, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n, ok := a.sizes[ref]
	return n, ok
}
