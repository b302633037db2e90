package patch

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/testsupport"
)

// BenchmarkFailingHunks100Other20k: the error path (100 hunks made for another
// 20,000-line file) must stay as cheap as the success path.
func BenchmarkFailingHunks100Other20k(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 5))
	g := &srcGen{r: r, tabs: true}
	lines := g.lines(20000, 1)
	other := (&srcGen{r: rand.New(rand.NewPCG(4, 6)), tabs: true}).lines(20000, 1)
	var pb strings.Builder
	for k := 0; k < 100; k++ {
		at := k*200 + 50
		pb.WriteString("@@ ... @@\n")
		for _, l := range lines[at-3 : at] {
			pb.WriteString(" " + l + "\n")
		}
		pb.WriteString("-" + lines[at] + "\n+changed\n")
		for _, l := range lines[at+1 : at+4] {
			pb.WriteString(" " + l + "\n")
		}
	}
	orig, p := text(other), pb.String()
	if _, err := Apply(orig, true, NewUnified, p, Options{}); err == nil {
		b.Fatal("a patch for another file applied")
	}
	b.ResetTimer()
	c0 := testsupport.CPUTime()
	defer func() { reportCPU(b, c0) }()
	for b.Loop() {
		if _, err := Apply(orig, true, NewUnified, p, Options{}); err == nil {
			b.Fatal("applied")
		}
	}
}
