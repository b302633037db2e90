// Package memory owns the contract of relay's memory: threads, versioned JSON-Patch state,
// artifacts and events, as the Store interface and its types. It imports no net/http and no
// database; internal/memory/server serves a Store over HTTP.
//
// The layers above (capabilities, search, agent-to-agent messages, bundles) reach storage
// only through the Store interface (extensions.go), so a backend is one package that
// implements it: internal/memory/sqlite today.
package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// Store is the storage engine behind the daemon. Implementations must be safe for concurrent use.
type Store interface {
	CreateThread(ctx context.Context, p CreateThreadParams) (Thread, error)
	ListThreads(ctx context.Context, limit int) ([]Thread, error)
	GetThread(ctx context.Context, id string) (Thread, error)

	// State returns the state document at version (0 = latest).
	State(ctx context.Context, threadID string, version int) (State, error)
	// Header returns the bounded header of the latest state and whether entries were dropped.
	Header(ctx context.Context, threadID string) (Header, error)
	// PatchState applies a JSON Patch atomically. expected is the version the patch was made
	// against (0 = current, no staleness check); a stale one returns *ConflictError.
	PatchState(ctx context.Context, threadID string, patch []byte, expected int, author string) (PatchResult, error)
	// Versions lists versions greater than after, oldest first.
	Versions(ctx context.Context, threadID string, after, limit int) ([]Version, error)

	PutArtifact(ctx context.Context, threadID string, p PutArtifactParams) (Artifact, error)
	// GetArtifact resolves ref within the thread: a full ref, the short one relay shows, or
	// (for notes written before refs had one form) a unique prefix of the hash or full ref.
	GetArtifact(ctx context.Context, threadID, ref string) (Artifact, error)
	// FindArtifact resolves a full or short ref in the whole store, for a ref given without
	// its thread; a short ref two artifacts share is an ambiguous_ref error naming both.
	FindArtifact(ctx context.Context, ref string) (Artifact, error)
	// SharedShorts reports which of the given short refs name more than one artifact.
	SharedShorts(ctx context.Context, shorts []string) (map[string]bool, error)
	ArtifactContent(ctx context.Context, threadID, ref string) (Artifact, []byte, error)
	ListArtifacts(ctx context.Context, threadID string, opt ListArtifactsOptions) ([]Artifact, error)

	AppendEvent(ctx context.Context, threadID, typ string, data any) (Event, error)
	// Events lists events with id greater than after, oldest first.
	Events(ctx context.Context, threadID string, after int64, limit int) ([]Event, error)
	// Subscribe returns a channel that receives a value (coalesced) whenever the thread gets
	// a new event; cancel releases it.
	Subscribe(threadID string) (ch <-chan struct{}, cancel func())

	// AddMetrics adds to the thread's header counters (cache hits, tokens avoided).
	AddMetrics(ctx context.Context, threadID string, m Metrics) error
	Stats(ctx context.Context) (StoreStats, error)
	// Check verifies storage integrity (PRAGMA integrity_check for SQLite).
	Check(ctx context.Context) error
	// Describe names the backend and where it keeps its data, for status and doctor.
	Describe() StoreInfo
	Close() error

	CapabilityStore
	Searcher
	HopLedger
	Dumper
}

// StoreInfo describes a store for humans: which backend, where, and any degraded part.
type StoreInfo struct {
	Backend  string `json:"backend"`  // "sqlite", "postgres"
	Location string `json:"location"` // a file path, or a URL without its password
	// MirrorError is the last failure of the human-readable file mirror, if any.
	MirrorError string `json:"mirror_error,omitempty"`
	// Listen is how a store shared by several daemons hears the others' events; nil for a
	// store only this daemon writes.
	Listen *ListenInfo `json:"listen,omitempty"`
}

// ListenInfo is the state of a shared store's event notifications.
type ListenInfo struct {
	// Connected is false while the connection that receives the notifications is down
	// (followers of this daemon then see other daemons' events only once it is back).
	Connected bool `json:"connected"`
	// Since is when the connection was last made, or lost when Connected is false.
	Since Time `json:"since"`
	// Reconnects counts the times it was made again after being lost.
	Reconnects int `json:"reconnects"`
}

// Thread is a thread's summary row.
type Thread struct {
	ID            string  `json:"thread_id"`
	Name          string  `json:"name"`
	CreatedAt     Time    `json:"created_at"`
	UpdatedAt     Time    `json:"updated_at"`
	Version       int     `json:"version"`
	StateRef      string  `json:"state_ref"`
	ArtifactCount int     `json:"artifact_count"`
	EventCount    int     `json:"event_count"`
	LastEventID   int64   `json:"last_event_id"`
	Metrics       Metrics `json:"metrics"`
	// Reused is set when CreateThread returned an existing thread (NameTakenReuse).
	Reused bool `json:"reused,omitempty"`
}

// CreateThreadParams are the inputs of CreateThread.
type CreateThreadParams struct {
	Name string
	// IfNameTaken says what happens when another thread already has Name (names are unique
	// per store; unnamed threads are not checked): NameTakenFail, NameTakenReuse or NameTakenNext.
	IfNameTaken string
}

// What CreateThread does with a name another thread has.
const (
	NameTakenFail  = ""      // fail with *NameTakenError naming that thread
	NameTakenReuse = "reuse" // return that thread, with Reused set
	NameTakenNext  = "next"  // take the first free "name (2)", "name (3)", …
)

// CheckIfNameTaken validates CreateThreadParams.IfNameTaken.
func CheckIfNameTaken(v string) error {
	switch v {
	case NameTakenFail, "error", NameTakenReuse, NameTakenNext:
		return nil
	}
	return BadRequest("if_name_taken is one of: error, reuse, next (got %q)", v)
}

// FreeName is name when taken says no thread has it, else the first of "name (2)",
// "name (3)", … that none has; a copy of "demo (2)" is "demo (3)". Backends call it inside
// the write transaction that creates the thread, so two writers cannot take one name.
func FreeName(name string, taken func(string) (bool, error)) (string, error) {
	base, n := name, 1
	if m := copySuffix().FindStringSubmatch(name); m != nil {
		base = m[1]
		n, _ = strconv.Atoi(m[2])
	}
	for cand := name; ; {
		t, err := taken(cand)
		if err != nil {
			return "", fmt.Errorf("look up thread name: %w", err)
		}
		if !t {
			return cand, nil
		}
		n++
		cand = fmt.Sprintf("%s (%d)", base, n)
	}
}

// ThreadName applies the name rule for a thread being created, in the creating write
// transaction: the name to create it under, or the id of the thread to reuse. first is the
// store's lookup of the oldest thread with a name ("" when none has it); free is FreeName in
// the same transaction. Stores keep only their SQL; the decision is here once.
func ThreadName(p CreateThreadParams, first func(name string) (id string, err error), free func(name string) (string, error)) (name, reuse string, err error) {
	if p.Name == "" {
		return "", "", nil
	}
	existing, err := first(p.Name)
	switch {
	case err != nil:
		return "", "", fmt.Errorf("look up thread name: %w", err)
	case existing == "":
		return p.Name, "", nil
	case p.IfNameTaken == NameTakenReuse:
		return "", existing, nil
	case p.IfNameTaken == NameTakenNext:
		name, err = free(p.Name)
		return name, "", err
	}
	return "", "", &NameTakenError{Name: p.Name, ThreadID: existing}
}

// NameBase is name without a " (n)" copy suffix.
func NameBase(name string) string {
	if m := copySuffix().FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return name
}

var copySuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(.*) \(([0-9]{1,6})\)$`) })

// State is one version of a thread's state document.
type State struct {
	ThreadID string
	Version  int
	Doc      json.RawMessage
}

// Header is the bounded, token-efficient view of the latest state.
type Header struct {
	Version   int
	JSON      json.RawMessage
	Truncated bool
}

// PatchResult reports an accepted patch.
type PatchResult struct {
	ThreadID string `json:"thread_id"`
	Version  int    `json:"version"`
	StateRef string `json:"state_ref"`
	EventID  int64  `json:"event_id"`
}

// Version is one entry of a thread's state history.
type Version struct {
	Version   int             `json:"version"`
	StateRef  string          `json:"state_ref"`
	CreatedAt Time            `json:"created_at"`
	Author    string          `json:"author"`
	EventID   int64           `json:"event_id"`
	Patch     json.RawMessage `json:"patch"`
}

// Artifact types.
const (
	TypeMarkdown   = "markdown"
	TypeJSON       = "json"
	TypeHTML       = "html"
	TypeText       = "text"
	TypeBinary     = "binary"
	TypeToolOutput = "tool_output"
	TypeEmail      = "email"
)

// ArtifactTypes lists the valid artifact types.
var ArtifactTypes = []string{TypeMarkdown, TypeJSON, TypeHTML, TypeText, TypeBinary, TypeToolOutput, TypeEmail}

// Artifact is stored content's metadata; the bytes are read with ArtifactContent. Stores
// return the full ref in Ref; what leaves the daemon carries the one ref relay shows (Named).
type Artifact struct {
	Ref          string     `json:"ref"`
	ThreadID     string     `json:"thread_id"`
	Type         string     `json:"type"`
	Mime         string     `json:"mime"`
	Name         string     `json:"name"`
	Size         int64      `json:"size"`
	Hash         string     `json:"hash"`
	Preview      Preview    `json:"preview"`
	Provenance   Provenance `json:"provenance"`
	CreatedAt    Time       `json:"created_at"`
	Deduplicated bool       `json:"deduplicated"`
	// ShortUnique: the put that created it drew its short ref unique store-wide, so the
	// short form names it with no lookup (set only on a put's result).
	ShortUnique bool `json:"-"`
}

// Preview is the bounded, sanitized start of an artifact.
type Preview struct {
	Text      string `json:"text"`
	LineCount int    `json:"line_count"`
	Truncated bool   `json:"truncated"`
	Size      int64  `json:"size"`
}

// Provenance records who made an artifact and from what.
type Provenance struct {
	CreatedBy  string   `json:"created_by"`
	CreatedAt  Time     `json:"created_at"`
	SourceRefs []string `json:"source_refs"`
	Capability string   `json:"capability"`
}

// PutArtifactParams are the inputs of PutArtifact. Type is detected when empty.
type PutArtifactParams struct {
	Name    string
	Type    string
	Content []byte
	// Sum is Content's sha256 in hex when the caller has it already (an upload hashed as it
	// was read); empty, the store computes it.
	Sum        string
	CreatedBy  string
	Capability string
	SourceRefs []string
}

// ListArtifactsOptions filter ListArtifacts.
type ListArtifactsOptions struct {
	Type  string
	After string
	// Before lists refs lower than this one (any hex prefix bound), newest first.
	Before string
	Limit  int
}

// Event is one entry of a thread's append-only log.
type Event struct {
	ID int64 `json:"id"` // store-wide, increasing: the SSE cursor (?after=, Last-Event-ID)
	// Seq is the event's position in its thread, from 1: what people number events by
	// (ids are shared by all threads). Set by Store.Events; zero (omitted) elsewhere.
	Seq      int64           `json:"seq,omitempty"`
	ThreadID string          `json:"thread_id"`
	Type     string          `json:"type"`
	At       Time            `json:"at"`
	Data     json.RawMessage `json:"data"`
}

// ReportAuthor is the created_by of the reports the daemon stores in a thread; they are
// about the thread, not agent content.
const ReportAuthor = "relay report"

// Core event types.
const (
	EventThreadCreated  = "thread.created"
	EventStatePatched   = "state.patched"
	EventArtifactStored = "artifact.stored"
)

// Metrics are a thread's header counters.
type Metrics struct {
	CacheHits     int64 `json:"cache_hits"`
	TokensAvoided int64 `json:"tokens_avoided"`
}

// StoreStats describe the whole store.
type StoreStats struct {
	Threads   int64  `json:"threads"`
	Artifacts int64  `json:"artifacts"`
	Events    int64  `json:"events"`
	Bytes     int64  `json:"bytes"`
	Path      string `json:"path"`
	// IndexPending and IndexPendingBytes are how far the search index trails the puts
	// (stores that index in the background; 0 otherwise).
	IndexPending      int64 `json:"index_pending"`
	IndexPendingBytes int64 `json:"index_pending_bytes"`
	// IndexMergeDue: enough was indexed since the index was last merged into one segment
	// that the indexer will merge it once idle (SQLite's background index).
	IndexMergeDue bool `json:"index_merge_due,omitempty"`
}

// Limits of the store.
const (
	MaxNameLen    = 200
	MaxStateBytes = 8 << 20
	// MaxArtifactSize bounds an artifact whose body is kept in the store's database.
	MaxArtifactSize = 50 << 20
	// MaxBucketArtifactSize bounds an artifact whose body goes to a bucket (--artifacts):
	// it streams through the daemon and is never whole in its memory, so only the time an
	// upload takes and the bucket's own limits matter.
	// Typed: 5 GiB overflows int on 32-bit platforms.
	MaxBucketArtifactSize int64 = 5 << 30
	PreviewBytes                = 2048
)

// StateRef formats a version as a state_ref ("v7").
func StateRef(v int) string { return "v" + strconv.Itoa(v) }

// Time marshals as RFC 3339 UTC with milliseconds.
type Time struct{ time.Time }

const timeLayout = "2006-01-02T15:04:05.000Z"

func (t Time) String() string { return t.UTC().Format(timeLayout) }

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) { return []byte(`"` + t.String() + `"`), nil }

// UnmarshalJSON implements json.Unmarshaler.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	p, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.Time = p
	return nil
}

// ParseTime reads a stored RFC 3339 time; a malformed one is the zero time.
func ParseTime(s string) Time {
	p, _ := time.Parse(time.RFC3339Nano, s)
	return Time{p}
}

// EncodeEvent validates an event's type and encodes its data (JSON bytes are kept as they
// are; nil data is {}), the same for every backend.
func EncodeEvent(typ string, data any) ([]byte, error) {
	if typ == "" || len(typ) > 100 {
		return nil, BadRequest("event type must be 1..100 characters")
	}
	var b []byte
	switch d := data.(type) {
	case json.RawMessage:
		b = d
	case []byte:
		b = d
	default:
		var err error
		if b, err = json.Marshal(data); err != nil {
			return nil, fmt.Errorf("encode event data: %w", err)
		}
	}
	if len(b) == 0 {
		b = []byte("{}")
	}
	if !json.Valid(b) {
		return nil, BadRequest("event data is not valid JSON")
	}
	return b, nil
}
