package patch

import "sort"

// nonBlank returns an index over the file's non-blank lines and their
// positions in the file, built once.
func (ix *index) nonBlank() (*index, []int) {
	if ix.nb == nil {
		var lines []string
		for i, l := range ix.lines {
			if ix.keys[i] != "" {
				lines = append(lines, l)
				ix.nbPos = append(ix.nbPos, i)
			}
		}
		ix.nb = newIndex(lines)
		ix.nb.st = ix.st
	}
	return ix.nb, ix.nbPos
}

// blankTolerant places a block whose blank lines differ from the file's (an
// LLM dropped or added some): the non-blank lines are matched in order, then
// the edit is rewritten to the file's blank lines and built as usual.
func (en *engine) blankTolerant(ix *index, e edit, q query) []placed {
	var pat []string
	var patIdx []int
	for i, l := range e.old {
		if !isBlank(l) {
			pat = append(pat, l)
			patIdx = append(patIdx, i)
		}
	}
	if len(pat) < 2 {
		return nil
	}
	nb, pos := ix.nonBlank()
	if len(pos) == 0 {
		return nil
	}
	at := func(x int) int { return sort.SearchInts(pos, x) }
	cq := q
	if q.hint >= 0 {
		cq.hint = at(q.hint)
	}
	cq.lo = at(q.lo)
	if q.hi >= 0 {
		cq.hi = at(q.hi+1) - 1
	}
	cq.after = at(q.after)
	if q.preferFrom >= 0 {
		cq.preferFrom = at(q.preferFrom)
	}
	mt, ms := nb.find(pat, cq)
	if ms != nil {
		return nil
	}
	start := pos[mt.start]
	end := pos[mt.start+len(pat)-1] + 1
	mapping := e.newToOld()
	// For each old line: which new lines repeat it.
	copies := make(map[int][]int)
	for j, i := range mapping {
		if i >= 0 {
			copies[i] = append(copies[i], j)
		}
	}
	var old, nw []string
	var pairs []int
	oldAt := map[int]int{} // e.old index of a non-blank line → its index in old
	dropNew := map[int]bool{}
	extraBefore := map[int][]int{} // new index → file blank lines (indexes in old) to insert before it
	extraAfter := map[int][]int{}  // new index → file blank lines to insert after it
	// Leading and trailing blank lines of the block have no place in the file window.
	for i := 0; i < patIdx[0]; i++ {
		for _, j := range copies[i] {
			dropNew[j] = true
		}
	}
	for i := patIdx[len(patIdx)-1] + 1; i < len(e.old); i++ {
		for _, j := range copies[i] {
			dropNew[j] = true
		}
	}
	for k, i := range patIdx {
		oldAt[i] = len(old)
		old = append(old, e.old[i])
		if k+1 == len(patIdx) {
			break
		}
		f1, f2 := pos[mt.start+k], pos[mt.start+k+1]
		i2 := patIdx[k+1]
		fileBlanks := f2 - f1 - 1
		var blanks []int // the file's blank lines of this gap, as indexes in old
		for f := f1 + 1; f < f2; f++ {
			blanks = append(blanks, len(old))
			old = append(old, ix.lines[f])
		}
		// The new text keeps the gap's blank lines it copied; give it the file's count.
		kept := 0
		first := -1
		for i := patIdx[k] + 1; i < i2; i++ {
			for _, j := range copies[i] {
				kept++
				dropNew[j] = true
				if first < 0 || j < first {
					first = j
				}
			}
		}
		gapBlanks := i2 - patIdx[k] - 1
		take := func(n int) []int { return blanks[:min(max(n, 0), len(blanks))] }
		switch {
		case fileBlanks == 0:
		case gapBlanks == 0:
			// The block left the file's blank lines out; they stay where they are.
			if c := copies[i2]; len(c) > 0 {
				extraBefore[c[0]] = append(extraBefore[c[0]], blanks...)
			} else if c := copies[patIdx[k]]; len(c) > 0 {
				extraAfter[c[len(c)-1]] = append(extraAfter[c[len(c)-1]], blanks...)
			}
		case kept > 0:
			// The new text keeps the gap's blank lines it copied, in the file's count.
			extraBefore[first] = append(extraBefore[first], take(fileBlanks-(gapBlanks-kept))...)
		default:
			// The block removed blank lines; remove as many from the file's.
			if n := fileBlanks - gapBlanks; n > 0 {
				if c := copies[i2]; len(c) > 0 {
					extraBefore[c[0]] = append(extraBefore[c[0]], take(n)...)
				} else if c := copies[patIdx[k]]; len(c) > 0 {
					extraAfter[c[len(c)-1]] = append(extraAfter[c[len(c)-1]], take(n)...)
				}
			}
		}
	}
	for j, l := range e.new {
		for _, b := range extraBefore[j] {
			nw = append(nw, "")
			pairs = append(pairs, b)
		}
		if !dropNew[j] {
			nw = append(nw, l)
			p := -1
			if i := mapping[j]; i >= 0 {
				if at, ok := oldAt[i]; ok {
					p = at
				}
			}
			pairs = append(pairs, p)
		}
		for _, b := range extraAfter[j] {
			nw = append(nw, "")
			pairs = append(pairs, b)
		}
	}
	te := e
	te.old, te.new, te.pairs = old, nw, pairs
	if len(old) != end-start {
		return nil
	}
	ps, f := en.finish(ix, te, match{start: start, lv: mt.lv, sim: mt.sim})
	if f != nil {
		return nil
	}
	for i := range ps {
		if !ps[i].already {
			ps[i].method = "fuzzy" // blank lines differed from the file's
		}
	}
	return ps
}
