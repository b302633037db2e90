package report

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/memory"
)

// TestReportFriends: the thread's ask events become its ledger (per friend and model:
// calls, failures by kind, latency, tokens, cost); data that is not an ask's is skipped.
func TestReportFriends(t *testing.T) {
	st, src := setup(t)
	ctx := context.Background()
	th, _ := st.CreateThread(ctx, memory.CreateThreadParams{Name: "asks"})
	for _, e := range []struct {
		typ  string
		data map[string]any
	}{
		{"ask.answered", map[string]any{"backend": "claude", "model": "opus", "duration_ms": 1000, "input_tokens": 100, "output_tokens": 7, "cost_usd": 0.01}},
		{"ask.answered", map[string]any{"backend": "claude", "model": "opus", "duration_ms": 3000, "input_tokens": 50, "output_tokens": 3, "cost_usd": 0.02}},
		{"ask.answered", map[string]any{"backend": "codex", "duration_ms": 2000}},
		{"ask.failed", map[string]any{"backend": "codex", "failure": "unreachable", "duration_ms": 4000}},
		{"ask.failed", map[string]any{"backend": "codex"}},
		// hostile or foreign: skipped
		{"ask.answered", map[string]any{"backend": strings.Repeat("x", 500), "duration_ms": 1}},
		{"ask.answered", map[string]any{"backend": "qwen", "duration_ms": "soon"}},
		{"ask.answered", map[string]any{"backend": "qwen", "duration_ms": -5}},
		{"ask.job.started", map[string]any{"backend": "qwen"}},
	} {
		if _, err := st.AppendEvent(ctx, th.ID, e.typ, e.data); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Build(ctx, src, th.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Friends) != 2 {
		t.Fatalf("friends = %+v", r.Friends)
	}
	c, x := r.Friends[0], r.Friends[1]
	if c.Backend != "claude" || c.Model != "opus" || c.Calls != 2 || c.P50MS != 1000 || c.P95MS != 3000 || c.InputTokens != 150 || c.OutputTokens != 10 || c.Reported != 2 || c.CostUSD < 0.0299 || c.CostUSD > 0.0301 {
		t.Errorf("claude = %+v", c)
	}
	if x.Backend != "codex" || x.Calls != 3 || x.Failures["unreachable"] != 1 || x.Failures["failed"] != 1 || x.P50MS != 2000 || x.Reported != 0 {
		t.Errorf("codex = %+v", x)
	}
	md := string(r.Markdown())
	for _, want := range []string{"## Friends asked (2)", "| claude | opus | 2 | 0 | 1s | 3s | 150/10 | $0.0300 |", "| codex | - | 3 | 1 failed, 1 unreachable | 2s | 2s | - | - |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
