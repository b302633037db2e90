package ask

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Ledger is relay ask's record of every call to a friend, kept in
// $RELAY_HOME/ask/ledger.jsonl (one JSON line a call, mode 0600), so
// `relay stats --friends` can say per friend and model how often it was
// asked, how it failed, how long it took and what it cost.
type Ledger struct {
	Path string
}

// LedgerEntry is one call.
type LedgerEntry struct {
	Time         time.Time `json:"time"`
	Backend      string    `json:"backend"`
	Model        string    `json:"model,omitempty"`
	Failure      string    `json:"failure,omitempty"` // the failure kind; "" when answered
	DurationMS   int64     `json:"duration_ms"`
	InputTokens  *int64    `json:"input_tokens,omitempty"`
	OutputTokens *int64    `json:"output_tokens,omitempty"`
	CostUSD      *float64  `json:"cost_usd,omitempty"`
}

// maxLedgerBytes: past this the ledger starts over (the old one is kept as
// ledger.jsonl.1), so a busy machine's record stays bounded.
const maxLedgerBytes = 8 << 20

// Record appends one entry per answer; a ledger that cannot be written never
// fails the ask.
func (l *Ledger) Record(now time.Time, answers []Answer) error {
	if l == nil || l.Path == "" || len(answers) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(l.Path), 0o700); err != nil {
		return err
	}
	if fi, err := os.Lstat(l.Path); err == nil && (!fi.Mode().IsRegular() || fi.Size() > maxLedgerBytes) {
		if !fi.Mode().IsRegular() {
			return errors.New("the ledger is not a regular file")
		}
		_ = os.Rename(l.Path, l.Path+".1")
	}
	f, err := os.OpenFile(l.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	for _, a := range answers {
		e := LedgerEntry{Time: now.UTC(), Backend: a.Backend, Model: a.Model, Failure: a.Failure,
			DurationMS: a.Duration.Milliseconds(), InputTokens: a.InputTokens, OutputTokens: a.OutputTokens, CostUSD: a.CostUSD}
		if a.Err != nil && e.Failure == "" {
			e.Failure = a.Err.Kind.String()
		}
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		w.Write(append(b, '\n'))
	}
	return w.Flush()
}

// Read returns every entry; lines that are not entries are skipped.
func (l *Ledger) Read() ([]LedgerEntry, error) {
	f, err := os.Open(l.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []LedgerEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e LedgerEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Backend != "" {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// LedgerRow sums one friend and model.
type LedgerRow struct {
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

// Summarize groups entries by friend and model, sorted by friend then model.
// Latency percentiles are over answered calls (nearest rank).
func Summarize(entries []LedgerEntry) []LedgerRow {
	type key struct{ b, m string }
	rows := map[key]*LedgerRow{}
	lat := map[key][]int64{}
	for _, e := range entries {
		k := key{e.Backend, e.Model}
		r := rows[k]
		if r == nil {
			r = &LedgerRow{Backend: e.Backend, Model: e.Model, Failures: map[string]int{}}
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
	out := make([]LedgerRow, 0, len(rows))
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
