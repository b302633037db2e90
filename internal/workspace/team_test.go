package workspace

import (
	"fmt"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/tokens"
)

// realisticAnswer is a multi-KB review answer of the kind friends give: a verdict
// line, then findings with file:line, reasoning and a code suggestion.
func realisticAnswer(friend string, findings int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: request changes — the retry loop in client.go can double-send on timeout.\n\n", friend)
	for i := 1; i <= findings; i++ {
		fmt.Fprintf(&b, "## Finding %d: internal/client/client.go:%d (major)\n\n", i, 40+i*17)
		b.WriteString("When the context deadline fires after the request body was written but before the response " +
			"header arrived, `doWithRetry` treats the error as retryable and sends the request again. The server " +
			"may already have applied the first one, so a non-idempotent POST (artifact put, event append) is " +
			"applied twice. The fix is to retry only on errors that happen before the connection is used.\n\n")
		fmt.Fprintf(&b, "```go\nif errors.Is(err, errConnNotUsed%d) && attempt < maxAttempts {\n\tcontinue\n}\nreturn nil, err\n```\n\n", i)
	}
	return b.String()
}

func teamPromptFigures(t testing.TB) (byRef, pasted int) {
	c, err := tokens.New(tokens.O200k)
	if err != nil {
		t.Fatal(err)
	}
	prompt := "Review the retry change in internal/client: is it safe to merge?"
	friends := []string{"codex", "claude", "gemini"}
	var refs []TeamRef
	var paste strings.Builder
	paste.WriteString(prompt + "\n\nThe other friends answered in round 1:\n")
	for i, f := range friends {
		a := realisticAnswer(f, 6)
		refs = append(refs, TeamRef{Backend: f, Ref: fmt.Sprintf("%06x", 0xa1b2c3+i), Preview: teamPreview(a)})
		fmt.Fprintf(&paste, "\n=== %s ===\n%s", f, a)
	}
	return c.CountString(TeamPrompt(prompt, 2, refs)), c.CountString(paste.String())
}

// TestTeamRoundTwoTokens: round 2 by reference sends a fraction of pasting round 1.
func TestTeamRoundTwoTokens(t *testing.T) {
	byRef, pasted := teamPromptFigures(t)
	t.Logf("round 2 prompt, 3 friends with ~3 KB answers each: by ref %d o200k tokens, pasted %d o200k tokens (%.1f%%)",
		byRef, pasted, 100*float64(byRef)/float64(pasted))
	if byRef*5 > pasted {
		t.Fatalf("by ref %d tokens is not well under pasted %d", byRef, pasted)
	}
}

func BenchmarkTeamRoundTwoTokens(b *testing.B) {
	var byRef, pasted int
	for b.Loop() {
		byRef, pasted = teamPromptFigures(b)
	}
	b.ReportMetric(float64(byRef), "tokens-by-ref")
	b.ReportMetric(float64(pasted), "tokens-pasted")
}

func TestTeamPromptRefsNotText(t *testing.T) {
	a := realisticAnswer("codex", 2)
	p := TeamPrompt("Q?", 2, []TeamRef{{Backend: "codex", Ref: "abc123", Preview: teamPreview(a)}})
	if !strings.Contains(p, "  abc123 codex: codex: request changes") || !strings.Contains(p, "relay artifact get REF --out -") {
		t.Fatalf("prompt lacks the ref line or how to read it:\n%s", p)
	}
	if strings.Contains(p, "Finding 1") {
		t.Fatalf("prompt pastes the answer:\n%s", p)
	}
	if got := TeamPrompt("Q?", 1, nil); got != "Q?" {
		t.Fatalf("round 1 prompt = %q", got)
	}
}

func TestTeamDecision(t *testing.T) {
	v := func(b, d string) ask.Answer { return ask.Answer{Backend: b, Verdict: &ask.Verdict{Verdict: d}} }
	m, dis, ok := teamDecision([]ask.Answer{v("codex", "approve"), v("claude", "approve")})
	if m != "approve" || len(dis) != 0 || !ok {
		t.Fatalf("agree: %q %v %v", m, dis, ok)
	}
	m, dis, ok = teamDecision([]ask.Answer{v("codex", "approve"), v("claude", "request-changes"), v("gemini", "approve")})
	if m != "approve" || fmt.Sprint(dis) != "[claude]" || ok {
		t.Fatalf("split: %q %v %v", m, dis, ok)
	}
	m, dis, ok = teamDecision([]ask.Answer{v("codex", "approve"), v("claude", "request-changes")})
	if m != "" || len(dis) != 0 || ok {
		t.Fatalf("tie: %q %v %v", m, dis, ok)
	}
	m, _, ok = teamDecision([]ask.Answer{v("codex", "approve"), {Backend: "claude", Err: &ask.Error{Message: "x"}}})
	if m != "approve" || ok {
		t.Fatalf("a failed friend is no agreement: %q %v", m, ok)
	}
}
