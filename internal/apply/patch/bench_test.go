package patch

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/testsupport"
)

// typo swaps two adjacent letters inside the longest word of a line.
func typo(l string) string {
	best, at := 0, -1
	for i := 0; i < len(l); {
		if !isWordByte(l[i]) || isDigit(l[i]) {
			i++
			continue
		}
		j := i
		for j < len(l) && isWordByte(l[j]) && !isDigit(l[j]) {
			j++
		}
		if j-i > best {
			best, at = j-i, i
		}
		i = j
	}
	if best < 5 {
		return l
	}
	k := at + best/2
	b := []byte(l)
	b[k], b[k+1] = b[k+1], b[k]
	return string(b)
}

// damagedSR builds a file of n lines and a SEARCH/REPLACE patch of `blocks`
// blocks with whitespace and typo damage, plus the expected result.
func damagedSR(tb testing.TB, n, blocks int) (orig, patch, want string) {
	r := rand.New(rand.NewPCG(7, 11))
	g := &srcGen{r: r, tabs: false}
	lines := g.lines(n, 1)
	wantLines := append([]string(nil), lines...)
	var b strings.Builder
	step := n / blocks
	for k := 0; k < blocks; k++ {
		start := k*step + 5
		search := append([]string(nil), lines[start:start+6]...)
		repl := append([]string(nil), search...)
		repl[3] = repl[3] + " // changed " + fmt.Sprint(k)
		wantLines[start+3] = repl[3]
		// Damage: indentation shifted by two columns, trailing blanks, and typos in two lines.
		for i := range search {
			switch k % 3 {
			case 0:
				search[i] = "  " + search[i]
				repl[i] = "  " + repl[i]
			case 1:
				search[i] += "  "
			}
		}
		// Two typos in lines with a word long enough to misspell.
		for i, n := 0, 0; i < len(search) && n < 2; i++ {
			if i == 3 {
				continue // the changed line keeps its text so REPLACE maps onto it
			}
			if t := typo(search[i]); t != search[i] {
				search[i], repl[i] = t, t
				n++
			}
		}
		b.WriteString("<<<<<<< SEARCH\n" + text(search) + "=======\n" + text(repl) + ">>>>>>> REPLACE\n")
	}
	return text(lines), b.String(), text(wantLines)
}

// BenchmarkSearchReplace50Damaged10k: 50 SEARCH/REPLACE blocks with small
// whitespace and typo damage against a 10,000-line file (target: < 100 ms).
func BenchmarkSearchReplace50Damaged10k(b *testing.B) {
	orig, p, want := damagedSR(b, 10000, 50)
	res, err := Apply(orig, true, MultiSearchReplace, p, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if res.Content != want {
		b.Fatalf("wrong result:\n%s", lineDiff(res.Content, want))
	}
	fuzzy := 0
	for _, r := range res.Blocks {
		if r.Method == "fuzzy" {
			fuzzy++
		}
	}
	if fuzzy != 50 {
		b.Fatalf("%d of 50 blocks matched fuzzily, want all (the benchmark must exercise fuzzy matching)", fuzzy)
	}
	b.ReportAllocs()
	b.ResetTimer()
	c0 := testsupport.CPUTime()
	defer func() { reportCPU(b, c0) }()
	for b.Loop() {
		if _, err := Apply(orig, true, MultiSearchReplace, p, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewUnified100Hunks20k: 100 new-unified hunks without line numbers
// against a 20,000-line file (target: < 100 ms).
func BenchmarkNewUnified100Hunks20k(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 5))
	g := &srcGen{r: r, tabs: true}
	lines := g.lines(20000, 1)
	var want []string
	var pb strings.Builder
	prev := 0
	for k := 0; k < 100; k++ {
		at := k*200 + 50
		want = append(want, lines[prev:at]...)
		added := g.lines(2, 1)
		want = append(want, added...)
		prev = at + 1 // one line removed
		pb.WriteString("@@ ... @@\n")
		for _, l := range lines[at-3 : at] {
			pb.WriteString(" " + l + "\n")
		}
		pb.WriteString("-" + lines[at] + "\n")
		for _, l := range added {
			pb.WriteString("+" + l + "\n")
		}
		for _, l := range lines[at+1 : at+4] {
			pb.WriteString(" " + l + "\n")
		}
	}
	want = append(want, lines[prev:]...)
	orig, p := text(lines), pb.String()
	res, err := Apply(orig, true, NewUnified, p, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if res.Content != text(want) {
		b.Fatalf("wrong result:\n%s", lineDiff(res.Content, text(want)))
	}
	b.ReportAllocs()
	b.ResetTimer()
	c0 := testsupport.CPUTime()
	defer func() { reportCPU(b, c0) }()
	for b.Loop() {
		if _, err := Apply(orig, true, NewUnified, p, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// bigResponse is a 5 MB LLM response with 500 files in every block kind.
func bigResponse() string {
	r := rand.New(rand.NewPCG(9, 9))
	g := &srcGen{r: r}
	var b strings.Builder
	for i := 0; b.Len() < 5<<20-20000; i++ {
		fmt.Fprintf(&b, "Step %d: I change the file below because the tests need it.\n\n", i)
		body := text(g.lines(240, 1))
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "```go // src/pkg%d/file%d.go\n%s```\n\n", i/10, i, body)
		case 1:
			fmt.Fprintf(&b, "```go // src/pkg%d/file%d.go multi-search-replace\n<<<<<<< SEARCH\n%s=======\n%s>>>>>>> REPLACE\n```\n\n", i/10, i, body, body)
		case 2:
			fmt.Fprintf(&b, "```diff // \"src/pkg %d/file%d.go\" new-unified\n--- a/x\n+++ b/x\n@@ ... @@\n", i/10, i)
			for _, l := range g.lines(230, 1) {
				b.WriteString(" " + l + "\n")
			}
			b.WriteString("-old\n+new\n```\n\n")
		case 3:
			fmt.Fprintf(&b, "```ts // src/web/file%d.ts\n// START\n%s// END\n```\n\n", i, body)
		}
	}
	b.WriteString("```yaml\nprojectId: bench\nuuid: 5e1a41d8-64a7-4663-c56e-3ebd03f7a1f5\ngitCommitMsg: bench\n```\n")
	return b.String()
}

// BenchmarkParse5MB500Files: parse a 5 MB response with 500 files (target: < 100 ms).
func BenchmarkParse5MB500Files(b *testing.B) {
	resp := bigResponse()
	r, err := Parse(resp)
	if err != nil {
		b.Fatal(err)
	}
	if len(r.Operations) < 500 {
		b.Fatalf("%d operations from %d bytes, want at least 500", len(r.Operations), len(resp))
	}
	b.SetBytes(int64(len(resp)))
	b.ReportAllocs()
	b.ResetTimer()
	c0 := testsupport.CPUTime()
	defer func() { reportCPU(b, c0) }()
	for b.Loop() {
		if _, err := Parse(resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearchReplaceScaling shows cost against file size (should grow about linearly).
func BenchmarkSearchReplaceScaling(b *testing.B) {
	for _, n := range []int{5000, 10000, 20000, 40000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			orig, p, _ := damagedSR(b, n, 50)
			c0 := testsupport.CPUTime()
			defer func() { reportCPU(b, c0) }()
			for b.Loop() {
				if _, err := Apply(orig, true, MultiSearchReplace, p, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// reportCPU adds cpu-ms/op: CPU time per operation, robust to a busy machine.
func reportCPU(b *testing.B, c0 time.Duration) {
	if c := testsupport.CPUTime() - c0; c > 0 && b.N > 0 {
		b.ReportMetric(float64(c.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
}
