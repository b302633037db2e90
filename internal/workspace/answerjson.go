package workspace

import (
	"encoding/json"

	"github.com/relaydev/relay/internal/ask"
)

// AnswerJSON is one friend's answer in relay's stable JSON shape (relay ask --json, a
// background job's result); unknown values are left out.
type AnswerJSON struct {
	Backend    string     `json:"backend"`
	Model      string     `json:"model,omitempty"`
	Answer     string     `json:"answer"`
	DurationMS int64      `json:"duration_ms"`
	Tokens     *Tokens    `json:"tokens,omitempty"`
	CostUSD    *float64   `json:"cost_usd,omitempty"`
	Session    string     `json:"session,omitempty"`
	Error      *AnswerErr `json:"error,omitempty"`
	// With a thread: the stored answer's ref (answer may then be its preview, see Truncated).
	Ref       string `json:"ref,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	// With a schema or a verdict: the answer's JSON value, checked.
	JSON    json.RawMessage `json:"json,omitempty"`
	Verdict *ask.Verdict    `json:"verdict,omitempty"`
	Retried bool            `json:"retried,omitempty"`
	// With a thread: where the verdict is stored, and earlier verdicts on the same diff.
	VerdictRef    string   `json:"verdict_ref,omitempty"`
	PriorVerdicts []string `json:"prior_verdicts,omitempty"`
}

// Tokens are the tokens a friend reported using.
type Tokens struct {
	Input  *int64 `json:"input,omitempty"`
	Output *int64 `json:"output,omitempty"`
}

// AnswerErr is why a friend (or the whole ask) answered nothing, and the next step.
type AnswerErr struct {
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// ToAnswerJSON is one answer in the JSON shape, without where it was stored.
func ToAnswerJSON(a ask.Answer) AnswerJSON {
	j := AnswerJSON{Backend: a.Backend, Model: a.Model, Answer: a.Text, DurationMS: a.Duration.Milliseconds(),
		CostUSD: a.CostUSD, Session: a.Session, JSON: a.JSON, Verdict: a.Verdict, Retried: a.Retried}
	if a.InputTokens != nil || a.OutputTokens != nil {
		j.Tokens = &Tokens{Input: a.InputTokens, Output: a.OutputTokens}
	}
	if a.Err != nil {
		j.Error = &AnswerErr{Message: a.Err.Message, Hint: a.Err.Hint}
	}
	return j
}

// AnswersJSON is an ask's answers with the refs they were stored under (the whole text
// stays in answer: a job's result is read back by relay, which shortens it itself).
func AnswersJSON(res *AskResult) []AnswerJSON {
	var prior []string
	for _, a := range res.PriorVerdicts {
		prior = append(prior, a.Ref)
	}
	out := make([]AnswerJSON, len(res.Answers))
	for i, a := range res.Answers {
		out[i] = ToAnswerJSON(a)
		out[i].PriorVerdicts = prior
		if i < len(res.VerdictRefs) {
			out[i].VerdictRef = res.VerdictRefs[i]
		}
		if i < len(res.Records) && res.Records[i] != nil {
			out[i].Ref = res.Records[i].Ref
		}
	}
	return out
}
