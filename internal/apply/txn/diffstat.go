package txn

import "strings"

// maxEditCost bounds the Myers search; beyond it counts fall back to a
// line-multiset estimate, which is exact for pure additions or removals.
const maxEditCost = 20000

// lineStat returns how many lines were added and removed going from a to b,
// from a shortest line edit script (the counts git diff --stat shows).
func lineStat(a, b string) (added, removed int) {
	if a == b {
		return 0, 0
	}
	x, y := splitLines(a), splitLines(b)
	// Trim the common prefix and suffix: most edits are local.
	for len(x) > 0 && len(y) > 0 && x[0] == y[0] {
		x, y = x[1:], y[1:]
	}
	for len(x) > 0 && len(y) > 0 && x[len(x)-1] == y[len(y)-1] {
		x, y = x[:len(x)-1], y[:len(y)-1]
	}
	if len(x) == 0 || len(y) == 0 {
		return len(y), len(x)
	}
	d, ok := myersDistance(x, y)
	if !ok {
		return multisetStat(x, y)
	}
	lcs := (len(x) + len(y) - d) / 2
	return len(y) - lcs, len(x) - lcs
}

// changedRange returns the 1-based first and last lines of a that differ
// from b, and the matching range in b; ok is false when they are equal.
func changedRange(a, b string) (aFrom, aTo, bFrom, bTo int, ok bool) {
	if a == b {
		return 0, 0, 0, 0, false
	}
	x, y := splitLines(a), splitLines(b)
	p := 0
	for p < len(x) && p < len(y) && x[p] == y[p] {
		p++
	}
	s := 0
	for s < len(x)-p && s < len(y)-p && x[len(x)-1-s] == y[len(y)-1-s] {
		s++
	}
	return p + 1, len(x) - s, p + 1, len(y) - s, true
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// myersDistance is the number of inserted plus deleted lines of a shortest
// edit script (Myers 1986), or false when it exceeds maxEditCost.
func myersDistance(a, b []string) (int, bool) {
	n, m := len(a), len(b)
	maxD := min(n+m, maxEditCost)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return d, true
			}
		}
	}
	return 0, false
}

func multisetStat(a, b []string) (added, removed int) {
	count := make(map[string]int, len(a))
	for _, l := range a {
		count[l]++
	}
	for _, l := range b {
		if count[l] > 0 {
			count[l]--
		} else {
			added++
		}
	}
	for _, c := range count {
		removed += c
	}
	return added, removed
}
