// Package textdiff makes unified diffs of two texts (for storing what a transaction changed).
package textdiff

import (
	"fmt"
	"strings"
)

// maxEdits bounds the Myers search; beyond it the differing middle is shown as replaced,
// which is still a correct diff, only not a minimal one.
const maxEdits = 4000

// Unified returns a unified diff (3 lines of context) turning a into b, with the given
// file names in the --- and +++ lines; "" when the texts are equal.
func Unified(aName, bName, a, b string) string {
	if a == b {
		return ""
	}
	al, bl := lines(a), lines(b)
	ops := script(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	const ctx = 3
	for i := 0; i < len(ops); {
		if ops[i].op == ' ' {
			i++
			continue
		}
		start := max(0, i-ctx)
		end := i
		for end < len(ops) {
			if ops[end].op != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].op == ' ' {
				run++
			}
			if run-end > 2*ctx || run == len(ops) {
				end = min(len(ops), end+ctx)
				break
			}
			end = run
		}
		aStart, bStart, aN, bN := 0, 0, 0, 0
		for _, o := range ops[start:end] {
			if o.op != '+' {
				if aN == 0 {
					aStart = o.a
				}
				aN++
			}
			if o.op != '-' {
				if bN == 0 {
					bStart = o.b
				}
				bN++
			}
		}
		if aN == 0 {
			aStart = ops[start].a - 1
		}
		if bN == 0 {
			bStart = ops[start].b - 1
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", max(aStart, 0), aN, max(bStart, 0), bN)
		for _, o := range ops[start:end] {
			out.WriteByte(o.op)
			out.WriteString(o.text)
			out.WriteByte('\n')
		}
		i = end
	}
	return out.String()
}

type edit struct {
	op   byte // ' ', '-', '+'
	text string
	a, b int // 1-based line numbers; for '+' a is the next old line, for '-' b the next new line
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	l := strings.Split(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

func script(a, b []string) []edit {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []edit
	for i := 0; i < pre; i++ {
		out = append(out, edit{' ', a[i], i + 1, i + 1})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	mid, ok := myers(ma, mb)
	if !ok {
		mid = nil
		for _, t := range ma {
			mid = append(mid, edit{op: '-', text: t})
		}
		for _, t := range mb {
			mid = append(mid, edit{op: '+', text: t})
		}
	}
	ai, bi := pre, pre
	for _, e := range mid {
		switch e.op {
		case ' ':
			ai++
			bi++
			out = append(out, edit{' ', e.text, ai, bi})
		case '-':
			ai++
			out = append(out, edit{'-', e.text, ai, bi + 1})
		case '+':
			bi++
			out = append(out, edit{'+', e.text, ai + 1, bi})
		}
	}
	for i := 0; i < suf; i++ {
		ai++
		bi++
		out = append(out, edit{' ', a[len(a)-suf+i], ai, bi})
	}
	return out
}

// myers is the O(ND) shortest edit script, bounded by maxEdits.
func myers(a, b []string) ([]edit, bool) {
	n, m := len(a), len(b)
	maxD := min(n+m, maxEdits)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	for d := 0; d <= maxD; d++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, a, b, off, d), true
			}
		}
	}
	return nil, false
}

func backtrack(trace [][]int, a, b []string, off, d int) []edit {
	x, y := len(a), len(b)
	var rev []edit
	for ; d > 0; d-- {
		v := trace[d]
		k := x - y
		var pk int
		if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := v[off+pk]
		py := px - pk
		for x > px && y > py {
			x--
			y--
			rev = append(rev, edit{op: ' ', text: a[x]})
		}
		if x == px {
			y--
			rev = append(rev, edit{op: '+', text: b[y]})
		} else {
			x--
			rev = append(rev, edit{op: '-', text: a[x]})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, edit{op: ' ', text: a[x]})
	}
	out := make([]edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}
