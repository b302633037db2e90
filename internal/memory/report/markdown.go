package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// maxTimelineEvents keeps the markdown readable; the JSON format has every event.
const maxTimelineEvents = 200

// Markdown renders the report for humans.
func (r *Report) Markdown() []byte {
	var b bytes.Buffer
	name := r.Thread.Name
	if name == "" {
		name = r.Thread.ID
	}
	fmt.Fprintf(&b, "# relay report: %s\n\n", mdEscape(name))
	fmt.Fprintf(&b, "- thread_id: `%s`\n- state_ref: `%s`\n- created: %s\n- generated: %s\n\n",
		r.Thread.ID, r.State.StateRef, r.Thread.CreatedAt, r.GeneratedAt)

	s := r.TokenSavings
	b.WriteString("## Token savings\n\n")
	fmt.Fprintf(&b, "| | %s | bytes/4 estimate |\n|---|---:|---:|\n", s.Encoding)
	fmt.Fprintf(&b, "| naive tokens (every artifact pasted) | %d | %d |\n", s.NaiveTokens, s.Estimate.NaiveTokens)
	fmt.Fprintf(&b, "| actual tokens (header + previews) | %d | %d |\n", s.ActualTokens, s.Estimate.ActualTokens)
	fmt.Fprintf(&b, "| tokens avoided | %d | %d |\n\n", s.AvoidedTokens, s.Estimate.AvoidedTokens)
	fmt.Fprintf(&b, "Reduction: %.1f%%. Cache hits: %d (this daemon session: %d). A2A hops: %d.\n\n",
		s.ReductionPct, r.CacheHits, r.SessionHits, r.A2AHops)

	st := r.State
	b.WriteString("## State\n\n")
	fmt.Fprintf(&b, "Version %d: %d facts, %d constraints, %d open questions, %d decisions, plan %d pending / %d done.\n\n",
		st.Version, st.Facts, st.Constraints, st.OpenQuestions, st.Decisions, st.PlanPending, st.PlanDone)
	if len(st.Header) > 0 {
		var pretty bytes.Buffer
		if json.Indent(&pretty, st.Header, "", "  ") == nil {
			b.WriteString("State header:\n\n```json\n")
			b.Write(pretty.Bytes())
			b.WriteString("\n```\n\n")
		}
	}

	fmt.Fprintf(&b, "## Artifacts (%d)\n\n", len(r.Artifacts))
	if len(r.Artifacts) > 0 {
		b.WriteString("| ref | name | type | size | by |\n|---|---|---|---:|---|\n")
		for _, a := range r.Artifacts {
			by := a.CreatedBy
			if a.Capability != "" {
				by = strings.TrimSpace(by + " " + a.Capability)
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %d | %s |\n", a.Ref, mdEscape(a.Name), a.Type, a.Size, mdEscape(by))
		}
		b.WriteString("\n")
	}

	fmt.Fprintf(&b, "## Capability calls (%d)\n\n", len(r.Calls))
	if len(r.Capabilities) > 0 {
		b.WriteString("| capability | calls | cache hits |\n|---|---:|---:|\n")
		for _, u := range r.Capabilities {
			fmt.Fprintf(&b, "| %s | %d | %d |\n", u.Capability, u.Calls, u.CacheHits)
		}
		b.WriteString("\n")
	}

	writeFriends(&b, r.Friends)

	fmt.Fprintf(&b, "## Timeline (%d events)\n\n", len(r.Events))
	evs := r.Events
	if len(evs) > maxTimelineEvents {
		fmt.Fprintf(&b, "Last %d shown; `relay report --format json` has all.\n\n", maxTimelineEvents)
		evs = evs[len(evs)-maxTimelineEvents:]
	}
	for _, e := range evs {
		fmt.Fprintf(&b, "- %s `#%d` **%s** %s\n", e.At, e.ID, e.Type, mdEscape(summary(e.Data)))
	}
	return b.Bytes()
}

// summary renders event data as short "k=v" pairs.
func summary(data json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		v, _ := json.Marshal(m[k])
		s := string(v)
		if len(s) > 60 {
			s = s[:57] + "..."
		}
		parts = append(parts, k+"="+s)
	}
	return strings.Join(parts, " ")
}

var mdReplacer = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ", "`", "'")

func mdEscape(s string) string { return mdReplacer.Replace(s) }
