package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/relaydev/relay/internal/ask/ledger"
	"github.com/relaydev/relay/internal/memory"
)

// maxLedgerName bounds a friend or model name read from an event: event data is what any
// writer of the thread sent.
const maxLedgerName = 64

// Friends sums the thread's ask events per friend and model; events that do not parse
// as an ask's are skipped.
func Friends(events []memory.Event) []ledger.Row {
	var entries []ledger.Entry
	for _, e := range events {
		if e.Type != ledger.EventAnswered && e.Type != ledger.EventFailed {
			continue
		}
		var d struct {
			Backend      string   `json:"backend"`
			Model        string   `json:"model"`
			Failure      string   `json:"failure"`
			DurationMS   int64    `json:"duration_ms"`
			InputTokens  *int64   `json:"input_tokens"`
			OutputTokens *int64   `json:"output_tokens"`
			CostUSD      *float64 `json:"cost_usd"`
		}
		if json.Unmarshal(e.Data, &d) != nil || d.Backend == "" || len(d.Backend) > maxLedgerName || len(d.Model) > maxLedgerName || d.DurationMS < 0 {
			continue
		}
		if e.Type == ledger.EventFailed && d.Failure == "" {
			d.Failure = "failed"
		}
		if e.Type == ledger.EventAnswered {
			d.Failure = ""
		}
		if len(d.Failure) > maxLedgerName {
			d.Failure = d.Failure[:maxLedgerName]
		}
		entries = append(entries, ledger.Entry{Time: e.At.Time, Backend: d.Backend, Model: d.Model, Failure: d.Failure,
			DurationMS: d.DurationMS, InputTokens: d.InputTokens, OutputTokens: d.OutputTokens, CostUSD: d.CostUSD})
	}
	rows := ledger.Summarize(entries)
	if rows == nil {
		rows = []ledger.Row{}
	}
	return rows
}

// writeFriends renders the friends table of the markdown report.
func writeFriends(b io.Writer, rows []ledger.Row) {
	fmt.Fprintf(b, "## Friends asked (%d)\n\n", len(rows))
	if len(rows) == 0 {
		return
	}
	io.WriteString(b, "| friend | model | calls | failed | p50 | p95 | tokens in/out | cost |\n|---|---|---:|---|---:|---:|---:|---:|\n")
	for _, r := range rows {
		c := r.Cells()
		fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", mdEscape(r.Backend), mdEscape(c.Model), r.Calls, mdEscape(c.Failed),
			c.P50, c.P95, c.Tokens, c.Cost)
	}
	io.WriteString(b, "\n")
}
