package patch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/testsupport/corpus"
)

// historyCase is one file changed by one real transaction: the file before,
// the answer's patch bodies in order, and the file the user committed.
type historyCase struct {
	id       string
	input    string
	patches  []historyPatch
	expected string
	shipped  string // what the engine relaycode shipped produced: exact, different or refused
	path     string // the file's path in its repository
}

type historyPatch struct {
	strategy Strategy
	body     string
}

var historyPatchName = regexp.MustCompile(`^patch\.(\d+)\.(.+)$`)

// loadHistory reads every case under dir (one folder per case, grouped by repository).
func loadHistory(t testing.TB, dir string) []historyCase {
	t.Helper()
	metas, err := filepath.Glob(filepath.Join(dir, "*", "*", "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []historyCase
	for _, mp := range metas {
		cdir := filepath.Dir(mp)
		var meta struct {
			Shipped string `json:"shipped_engine"`
			Path    string `json:"path"`
		}
		if err := json.Unmarshal([]byte(readFile(t, mp)), &meta); err != nil {
			t.Fatalf("%s: %v", mp, err)
		}
		id, _ := filepath.Rel(dir, cdir)
		c := historyCase{id: filepath.ToSlash(id), shipped: meta.Shipped, path: meta.Path, input: readFile(t, filepath.Join(cdir, "input")), expected: readFile(t, filepath.Join(cdir, "expected"))}
		ents, err := os.ReadDir(cdir)
		if err != nil {
			t.Fatal(err)
		}
		type numbered struct {
			n int
			p historyPatch
		}
		var ps []numbered
		for _, e := range ents {
			m := historyPatchName.FindStringSubmatch(e.Name())
			if m == nil {
				continue
			}
			n, _ := strconv.Atoi(m[1])
			st, ok := ParseStrategy(m[2])
			if !ok {
				t.Fatalf("%s: unknown strategy %q", id, m[2])
			}
			ps = append(ps, numbered{n, historyPatch{st, readFile(t, filepath.Join(cdir, e.Name()))}})
		}
		sort.Slice(ps, func(a, b int) bool { return ps[a].n < ps[b].n })
		for _, p := range ps {
			c.patches = append(c.patches, p.p)
		}
		if len(c.patches) == 0 {
			t.Fatalf("%s: no patch.<n>.<strategy> files", id)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].id < out[b].id })
	return out
}

// runHistory applies a case's patches in order and classifies what the file
// holds afterwards against the committed file, byte for byte: a refused patch
// leaves the file as it was, which is exact when the user kept the original
// (an answer they undid).
func runHistory(c historyCase) (outcome, detail string) {
	content := c.input
	for i, p := range c.patches {
		res, err := Apply(content, true, p.strategy, p.body, Options{})
		if err != nil {
			if c.input == c.expected {
				return "exact", "refused, and the committed file is the original"
			}
			return "refused", fmt.Sprintf("patch %d: %s", i, firstLine(err.Error()))
		}
		content = res.Content
	}
	if content == c.expected {
		return "exact", ""
	}
	return "different", firstDifference(content, c.expected)
}

// firstDifference names the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d: got %q, want %q", i+1, a, b)
		}
	}
	return "identical"
}

var outcomes = []string{"exact", "different", "refused"}

// TestHistoryAccuracy runs relay on real LLM patches mined from relaycode
// transaction logs (every history-* corpus beside the checkout) and holds it,
// on history-dev, to the engines relaycode shipped: exact wherever they were
// exact (so never a different file where they reproduced the committed one),
// and exact more often.
func TestHistoryAccuracy(t *testing.T) {
	root := corpus.Dir(t, "corpus/patch")
	dirs, _ := filepath.Glob(filepath.Join(root, "history-*"))
	if len(dirs) == 0 {
		corpus.Skip(t, "corpus/patch/history-*")
	}
	for _, dir := range dirs {
		// history-dev is the corpus relay is held to; any other history-* corpus
		// beside it (a held-back half) is measured and logged, not asserted.
		strict := filepath.Base(dir) == "history-dev"
		t.Run(filepath.Base(dir), func(t *testing.T) {
			cases := loadHistory(t, dir)
			table := map[[2]string]int{}
			relayExact, shippedExact, byRefusal := 0, 0, 0
			for _, c := range cases {
				got, detail := runHistory(c)
				table[[2]string{got, c.shipped}]++
				if got == "exact" {
					relayExact++
				}
				if c.shipped == "exact" {
					shippedExact++
				}
				if detail != "" && got == "exact" {
					byRefusal++
				}
				if c.shipped == "exact" && got != "exact" && strict {
					t.Errorf("%s: relay %s where the shipped engine was exact: %s", c.id, got, detail)
				} else if (testing.Verbose() || !strict) && got != "exact" {
					t.Logf("%s: relay %s (shipped %s): %s", c.id, got, c.shipped, detail)
				}
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%d cases; rows relay, columns shipped engine\n%-10s", len(cases), "")
			for _, s := range outcomes {
				fmt.Fprintf(&b, "%10s", s)
			}
			for _, r := range outcomes {
				fmt.Fprintf(&b, "\n%-10s", r)
				for _, s := range outcomes {
					fmt.Fprintf(&b, "%10d", table[[2]string{r, s}])
				}
			}
			t.Log(b.String())
			t.Logf("exact: relay %d (%d of them by refusing an answer the user undid), shipped engine %d, of %d", relayExact, byRefusal, shippedExact, len(cases))
			if strict && relayExact <= shippedExact {
				t.Errorf("relay is exact on %d cases, the shipped engine on %d; relay must do better", relayExact, shippedExact)
			}
		})
	}
}
