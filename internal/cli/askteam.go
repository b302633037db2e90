package cli

import (
	"fmt"
	"strings"

	"github.com/relaydev/relay/internal/workspace"
)

// teamJSON is `relay ask --team --json`: every round's answers and how the team ended.
type teamJSON struct {
	Thread       string      `json:"thread"`
	Rounds       [][]askJSON `json:"rounds"`
	Agreed       bool        `json:"agreed"`
	Majority     string      `json:"majority,omitempty"`
	Dissent      []string    `json:"dissent"`
	SynthesisRef string      `json:"synthesis_ref,omitempty"`
}

// printTeam renders a team ask: each round's answers under "round N · friend", then
// the decision and the refs of what was stored. Exit 1 when the last round had a failure.
func printTeam(opts *AskOptions, tr *workspace.TeamResult) error {
	out, errOut := opts.IO.Out, opts.IO.ErrOut
	failed := 0
	doc := teamJSON{Thread: tr.Thread, Agreed: tr.Agreed, Majority: tr.Majority, Dissent: tr.Dissent, SynthesisRef: tr.SynthesisRef}
	if doc.Dissent == nil {
		doc.Dissent = []string{}
	}
	for n, r := range tr.Rounds {
		var docs []askJSON
		for i, a := range r.Answers {
			d := toAskJSON(a)
			var ref string
			if i < len(r.Records) && r.Records[i] != nil {
				ref = r.Records[i].Ref
				d.Ref = ref
			}
			docs = append(docs, d)
			if a.Err != nil {
				if n == len(tr.Rounds)-1 {
					failed++
				}
				if !opts.JSON {
					fmt.Fprintf(errOut, "Error (round %d, %s): %s\n", n+1, a.Backend, a.Err.Message)
					if a.Err.Hint != "" {
						fmt.Fprintf(errOut, "Try: %s\n", a.Err.Hint)
					}
				}
				continue
			}
			if opts.JSON {
				continue
			}
			head := fmt.Sprintf("=== round %d · %s", n+1, a.Backend)
			if ref != "" {
				head += " (" + ref + ")"
			}
			fmt.Fprintln(out, head+" ===")
			if a.Verdict != nil {
				printVerdict(out, a.Verdict)
			} else {
				fmt.Fprintln(out, strings.TrimRight(a.Text, "\n"))
			}
			fmt.Fprintln(out)
		}
		doc.Rounds = append(doc.Rounds, docs)
	}
	if opts.JSON {
		if err := writeJSON(out, doc); err != nil {
			return err
		}
	} else {
		switch {
		case tr.Agreed:
			fmt.Fprintf(out, "Team: every friend agreed on %s after %d round(s)\n", tr.Majority, len(tr.Rounds))
		case tr.Majority != "":
			fmt.Fprintf(out, "Team: majority %s after %d round(s); dissent: %s\n", tr.Majority, len(tr.Rounds), strings.Join(tr.Dissent, ", "))
		default:
			fmt.Fprintf(out, "Team: %d round(s)\n", len(tr.Rounds))
		}
		if tr.SynthesisRef != "" {
			fmt.Fprintf(out, "[synthesis stored as artifact %s in thread %s; event %s]\n", tr.SynthesisRef, tr.Thread, workspace.EventAskTeamFinished)
		}
	}
	if failed > 0 {
		err := fmt.Errorf("%d of %d friends failed in the last round", failed, len(tr.Rounds[len(tr.Rounds)-1].Answers))
		if opts.JSON {
			return JSONShown(err)
		}
		return err
	}
	return nil
}
