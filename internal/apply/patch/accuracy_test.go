package patch

import (
	"fmt"
	"github.com/relaydev/relay/internal/testsupport/corpus"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// accuracy outcomes: exact (the reference's file, or a refusal where the
// reference refused), wrong (a different file, or a change where the
// reference refused: a silent wrong edit), refused (nothing applied where the
// reference applied).
const (
	accExact   = "exact"
	accWrong   = "wrong"
	accRefused = "refused"
)

// caseOutcome maps a conformance result onto exact / wrong / refused.
func caseOutcome(ok bool, detail string) string {
	switch {
	case ok:
		return accExact
	case strings.HasPrefix(detail, "error:"), strings.HasPrefix(detail, "parse:"), strings.HasPrefix(detail, "valid=false"):
		return accRefused
	}
	return accWrong
}

// groupOf names a case's corpus and format: the first two parts of its id.
func groupOf(id string) string {
	parts := strings.SplitN(id, "/", 3)
	if len(parts) < 3 || strings.HasPrefix(parts[0], "relaycode-e2e") {
		return parts[0]
	}
	return parts[0] + "/" + parts[1]
}

// TestAccuracyTable prints, per corpus and format, how many cases relay gets
// exact, wrong (a silent wrong edit) and refused; bench/patch-accuracy runs it.
// It asserts nothing the other corpus tests do not: it is the measure.
func TestAccuracyTable(t *testing.T) {
	root := corpus.Dir(t, "corpus/patch")
	type row struct{ exact, wrong, refused, dev int }
	rows := map[string]*row{}
	add := func(g, o string) {
		r := rows[g]
		if r == nil {
			r = &row{}
			rows[g] = r
		}
		switch o {
		case accExact:
			r.exact++
		case accWrong:
			r.wrong++
		default:
			r.refused++
		}
	}
	var wrongs []string
	for _, c := range collectCases(t, root) {
		ok, detail := c.run()
		o := caseOutcome(ok, detail)
		add(groupOf(c.id), o)
		if _, isDev := deviations[c.id]; isDev && !ok {
			rows[groupOf(c.id)].dev++
		}
		if o == accWrong {
			wrongs = append(wrongs, c.id+": "+firstLine(detail))
		}
	}
	for _, c := range loadHistory(t, filepath.Join(root, "history-dev")) {
		got, detail := runHistory(c)
		o := got
		if got == "different" {
			o = accWrong
		}
		add("history-dev/"+string(c.patches[0].strategy), o)
		add("history-dev (all)", o)
		if o == accWrong && c.shipped == "exact" {
			wrongs = append(wrongs, "history-dev/"+c.id+" (the shipped engine was exact): "+detail)
		}
	}
	var names []string
	for g := range rows {
		names = append(names, g)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%-36s %7s %7s %7s   %s\n", "corpus/format", "exact", "wrong", "refused", "(of wrong+refused: listed deviations)")
	for _, g := range names {
		r := rows[g]
		fmt.Fprintf(&b, "%-36s %7d %7d %7d   (%d)\n", g, r.exact, r.wrong, r.refused, r.dev)
	}
	if os.Getenv("ACCURACY_WRONG") != "" {
		for _, w := range wrongs {
			fmt.Fprintf(&b, "wrong: %s\n", w)
		}
	}
	fmt.Print(b.String())
}
