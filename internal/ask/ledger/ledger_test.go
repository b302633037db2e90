package ledger

import "testing"

func TestCells(t *testing.T) {
	r := Row{Backend: "codex", Calls: 3, Failures: map[string]int{"timeout": 1, "network": 2}, P50MS: 1500, P95MS: 61000,
		InputTokens: 120, OutputTokens: 45, Reported: 2, CostUSD: 0.01234}
	got := r.Cells()
	want := Cells{Model: "-", Failed: "1 timeout, 2 network", P50: "1.5s", P95: "1m1s", Tokens: "120/45", Cost: "$0.0123"}
	if got != want {
		t.Fatalf("cells:\n got %+v\nwant %+v", got, want)
	}
	// Nothing reported: dashes, not zeros that read as measured.
	got = Row{Backend: "qwen", Model: "qwen3-coder", Calls: 1}.Cells()
	want = Cells{Model: "qwen3-coder", Failed: "0", P50: "0s", P95: "0s", Tokens: "-", Cost: "-"}
	if got != want {
		t.Fatalf("cells:\n got %+v\nwant %+v", got, want)
	}
}
