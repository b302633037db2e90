package ask

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/ask/backend"
)

func TestLedgerSummarize(t *testing.T) {
	l := &Ledger{Path: filepath.Join(t.TempDir(), "ask", "ledger.jsonl")}
	in, out, cost := int64(10), int64(2), 0.5
	var answers []Answer
	for i := 1; i <= 20; i++ {
		answers = append(answers, Answer{Backend: "claude", Model: "m", Duration: time.Duration(i) * time.Second, InputTokens: &in, OutputTokens: &out, CostUSD: &cost})
	}
	answers = append(answers, Answer{Backend: "claude", Model: "m", Err: &Error{Kind: backend.KindTimeout}},
		Answer{Backend: "codex", Failure: "unreachable", Err: &Error{Kind: backend.KindUnreachable}})
	if err := l.Record(time.Now(), answers); err != nil {
		t.Fatal(err)
	}
	entries, err := l.Read()
	if err != nil || len(entries) != 22 {
		t.Fatalf("read %d entries, %v", len(entries), err)
	}
	rows := Summarize(entries)
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	c := rows[0]
	if c.Backend != "claude" || c.Calls != 21 || c.Failures["timeout"] != 1 || c.P50MS != 10_000 || c.P95MS != 19_000 ||
		c.InputTokens != 200 || c.OutputTokens != 40 || c.CostUSD != 10 || c.Reported != 20 {
		t.Errorf("claude row %+v", c)
	}
	if x := rows[1]; x.Backend != "codex" || x.Calls != 1 || x.Failures["unreachable"] != 1 || x.P50MS != 0 {
		t.Errorf("codex row %+v", x)
	}
}
