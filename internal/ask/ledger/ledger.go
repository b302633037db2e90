// Package ledger sums calls to friends per friend and model: calls, failures by kind,
// latency p50/p95, and tokens and cost where the friend reported them. relay stats
// --friends sums the machine's ledger file with it, relay report a thread's ask events.
package ledger

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Entry is one call to a friend.
type Entry struct {
	Time         time.Time `json:"time"`
	Backend      string    `json:"backend"`
	Model        string    `json:"model,omitempty"`
	Failure      string    `json:"failure,omitempty"` // the failure kind; "" when answered
	DurationMS   int64     `json:"duration_ms"`
	InputTokens  *int64    `json:"input_tokens,omitempty"`
	OutputTokens *int64    `json:"output_tokens,omitempty"`
	CostUSD      *float64  `json:"cost_usd,omitempty"`
}

// Row sums one friend and model.
type Row struct {
	Backend      string         `json:"backend"`
	Model        string         `json:"model"`
	Calls        int            `json:"calls"`
	Failures     map[string]int `json:"failures"`
	P50MS        int64          `json:"latency_p50_ms"`
	P95MS        int64          `json:"latency_p95_ms"`
	InputTokens  int64          `json:"input_tokens"`
	OutputTokens int64          `json:"output_tokens"`
	CostUSD      float64        `json:"cost_usd"`
	// Reported counts the calls whose friend reported tokens (the sums cover only those).
	Reported int `json:"usage_reported"`
}

// EventAnswered is the thread event relay ask appends for each answer and EventFailed the
// one for each friend that failed: with the friend, model, duration, tokens and cost (or
// the failure's kind) they are a thread's ledger, read back by relay report.
const (
	EventAnswered = "ask.answered"
	EventFailed   = "ask.failed"
)

// Cells are a row's figures as a table shows them: "-" where nothing was reported, failures
// as "N kind" sorted, latencies as durations.
type Cells struct {
	Model, Failed, P50, P95, Tokens, Cost string
}

// Cells renders r for a table (relay stats --friends, the thread's report).
func (r Row) Cells() Cells {
	c := Cells{Model: r.Model, Failed: "0", Tokens: "-", Cost: "-",
		P50: (time.Duration(r.P50MS) * time.Millisecond).String(), P95: (time.Duration(r.P95MS) * time.Millisecond).String()}
	if c.Model == "" {
		c.Model = "-"
	}
	if len(r.Failures) > 0 {
		var parts []string
		for k, n := range r.Failures {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
		sort.Strings(parts)
		c.Failed = strings.Join(parts, ", ")
	}
	if r.Reported > 0 {
		c.Tokens = fmt.Sprintf("%d/%d", r.InputTokens, r.OutputTokens)
	}
	if r.CostUSD > 0 {
		c.Cost = fmt.Sprintf("$%.4f", r.CostUSD)
	}
	return c
}

// Summarize groups entries by friend and model, sorted by friend then model.
// Latency percentiles are over answered calls (nearest rank).
func Summarize(entries []Entry) []Row {
	type key struct{ b, m string }
	rows := map[key]*Row{}
	lat := map[key][]int64{}
	for _, e := range entries {
		k := key{e.Backend, e.Model}
		r := rows[k]
		if r == nil {
			r = &Row{Backend: e.Backend, Model: e.Model, Failures: map[string]int{}}
			rows[k] = r
		}
		r.Calls++
		if e.Failure != "" {
			r.Failures[e.Failure]++
			continue
		}
		lat[k] = append(lat[k], e.DurationMS)
		if e.InputTokens != nil || e.OutputTokens != nil {
			r.Reported++
		}
		if e.InputTokens != nil {
			r.InputTokens += *e.InputTokens
		}
		if e.OutputTokens != nil {
			r.OutputTokens += *e.OutputTokens
		}
		if e.CostUSD != nil {
			r.CostUSD += *e.CostUSD
		}
	}
	out := make([]Row, 0, len(rows))
	for k, r := range rows {
		ls := lat[k]
		sort.Slice(ls, func(i, j int) bool { return ls[i] < ls[j] })
		r.P50MS, r.P95MS = percentile(ls, 50), percentile(ls, 95)
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Backend != out[j].Backend {
			return out[i].Backend < out[j].Backend
		}
		return out[i].Model < out[j].Model
	})
	return out
}

// percentile is the nearest-rank percentile of sorted values (0 when empty).
func percentile(sorted []int64, p int) int64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}
