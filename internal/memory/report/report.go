// Package report builds what `relay stats` and `relay report` show about a thread: token
// savings (real BPE counts beside the bytes/4 estimate), cache hits, state summary,
// artifacts, the events timeline and capability calls.
package report

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/relaydev/relay/internal/ask/ledger"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/capability"
	"github.com/relaydev/relay/internal/memory/statedoc"
	"github.com/relaydev/relay/internal/tokens"
)

// Source is where a report reads from. Only Store and Tokens are required.
type Source struct {
	Store  memory.Store
	Tokens *tokens.Cache
	// Calls returns the thread's capability call log.
	Calls func(ctx context.Context, threadID string) ([]capability.Call, error)
	// SessionCacheHits returns cache hits since the daemon started.
	SessionCacheHits func(threadID string) int64
	// Hops returns the thread's A2A hop count.
	Hops func(ctx context.Context, threadID string) (int, error)
}

// Estimate holds the bytes/4 figures (a rough rule, shown beside the real counts).
type Estimate struct {
	NaiveTokens   int `json:"naive_tokens"`
	ActualTokens  int `json:"actual_tokens"`
	AvoidedTokens int `json:"avoided_tokens"`
}

// Savings compares pasting every artifact into prompts (naive) with sending the state
// header plus artifact previews (actual): what an agent reads with relay against without.
type Savings struct {
	Encoding      string   `json:"encoding"`
	NaiveTokens   int      `json:"naive_tokens"`
	ActualTokens  int      `json:"actual_tokens"`
	AvoidedTokens int      `json:"avoided_tokens"`
	HeaderTokens  int      `json:"header_tokens"`
	PreviewTokens int      `json:"preview_tokens"`
	ReductionPct  float64  `json:"reduction_pct"`
	Estimate      Estimate `json:"estimate_bytes_div_4"`
}

// Stats is `relay stats` / GET /threads/{id}/stats.
type Stats struct {
	ThreadID         string   `json:"thread_id"`
	Artifacts        int      `json:"artifacts"`
	NaiveTokens      int      `json:"naive_tokens"`
	ActualTokens     int      `json:"actual_tokens"`
	TokensAvoided    int      `json:"tokens_avoided"`
	CacheHits        int64    `json:"cache_hits"`
	SessionCacheHits int64    `json:"session_cache_hits"`
	Encoding         string   `json:"encoding"`
	Estimate         Estimate `json:"estimate_bytes_div_4"`
	CapabilityCalls  int      `json:"capability_calls"`
	A2AHops          int      `json:"a2a_hops"`
}

// allArtifacts pages through a thread's artifacts.
func allArtifacts(ctx context.Context, st memory.Store, id string) ([]memory.Artifact, error) {
	var out []memory.Artifact
	after := ""
	for {
		page, err := st.ListArtifacts(ctx, id, memory.ListArtifactsOptions{After: after, Limit: 1000})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < 1000 {
			return out, nil
		}
		after = page[len(page)-1].Ref
	}
}

func allEvents(ctx context.Context, st memory.Store, id string) ([]memory.Event, error) {
	var out []memory.Event
	var after int64
	for {
		page, err := st.Events(ctx, id, after, 1000)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < 1000 {
			return out, nil
		}
		after = page[len(page)-1].ID
	}
}

// Author is the created_by of the reports the daemon stores in a thread (POST /reports/{id}).
const Author = memory.ReportAuthor

// ComputeSavings is relay's one definition of tokens avoided, used by stats, reports, the
// header's m.saved and the web UI: naive is every agent artifact pasted in full, actual is the
// header (less its counters) plus every artifact's preview, both counted with the real BPE
// tokenizer; avoided = naive - actual, negative when relay cost more than it saved (a thread
// of small artifacts, whose previews are the whole content, plus the header).
func ComputeSavings(ctx context.Context, src Source, id string, arts []memory.Artifact, header []byte) (Savings, error) {
	c := src.Tokens
	s := Savings{Encoding: c.Counter().Name()}
	// The header is counted as agents receive it, less its own counters ("m"), which
	// would otherwise have to count themselves.
	header = statedoc.StripMetrics(header)
	s.HeaderTokens = c.Counter().Count(header)
	s.Estimate.ActualTokens = tokens.Estimate(len(header))
	for _, a := range arts {
		// relay's stored reports are not agent content: counting them let every report inflate the savings
		if a.Provenance.CreatedBy == Author {
			continue
		}
		var n int
		if a.Size > memory.MaxArtifactSize {
			// A body in a bucket can be gigabytes: estimated by size, not read whole.
			n = tokens.Estimate(int(a.Size))
		} else {
			var err error
			n, err = c.Count(a.Hash, func() ([]byte, error) {
				_, b, err := src.Store.ArtifactContent(ctx, id, a.Ref)
				return b, err
			})
			if err != nil {
				return s, fmt.Errorf("count tokens of artifact %s: %w", a.Ref, err)
			}
		}
		s.NaiveTokens += n
		s.Estimate.NaiveTokens += tokens.Estimate(int(a.Size))
		p := []byte(a.Preview.Text)
		pn, _ := c.Count("preview:"+a.Hash, func() ([]byte, error) { return p, nil })
		s.PreviewTokens += pn
		s.Estimate.ActualTokens += tokens.Estimate(len(p))
	}
	s.ActualTokens = s.HeaderTokens + s.PreviewTokens
	s.AvoidedTokens = s.NaiveTokens - s.ActualTokens
	s.Estimate.AvoidedTokens = s.Estimate.NaiveTokens - s.Estimate.ActualTokens
	if s.NaiveTokens > 0 {
		s.ReductionPct = float64(int(1000*float64(s.AvoidedTokens)/float64(s.NaiveTokens))) / 10
	}
	return s, nil
}

// ComputeStats builds the stats table for one thread.
func ComputeStats(ctx context.Context, src Source, id string) (*Stats, error) {
	th, err := src.Store.GetThread(ctx, id)
	if err != nil {
		return nil, err
	}
	arts, err := allArtifacts(ctx, src.Store, id)
	if err != nil {
		return nil, err
	}
	h, err := src.Store.Header(ctx, id)
	if err != nil {
		return nil, err
	}
	sv, err := ComputeSavings(ctx, src, id, arts, h.JSON)
	if err != nil {
		return nil, err
	}
	st := &Stats{ThreadID: id, Artifacts: len(arts), NaiveTokens: sv.NaiveTokens, ActualTokens: sv.ActualTokens,
		TokensAvoided: sv.AvoidedTokens, CacheHits: th.Metrics.CacheHits, Encoding: sv.Encoding, Estimate: sv.Estimate}
	if src.SessionCacheHits != nil {
		st.SessionCacheHits = src.SessionCacheHits(id)
	}
	if src.Calls != nil {
		calls, err := src.Calls(ctx, id)
		if err != nil {
			return nil, err
		}
		st.CapabilityCalls = len(calls)
	}
	if src.Hops != nil {
		if st.A2AHops, err = src.Hops(ctx, id); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// StateSummary counts the state document's lists.
type StateSummary struct {
	Version       int             `json:"version"`
	StateRef      string          `json:"state_ref"`
	Facts         int             `json:"facts"`
	Constraints   int             `json:"constraints"`
	OpenQuestions int             `json:"open_questions"`
	Decisions     int             `json:"decisions"`
	PlanPending   int             `json:"plan_pending"`
	PlanDone      int             `json:"plan_done"`
	Header        json.RawMessage `json:"header"`
}

// ArtifactRow is one artifact in a report (no preview text: reports stay small).
type ArtifactRow struct {
	Ref        string      `json:"ref"`
	Name       string      `json:"name"`
	Type       string      `json:"type"`
	Size       int64       `json:"size"`
	Hash       string      `json:"hash"`
	CreatedBy  string      `json:"created_by,omitempty"`
	Capability string      `json:"capability,omitempty"`
	CreatedAt  memory.Time `json:"created_at"`
}

// CapUsage is per-capability totals.
type CapUsage struct {
	Capability string `json:"capability"`
	Calls      int    `json:"calls"`
	CacheHits  int    `json:"cache_hits"`
}

// Report is `relay report` / POST /reports/{id}.
type Report struct {
	Schema       string            `json:"$schema"`
	GeneratedAt  memory.Time       `json:"generated_at"`
	Thread       memory.Thread     `json:"thread"`
	State        StateSummary      `json:"state"`
	Artifacts    []ArtifactRow     `json:"artifacts"`
	Events       []memory.Event    `json:"events"`
	Capabilities []CapUsage        `json:"capabilities"`
	Calls        []capability.Call `json:"capability_calls"`
	A2AHops      int               `json:"a2a_hops"`
	CacheHits    int64             `json:"cache_hits"`
	SessionHits  int64             `json:"session_cache_hits"`
	TokenSavings Savings           `json:"token_savings"`
	// Friends is the thread's relay ask ledger: per friend and model, calls, failures by
	// kind, latency p50/p95, tokens and cost where the friend reported them.
	Friends []ledger.Row `json:"friends"`
}

// SchemaID names the report format.
const SchemaID = "com.relay.report.v1"

// Build assembles the full report.
func Build(ctx context.Context, src Source, id string, now time.Time) (*Report, error) {
	th, err := src.Store.GetThread(ctx, id)
	if err != nil {
		return nil, err
	}
	r := &Report{Schema: SchemaID, GeneratedAt: memory.Time{Time: now.UTC().Truncate(time.Millisecond)}, Thread: th,
		CacheHits: th.Metrics.CacheHits, Artifacts: []ArtifactRow{}, Capabilities: []CapUsage{}, Calls: []capability.Call{}}
	state, err := src.Store.State(ctx, id, 0)
	if err != nil {
		return nil, err
	}
	r.State = summarize(state)
	h, err := src.Store.Header(ctx, id)
	if err != nil {
		return nil, err
	}
	r.State.Header = h.JSON
	arts, err := allArtifacts(ctx, src.Store, id)
	if err != nil {
		return nil, err
	}
	refs := make([]string, len(arts))
	for i, a := range arts {
		refs[i] = a.Ref
	}
	name, err := memory.Names(ctx, src.Store.SharedShorts, refs)
	if err != nil {
		return nil, err
	}
	for _, a := range arts {
		r.Artifacts = append(r.Artifacts, ArtifactRow{Ref: name(a.Ref), Name: a.Name, Type: a.Type, Size: a.Size, Hash: a.Hash,
			CreatedBy: a.Provenance.CreatedBy, Capability: a.Provenance.Capability, CreatedAt: a.CreatedAt})
	}
	if r.Events, err = allEvents(ctx, src.Store, id); err != nil {
		return nil, err
	}
	r.Friends = Friends(r.Events)
	if src.Calls != nil {
		calls, err := src.Calls(ctx, id)
		if err != nil {
			return nil, err
		}
		if calls != nil {
			r.Calls = calls
		}
		by := map[string]*CapUsage{}
		for _, c := range calls {
			u := by[c.Capability]
			if u == nil {
				u = &CapUsage{Capability: c.Capability}
				by[c.Capability] = u
			}
			u.Calls++
			if c.CacheHit {
				u.CacheHits++
			}
		}
		for _, u := range by {
			r.Capabilities = append(r.Capabilities, *u)
		}
		sort.Slice(r.Capabilities, func(i, j int) bool { return r.Capabilities[i].Capability < r.Capabilities[j].Capability })
	}
	if src.SessionCacheHits != nil {
		r.SessionHits = src.SessionCacheHits(id)
	}
	if src.Hops != nil {
		if r.A2AHops, err = src.Hops(ctx, id); err != nil {
			return nil, err
		}
	}
	if r.TokenSavings, err = ComputeSavings(ctx, src, id, arts, h.JSON); err != nil {
		return nil, err
	}
	return r, nil
}

func summarize(s memory.State) StateSummary {
	var doc struct {
		Facts         []json.RawMessage `json:"facts"`
		Constraints   []json.RawMessage `json:"constraints"`
		OpenQuestions []struct {
			Status string `json:"status"`
		} `json:"open_questions"`
		Decisions []json.RawMessage `json:"decisions"`
		Plan      []struct {
			Status string `json:"status"`
		} `json:"plan"`
	}
	_ = json.Unmarshal(s.Doc, &doc) // a state that fails to parse still gets a report, with zero counts
	sum := StateSummary{Version: s.Version, StateRef: memory.StateRef(s.Version), Facts: len(doc.Facts),
		Constraints: len(doc.Constraints), Decisions: len(doc.Decisions)}
	for _, q := range doc.OpenQuestions {
		if q.Status == "" || q.Status == "open" {
			sum.OpenQuestions++
		}
	}
	for _, p := range doc.Plan {
		switch p.Status {
		case "", "pending":
			sum.PlanPending++
		case "done":
			sum.PlanDone++
		}
	}
	return sum
}
