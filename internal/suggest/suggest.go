// Package suggest finds the names closest to a mistyped one: the "did you mean" of relay's
// commands, flags, capability names and agent hosts, with one rule for all of them.
package suggest

import (
	"slices"
	"strings"
)

// MaxDistance is how far a typo may be from a name to be suggested (what git and gh allow).
const MaxDistance = 2

// Closest returns the candidates nearest to name, ignoring case: those it is a prefix of
// (distance 0), else those within MaxDistance edits, keeping only the nearest distance, in
// the candidates' order. nil when nothing is close.
func Closest(name string, candidates []string) []string {
	name = strings.ToLower(name)
	var out []string
	best := MaxDistance + 1
	for _, c := range candidates {
		d := Distance(name, strings.ToLower(c))
		if name != "" && strings.HasPrefix(strings.ToLower(c), name) {
			d = 0
		}
		switch {
		case d < best:
			out, best = []string{c}, d
		case d == best && !slices.Contains(out, c):
			out = append(out, c)
		}
	}
	return out
}

// Distance is the edit distance with adjacent transpositions (optimal string alignment):
// "cladue" is one typo from "claude". Hand-written because cobra's is unexported and counts
// a swap as two edits.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1) // two letters swapped is one typo
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
