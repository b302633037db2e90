package workspace

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/memory/client"
)

// EventAskTeamFinished is the event a team ask appends when it ends, with the
// synthesis's ref.
const EventAskTeamFinished = "ask.team.finished"

// DefaultTeamRounds and MaxTeamRounds bound --rounds: each round asks every
// friend, so the cost grows with rounds × friends.
const (
	DefaultTeamRounds = 2
	MaxTeamRounds     = 5
)

// teamPreviewRunes bounds the one-line preview of an answer a later round sees
// next to its ref: enough to tell answers apart, never the answer itself.
const teamPreviewRunes = 100

// TeamRequest is a question for a team: every friend in To, Rounds times.
type TeamRequest struct {
	AskRequest
	Rounds int
}

// TeamRound is one round's answers and where each went in the thread.
type TeamRound struct {
	Answers []ask.Answer
	Records []*AnswerRecord
}

// TeamResult is what a team ask did.
type TeamResult struct {
	Thread string
	Rounds []TeamRound
	// Agreed: with --verdict, every friend of the last round gave the same decision.
	Agreed bool
	// Majority is the decision most friends of the last round gave ("" with no verdicts
	// or a tie); Dissent names the friends whose decision differs from it.
	Majority string
	Dissent  []string
	// SynthesisRef is the stored synthesis ("" when it could not be stored).
	SynthesisRef string
}

// TeamRef is an answer a later round reads by ref.
type TeamRef struct {
	Backend string
	Ref     string
	Preview string
}

// TeamPrompt is what a friend gets in a round after the first: the question and
// the previous round's answers as refs with a one-line preview each, never their text.
func TeamPrompt(prompt string, round int, prev []TeamRef) string {
	if round <= 1 || len(prev) == 0 {
		return prompt
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(prompt, "\n"))
	fmt.Fprintf(&b, "\n\nThis is round %d of a team ask. The other friends' answers of round %d are stored in the relay thread; "+
		"read each one in full with `relay artifact get REF --out -` before you answer, then give your own answer "+
		"(agree, disagree, or improve on them):\n", round, round-1)
	for _, r := range prev {
		fmt.Fprintf(&b, "  %s %s: %s\n", r.Ref, r.Backend, r.Preview)
	}
	return strings.TrimRight(b.String(), "\n")
}

// teamPreview is the first non-empty line of an answer, clipped.
func teamPreview(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return ClipRunes(l, teamPreviewRunes)
		}
	}
	return "(empty)"
}

// Team asks every friend in parallel, round after round: round 1 gets the prompt,
// each later round the prompt and the previous round's answers by ref. With
// --verdict it stops early when a round agrees. The synthesis (the last round's
// answers and who dissented) is stored as an artifact with an ask.team.finished event.
func (w *Workspace) Team(ctx context.Context, req TeamRequest) (*TeamResult, error) {
	hint := "relay ask --team codex,claude --thread THREAD --prompt …  (or create the project's thread: relay thread new)"
	if w.Principal == Agent {
		hint = `pass "thread", or set RELAY_THREAD`
	}
	if w.Memory == nil {
		return nil, &ask.Error{Message: "a team ask needs a thread (the friends read each other's answers from it), and relay's memory is not available here", Hint: hint, Usage: true}
	}
	if arg, _, err := w.Memory.DefaultArg(w.Thread); err != nil {
		return nil, err
	} else if arg == "" && !w.Memory.CreateThread {
		return nil, &ask.Error{Message: "a team ask needs a thread (the friends read each other's answers from it), and none is set", Hint: hint, Usage: true}
	}
	if req.Rounds == 0 {
		req.Rounds = DefaultTeamRounds
	}
	if req.Rounds < 1 || req.Rounds > MaxTeamRounds {
		return nil, &ask.Error{Message: fmt.Sprintf("--rounds %d is out of range (1 to %d)", req.Rounds, MaxTeamRounds), Hint: fmt.Sprintf("pass --rounds between 1 and %d (default %d)", MaxTeamRounds, DefaultTeamRounds), Usage: true}
	}
	if req.Session != "" {
		return nil, &ask.Error{Message: "a team ask does not continue a --session", Hint: "drop --session; each round already reads the previous one by ref", Usage: true}
	}
	if err := w.AskDefaults(&req.AskRequest); err != nil {
		return nil, err
	}
	// the thread is resolved once so every round lands in the same one
	if w.Thread == "" {
		id, err := w.Memory.DefaultThread(ctx, "", true)
		if err != nil {
			return nil, err
		}
		w.Thread = id
	}
	res := &TeamResult{}
	var prev []TeamRef
	for round := 1; round <= req.Rounds; round++ {
		r := req.AskRequest
		r.Prompt = TeamPrompt(req.Prompt, round, prev)
		out, err := w.Ask(ctx, r)
		if err != nil {
			return res, err
		}
		if out.Thread == "" {
			return res, &ask.Error{Message: "a team ask needs a thread, and this one could not be reached", Hint: hint}
		}
		res.Thread = out.Thread
		res.Rounds = append(res.Rounds, TeamRound{Answers: out.Answers, Records: out.Records})
		prev = prev[:0:0]
		for i, a := range out.Answers {
			if a.Err == nil && out.Records[i] != nil {
				prev = append(prev, TeamRef{Backend: a.Backend, Ref: out.Records[i].Ref, Preview: teamPreview(a.Text)})
			}
		}
		res.Majority, res.Dissent, res.Agreed = teamDecision(out.Answers)
		if len(prev) == 0 || (req.Verdict && res.Agreed) {
			break // nothing to build on, or nothing left to settle
		}
	}
	c, err := w.Memory.Client(ctx, false)
	if err != nil {
		w.notef("Warning: the team's synthesis was not stored in thread %s: %v", res.Thread, FirstLine(err.Error()))
		return res, nil
	}
	doc, refs := teamSynthesis(req.Prompt, res, len(res.Rounds) < req.Rounds)
	art, err := c.PutArtifact(ctx, res.Thread, client.PutArtifactParams{Name: "team-synthesis.md", Type: "markdown", CreatedBy: askAuthor, Content: strings.NewReader(doc)})
	if err != nil {
		w.notef("Warning: the team's synthesis was not stored in thread %s: %v", res.Thread, FirstLine(err.Error()))
		return res, nil
	}
	res.SynthesisRef = art.Ref
	data := map[string]any{"rounds": len(res.Rounds), "max_rounds": req.Rounds, "team": req.To, "agreed": res.Agreed,
		"majority": res.Majority, "dissent": res.Dissent, "synthesis_ref": art.Ref, "answer_refs": refs,
		"prompt": ClipRunes(strings.TrimSpace(req.Prompt), 280)}
	if _, err := c.AppendEvent(ctx, res.Thread, EventAskTeamFinished, data); err != nil {
		w.notef("Warning: the team ask was not logged in thread %s: %v", res.Thread, FirstLine(err.Error()))
	}
	return res, nil
}

// teamDecision is the round's majority verdict, the friends who differ from it, and
// whether every friend answered with the same one.
func teamDecision(answers []ask.Answer) (majority string, dissent []string, agreed bool) {
	count := map[string]int{}
	for _, a := range answers {
		if a.Err == nil && a.Verdict != nil {
			count[a.Verdict.Verdict]++
		}
	}
	if len(count) == 0 {
		return "", nil, false
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return count[keys[i]] > count[keys[j]] || (count[keys[i]] == count[keys[j]] && keys[i] < keys[j])
	})
	if len(keys) > 1 && count[keys[0]] == count[keys[1]] {
		majority = "" // a tie: no majority to dissent from
	} else {
		majority = keys[0]
	}
	agreed = len(keys) == 1 && count[keys[0]] == len(answers)
	for _, a := range answers {
		if a.Err != nil || a.Verdict == nil {
			continue
		}
		if majority != "" && a.Verdict.Verdict != majority {
			dissent = append(dissent, a.Backend)
		}
	}
	return majority, dissent, agreed
}

// teamSynthesis is the stored record of how the team ended: its decision, who
// dissented, and the last round's answers (stored, so they are included in full).
func teamSynthesis(prompt string, res *TeamResult, early bool) (string, map[string]string) {
	var b strings.Builder
	last := res.Rounds[len(res.Rounds)-1]
	fmt.Fprintf(&b, "# Team synthesis\n\nQuestion: %s\n\nRounds: %d", ClipRunes(strings.TrimSpace(prompt), 280), len(res.Rounds))
	if early {
		b.WriteString(" (stopped early)")
	}
	b.WriteString("\n")
	switch {
	case res.Agreed:
		fmt.Fprintf(&b, "Decision: every friend agreed: %s\n", res.Majority)
	case res.Majority != "":
		fmt.Fprintf(&b, "Decision: majority %s; dissent: %s\n", res.Majority, strings.Join(res.Dissent, ", "))
	default:
		b.WriteString("Decision: no majority\n")
	}
	refs := map[string]string{}
	for i, a := range last.Answers {
		fmt.Fprintf(&b, "\n## %s", a.Backend)
		if a.Err != nil {
			fmt.Fprintf(&b, " (failed)\n\n%s\n", FirstLine(a.Err.Error()))
			continue
		}
		if i < len(last.Records) && last.Records[i] != nil {
			refs[a.Backend] = last.Records[i].Ref
			fmt.Fprintf(&b, " (answer %s)", last.Records[i].Ref)
		}
		if a.Verdict != nil {
			fmt.Fprintf(&b, ": %s", a.Verdict.Verdict)
		}
		fmt.Fprintf(&b, "\n\n%s\n", strings.TrimSpace(a.Text))
	}
	return b.String(), refs
}
