package memory

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"
)

// The layers above the core (capabilities, search, agent-to-agent messages, bundles) keep
// their data in the same store, so every backend implements their storage too and one
// conformance suite can prove a backend complete. The logic of those layers lives in their
// own packages and reaches storage only through these interfaces.

// CapabilityStore keeps the capability result cache and the per-thread call log.
type CapabilityStore interface {
	// CacheGet returns nil, nil on a miss or an expired entry.
	CacheGet(ctx context.Context, key string, now time.Time) (*CachedResult, error)
	// CachePut stores r under key and drops expired entries and the overflow past MaxCacheEntries.
	CachePut(ctx context.Context, key string, r CachedResult, now time.Time) error
	// RecordCall writes everything one call leaves behind in one transaction (one commit,
	// not one per record: a search writes them on every call): the call log entry, the
	// cache entry a miss filled (as CachePut at rec.Call.At) and rec's event and metrics
	// for the call's thread (as AppendEvent and AddMetrics). It returns the event appended,
	// zero when rec has none. A thread that does not exist, when rec has an event or
	// metrics for it, is a *NotFoundError and nothing is written.
	RecordCall(ctx context.Context, rec CallRecord) (Event, error)
	Calls(ctx context.Context, threadID string) ([]CapabilityCall, error)
}

// CallRecord is what one capability call leaves in the store besides its result artifact.
type CallRecord struct {
	Call CapabilityCall
	// Cache, when not nil, is the cache entry the call filled, stored under CacheKey.
	Cache    *CachedResult
	CacheKey string
	CallEffects
}

// CallEffects is what a call adds to its thread (the daemon's cap.invoked event, the
// header's cache hits and tokens avoided).
type CallEffects struct {
	// EventType "" appends no event; EventData is its data, as AppendEvent takes it.
	EventType string
	EventData any
	// Metrics are added to the thread's counters; zero adds nothing.
	Metrics Metrics
}

// Checked validates what the effects write to thread id before a store writes anything:
// touches says whether they change the thread at all, data is the event's encoded data.
func (e CallEffects) Checked(id string) (touches bool, data []byte, err error) {
	touches = e.EventType != "" || e.Metrics != (Metrics{})
	if touches {
		if err := CheckThreadID(id); err != nil {
			return false, nil, err
		}
	}
	if e.EventType != "" {
		if data, err = EncodeEvent(e.EventType, e.EventData); err != nil {
			return false, nil, err
		}
	}
	return touches, data, nil
}

// MaxCacheEntries bounds the capability cache so it cannot grow without limit; the
// soonest-expiring entries go first.
const MaxCacheEntries = 10000

// CachedResult is one capability cache entry.
type CachedResult struct {
	Capability  string
	ThreadID    string
	ArtifactRef string
	Preview     json.RawMessage
	ExpiresAt   time.Time
	// ResultSize is the result artifact's size, read with the entry by CacheGet when
	// ResultSized (a hit then needs no lookup of its result for the tokens it saved);
	// CachePut ignores both.
	ResultSize  int64
	ResultSized bool
}

// CacheEntry reads a cache lookup whose rows are the entry joined with the artifacts its
// ref names in its thread (a store's query returns at most two): scan reads one row into c
// and the artifact's size, nil when the join found none. The entry's result is sized when
// its ref names exactly one artifact; otherwise the caller resolves the ref. No row: nil.
func CacheEntry(rows Rows, scan func(c *CachedResult, size **int64) error) (*CachedResult, error) {
	var c *CachedResult
	found := 0
	for rows.Next() {
		c = &CachedResult{}
		var size *int64
		if err := scan(c, &size); err != nil {
			return nil, err
		}
		if size != nil {
			found++
			c.ResultSize = *size
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if c != nil {
		c.ResultSized = found == 1
	}
	return c, nil
}

// CapabilityCall is one entry of a thread's capability call log.
type CapabilityCall struct {
	ThreadID     string          `json:"thread_id"`
	Capability   string          `json:"capability"`
	Args         json.RawMessage `json:"args"`
	ArtifactRef  string          `json:"artifact_ref"`
	CacheHit     bool            `json:"cache_hit"`
	PreviewBytes int             `json:"preview_bytes"`
	DurationMS   int64           `json:"duration_ms"`
	At           time.Time       `json:"at"`
}

// SearchCapability names the built-in search capability; artifacts it stores (its own
// result lists) are not indexed, so a search never finds earlier searches.
const SearchCapability = "retrieval.search"

// Searcher is full-text search over a thread's artifacts.
type Searcher interface {
	// Search runs q over one thread's artifacts, best first; an empty thread gives no hits.
	// A query with no searchable words is an *InvalidError.
	Search(ctx context.Context, threadID string, q SearchQuery) ([]SearchHit, error)
	// SearchScope changes whenever the thread's index changes, so cached results can be
	// keyed by it and go stale the moment an artifact is indexed.
	SearchScope(ctx context.Context, threadID string) (string, error)
}

// SearchQuery is a search request: words (all must match), "quoted phrases", prefix* and
// OR between terms; Types keeps only artifacts of those types.
type SearchQuery struct {
	Query string
	Types []string
	Limit int
}

// SearchHit is one ranked result; Score is higher for better matches.
type SearchHit struct {
	Ref     string  `json:"ref"`
	Name    string  `json:"name"`
	Type    string  `json:"type"`
	Score   float64 `json:"score"`
	Snippet string  `json:"snippet"`
}

// Search highlight markers around matched terms in snippets.
const (
	HighlightOpen  = "**"
	HighlightClose = "**"
)

// HopLedger counts agent-to-agent hops per thread and remembers idempotency keys, so a
// retried message gets its first answer instead of running twice.
type HopLedger interface {
	// ClaimHop counts one hop for the thread, refusing with ErrHopLimit once maxHops are
	// used; with a key it also records the key as pending, in the same transaction.
	ClaimHop(ctx context.Context, threadID string, maxHops int, key, msgID string, at time.Time) (hops int, err error)
	// IdempotentResponse returns the stored response of a finished key, or nil when the
	// key is unknown or still pending.
	IdempotentResponse(ctx context.Context, threadID, key string) ([]byte, error)
	// FinishIdempotent stores the response of a pending key.
	FinishIdempotent(ctx context.Context, threadID, key string, response []byte) error
	// ReleaseIdempotent forgets a pending key so a retry runs again.
	ReleaseIdempotent(ctx context.Context, threadID, key string) error
	Hops(ctx context.Context, threadID string) (int, error)
}

// ErrHopLimit is returned by ClaimHop when the thread has used all its hops.
var ErrHopLimit = errors.New("hop limit reached")

// MemoryReleaser is a store that keeps memory for speed (page caches, idle connections)
// and can give it back while nothing uses it: the daemon calls it once it has been idle.
type MemoryReleaser interface {
	// ReleaseMemory frees what the store's caches hold; the store stays fully usable and
	// fills them again as it works. It reports false, freeing nothing, while the store
	// still has background work (the search index catching up) that would refill them.
	// Not to be called concurrently with Close.
	ReleaseMemory(ctx context.Context) (bool, error)
}

// Dumper moves whole threads in and out of a store, exactly: same refs, hashes, versions,
// timestamps and event order (export/import bundles, migration between backends).
type Dumper interface {
	// ExportThread reads the thread from one consistent snapshot and calls fn with its
	// records; content opens an artifact's body and is valid only during fn.
	ExportThread(ctx context.Context, threadID string, fn func(d *ThreadDump, content Content) error) error
	// ImportThread writes d in one transaction, streaming each artifact's body by ref
	// from content as it writes it (so an import holds at most one body, and only when the
	// store keeps bodies in its database, never every body), and indexes it for search. It
	// may open a ref more than once. A thread id or artifact ref already in the store is an
	// *ExistsError, and an error from content or a body that does not hash to its
	// artifact's hash aborts; nothing is written (bodies already in a bucket stay there
	// unreferenced until its garbage collection). A body the bucket already holds under
	// the artifact's hash is not read again.
	ImportThread(ctx context.Context, d *ThreadDump, content Content) error
}

// Content opens an artifact's body by ref: each call returns a new reader from the start.
// Readers a store returns fail at their end when the bytes do not hash to the artifact's
// hash.
type Content func(ref string) (io.ReadCloser, error)

// ContentBytes reads a whole body through content, refusing one over limit bytes.
func ContentBytes(content Content, ref string, limit int64) ([]byte, error) {
	r, err := content(ref)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{What: "artifact " + ref, Limit: limit}
	}
	return b, nil
}

// ThreadDump is everything a thread holds, as records; the JSON names are the bundle format.
type ThreadDump struct {
	Thread    ThreadRecord
	Versions  []VersionRecord
	Snapshots []SnapshotRecord
	Artifacts []ArtifactRecord
	Events    []EventRecord
	Calls     []CapabilityCall
	// Hops and Messages are the thread's agent-to-agent ledger: hops used, and the
	// idempotency keys of messages received with their answers. A migration carries them
	// (a retry after it is still recognised as one); bundles do not, since a bundle is
	// untrusted input and a planted answer would be returned to a later message.
	Hops     int                `json:"-"`
	Messages []A2AMessageRecord `json:"-"`
	// FreeName makes ImportThread take the first free "name (2)", "name (3)", … when another
	// thread already has Thread.Name (a copy must not make the name ambiguous); Thread.Name
	// is then the name used.
	FreeName bool `json:"-"`
}

// A2AMessageRecord is one agent-to-agent idempotency key of a thread.
type A2AMessageRecord struct {
	Key        string
	MsgID      string
	Status     string // pending | done
	Response   []byte
	ReceivedAt time.Time
}

// ThreadRecord is a thread's row.
type ThreadRecord struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	CreatedAt     string `json:"created_at"`
	UpdatedAt     string `json:"updated_at"`
	Version       int    `json:"version"`
	ArtifactCount int    `json:"artifact_count"`
	EventCount    int    `json:"event_count"`
	CacheHits     int64  `json:"cache_hits"`
	TokensAvoided int64  `json:"tokens_avoided"`
}

// VersionRecord is one state version: the patch that made it.
type VersionRecord struct {
	Version   int             `json:"version"`
	Patch     json.RawMessage `json:"patch"`
	Author    string          `json:"author"`
	CreatedAt string          `json:"created_at"`
	EventID   int64           `json:"event_id"`
}

// SnapshotRecord is a full state document stored at a version.
type SnapshotRecord struct {
	Version int             `json:"version"`
	Doc     json.RawMessage `json:"doc"`
}

// ArtifactRecord is an artifact's metadata row.
type ArtifactRecord struct {
	Ref              string `json:"ref"`
	Type             string `json:"type"`
	Mime             string `json:"mime"`
	Name             string `json:"name"`
	Size             int64  `json:"size"`
	Hash             string `json:"hash"`
	PreviewText      string `json:"preview_text"`
	PreviewLines     int    `json:"preview_lines"`
	PreviewTruncated bool   `json:"preview_truncated"`
	CreatedBy        string `json:"created_by"`
	Capability       string `json:"capability"`
	SourceRefs       string `json:"source_refs"`
	CreatedAt        string `json:"created_at"`
}

// EventRecord is one event; ids are store-wide, so an import assigns new ones in order.
type EventRecord struct {
	ID   int64           `json:"id"`
	Type string          `json:"type"`
	At   string          `json:"at"`
	Data json.RawMessage `json:"data"`
}
