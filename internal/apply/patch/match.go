package patch

import (
	"fmt"
	"sort"
	"strings"
)

// level is how loosely a pattern matched; lower is better.
type level int

const (
	lvExact level = iota
	lvTrailing
	lvIndent
	lvFuzzy
)

func (l level) method() string {
	switch l {
	case lvExact:
		return "exact"
	case lvTrailing:
		return "trailing-whitespace"
	case lvIndent:
		return "indentation"
	}
	return "fuzzy"
}

// index maps line keys to positions so a pattern is located by anchoring on
// its rarest line instead of comparing every window of the file.
type index struct {
	lines []string
	keys  []string // TrimSpace of each line
	trim  map[string][]int
	sq    map[uint64][]int // hash of the whitespace-free line, built on first fuzzy search
	coll  []string         // collapsed lines, built on first fuzzy search
	st    *style
	nb    *index // the file without blank lines, built on demand
	nbPos []int  // nb line i is file line nbPos[i]
}

func (ix *index) style() style {
	if ix.st == nil {
		s := detectStyle(ix.lines)
		ix.st = &s
	}
	return *ix.st
}

func newIndex(lines []string) *index {
	ix := &index{lines: lines, keys: make([]string, len(lines)), trim: make(map[string][]int, len(lines))}
	for i, l := range lines {
		k := strings.TrimSpace(l)
		ix.keys[i] = k
		ix.trim[k] = append(ix.trim[k], i)
	}
	return ix
}

func (ix *index) fuzzyPrep() {
	if ix.sq != nil {
		return
	}
	ix.sq = make(map[uint64][]int, len(ix.lines))
	ix.coll = make([]string, len(ix.lines))
	for i, l := range ix.lines {
		if ix.keys[i] != "" {
			k := squashHash(ix.keys[i])
			ix.sq[k] = append(ix.sq[k], i)
		}
		ix.coll[i] = collapseWS(l)
	}
}

// query says where a pattern may land and what picks between equal matches.
type query struct {
	hint       int  // 0-based preferred start line, -1 for none
	lo, hi     int  // the start must lie in [lo, hi]; hi < 0 means no upper bound
	after      int  // with firstAfter: take the first match at or after this line
	firstAfter bool // ordered formats (apply-patch) take the first match after the cursor
	unanchored bool // with firstAfter: no @@ anchor, so the match after the cursor must be unique
	preferFrom int  // new-unified: a single match at or after this line wins, -1 for none
	agree      bool // unified: the first match after the previous hunk must also be the one nearest the hint
	eof        bool // the pattern should end at the end of the file
	noFuzzy    bool
	strict     bool // exact or trailing whitespace only: proof that text is already there
	quick      bool // no fuzzy stage and no closest-match report (trial variants)
	threshold  float64
}

type match struct {
	start int
	lv    level
	sim   float64
}

// miss explains why a pattern was not placed.
type miss struct {
	ambiguous []int // 0-based starts of equally good matches
	closest   int   // 0-based start of the best candidate, -1 for none
	sim       float64
	diff      []string
	vetoed    string
}

func (ix *index) inRange(s, m int, q query) bool {
	if s < 0 || s+m > len(ix.lines) || s < q.lo {
		return false
	}
	return q.hi < 0 || s <= q.hi
}

// find locates pat in the file: exact, then trailing whitespace, then
// indentation, then fuzzy; a match must be unique unless the query picks one.
func (ix *index) find(pat []string, q query) (match, *miss) {
	m := len(pat)
	keys := make([]string, m)
	anchor, best := -1, -1
	for i, l := range pat {
		keys[i] = strings.TrimSpace(l)
		c := len(ix.trim[keys[i]])
		blank := keys[i] == ""
		if anchor < 0 || (blank == (keys[anchor] == "") && c < best) || (!blank && keys[anchor] == "") {
			anchor, best = i, c
		}
	}
	var byLevel [3][]int
	if anchor >= 0 && best > 0 {
		for _, p := range ix.trim[keys[anchor]] {
			s := p - anchor
			if !ix.inRange(s, m, q) {
				continue
			}
			lv := lvExact
			ok := true
			for i := 0; i < m; i++ {
				fl := ix.lines[s+i]
				if fl == pat[i] {
					continue
				}
				if ix.keys[s+i] != keys[i] {
					ok = false
					break
				}
				if lv < lvTrailing && strings.TrimRight(fl, " \t") == strings.TrimRight(pat[i], " \t") {
					lv = lvTrailing
				} else if strings.TrimRight(fl, " \t") != strings.TrimRight(pat[i], " \t") {
					lv = lvIndent
				}
			}
			if ok {
				byLevel[lv] = append(byLevel[lv], s)
			}
		}
	}
	if len(byLevel[lvIndent]) > 0 {
		// Proof of presence allows an indentation change only if it is one
		// uniform shift; a match may have uneven indentation only in lines with
		// real content (a "}" at another depth is another block's brace).
		var keep []int
		for _, s := range byLevel[lvIndent] {
			if q.strict && uniformShift(pat, ix.lines[s:s+m], ix.style()) || !q.strict && unevenOnlyInContent(pat, ix.lines[s:s+m], ix.style()) {
				keep = append(keep, s)
			}
		}
		byLevel[lvIndent] = keep
	}
	for lv, cands := range byLevel {
		if len(cands) == 0 {
			continue
		}
		s, amb := choose(cands, m, len(ix.lines), q)
		if amb != nil {
			return match{}, &miss{ambiguous: amb, closest: -1}
		}
		return match{start: s, lv: level(lv), sim: 1}, nil
	}
	if q.strict || q.quick {
		return match{}, &miss{closest: -1}
	}
	return ix.fuzzy(pat, q)
}

// choose picks one start among equally good candidates, or reports ambiguity.
func choose(cands []int, m, n int, q query) (int, []int) {
	if q.eof {
		var at []int
		for _, s := range cands {
			if s+m == n {
				at = append(at, s)
			}
		}
		if len(at) > 0 {
			cands = at
		}
	}
	if q.firstAfter {
		bestS, after := -1, []int(nil)
		for _, s := range cands {
			if s >= q.after {
				after = append(after, s)
				if bestS < 0 || s < bestS {
					bestS = s
				}
			}
		}
		// Without an @@ anchor, two places after the cursor are a guess, not a match.
		if q.unanchored && len(after) > 1 && q.hint < 0 {
			sort.Ints(after)
			return -1, after
		}
		if bestS >= 0 {
			return bestS, nil
		}
	}
	if len(cands) == 1 {
		return cands[0], nil
	}
	if q.preferFrom >= 0 {
		// Hunks come in file order: the first match after the previous hunk is
		// the one meant, whatever the (untrusted) line numbers say.
		first := -1
		for _, s := range cands {
			if s >= q.preferFrom && (first < 0 || s < first) {
				first = s
			}
		}
		if first >= 0 && q.agree && q.hint >= 0 {
			// A numbered hunk: its line number and its order must pick the same place.
			if near, ok := nearest(cands, q.hint); !ok || near != first {
				sorted := append([]int(nil), cands...)
				sort.Ints(sorted)
				return -1, sorted
			}
		}
		if first >= 0 {
			return first, nil
		}
	}
	if q.hint >= 0 {
		bestS, bestD, tie := -1, 0, false
		for _, s := range cands {
			d := s - q.hint
			if d < 0 {
				d = -d
			}
			switch {
			case bestS < 0 || d < bestD:
				bestS, bestD, tie = s, d, false
			case d == bestD:
				tie = true
			}
		}
		if !tie {
			return bestS, nil
		}
	}
	sorted := append([]int(nil), cands...)
	sort.Ints(sorted)
	return -1, sorted
}

// nearest is the candidate closest to hint; ok is false on a tie.
func nearest(cands []int, hint int) (int, bool) {
	bestS, bestD, tie := -1, 0, false
	for _, s := range cands {
		d := abs(s - hint)
		switch {
		case bestS < 0 || d < bestD:
			bestS, bestD, tie = s, d, false
		case d == bestD:
			tie = true
		}
	}
	return bestS, !tie
}

// maxFuzzyCandidates bounds how many anchored windows are scored per pattern.
const maxFuzzyCandidates = 64

func (ix *index) fuzzy(pat []string, q query) (match, *miss) {
	ix.fuzzyPrep()
	m := len(pat)
	n := len(ix.lines)
	coll := make([]string, m)
	for i, l := range pat {
		coll[i] = collapseWS(l)
	}
	votes := map[int]int{}
	for i, l := range pat {
		if isBlank(l) {
			continue
		}
		ps := ix.sq[squashHash(l)]
		if len(ps) > 256 {
			continue // too common to say where the block is
		}
		for _, p := range ps {
			if s := p - i; ix.inRange(s, m, q) {
				votes[s]++
			}
		}
	}
	var cands []int
	floor := 0.0 // windows below this similarity are not worth scoring exactly
	if len(votes) == 0 {
		floor = max(0, q.threshold-0.25)
		// Every line is damaged: fall back to a bounded scan near the hint or of a small file.
		lo, hi := q.lo, n-m
		if q.hi >= 0 && q.hi < hi {
			hi = q.hi
		}
		if q.hint >= 0 {
			lo, hi = max(lo, q.hint-40), min(hi, q.hint+40)
		} else if (hi-lo+1)*m > 20000 {
			hi = lo - 1
		}
		for s := lo; s <= hi; s++ {
			cands = append(cands, s)
		}
	} else {
		maxV := 0
		for _, v := range votes {
			maxV = max(maxV, v)
		}
		for s, v := range votes {
			if v*2 >= maxV {
				cands = append(cands, s)
			}
		}
		sort.Slice(cands, func(a, b int) bool {
			if votes[cands[a]] != votes[cands[b]] {
				return votes[cands[a]] > votes[cands[b]]
			}
			return cands[a] < cands[b]
		})
		if len(cands) > maxFuzzyCandidates {
			cands = cands[:maxFuzzyCandidates]
		}
	}
	type scored struct {
		s   int
		sim float64
	}
	var passing []scored
	closest := scored{-1, -1}
	vetoed := ""
	for _, s := range cands {
		// Candidates that cannot reach the best so far stop early.
		sim, ok := windowSimAtLeast(coll, ix.coll[s:s+m], max(closest.sim-1e-9, floor))
		if !ok {
			continue
		}
		if sim > closest.sim || (sim == closest.sim && closest.s >= 0 && q.hint >= 0 && abs(s-q.hint) < abs(closest.s-q.hint)) {
			closest = scored{s, sim}
		}
		if q.noFuzzy || sim < q.threshold {
			continue
		}
		if why := veto(pat, ix.lines[s:s+m]); why != "" {
			vetoed = why
			continue
		}
		if !unevenOnlyInContent(pat, ix.lines[s:s+m], ix.style()) {
			vetoed = "a brace or short line sits at another depth"
			continue
		}
		passing = append(passing, scored{s, sim})
	}
	if len(passing) > 0 {
		bestSim := -1.0
		for _, p := range passing {
			bestSim = max(bestSim, p.sim)
		}
		var top []int
		for _, p := range passing {
			if p.sim >= bestSim-1e-9 {
				top = append(top, p.s)
			}
		}
		s, amb := choose(top, m, n, q)
		if amb != nil {
			return match{}, &miss{ambiguous: amb, closest: -1}
		}
		return match{start: s, lv: lvFuzzy, sim: bestSim}, nil
	}
	ms := &miss{closest: -1}
	if closest.s >= 0 && closest.sim > 0 {
		ms.closest = closest.s
		ms.sim = closest.sim
		ms.diff = diffLines(pat, ix.lines[closest.s:closest.s+m], closest.s)
		ms.vetoed = veto(pat, ix.lines[closest.s:closest.s+m])
	}
	if ms.vetoed == "" && closest.sim >= q.threshold {
		ms.vetoed = vetoed
	}
	return match{}, ms
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// windowSimAtLeast is windowSim, giving up (ok=false) once it cannot reach minSim.
func windowSimAtLeast(a, b []string, minSim float64) (float64, bool) {
	total := 0
	for i := range a {
		total += max(len(a[i]), len(b[i]))
	}
	if total == 0 {
		return 1, true
	}
	budget := int((1 - minSim) * float64(total))
	// A cheap lower bound (length and letter-count differences) rejects most windows.
	lb := 0
	for i := range a {
		if a[i] != b[i] {
			lb += bagDistance(a[i], b[i])
			if lb > budget {
				return 0, false
			}
		}
	}
	dist := 0
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		dist += levenshteinMax(a[i], b[i], budget-dist)
		if dist > budget {
			return 0, false
		}
	}
	return 1 - float64(dist)/float64(total), true
}

// bagDistance is a lower bound of the edit distance: the larger of the
// character counts one string has in excess of the other (bytes folded to 64 buckets).
func bagDistance(a, b string) int {
	var h [64]int16
	for i := 0; i < len(a); i++ {
		h[a[i]&63]++
	}
	for i := 0; i < len(b); i++ {
		h[b[i]&63]--
	}
	pos, neg := 0, 0
	for _, v := range h {
		if v > 0 {
			pos += int(v)
		} else {
			neg -= int(v)
		}
	}
	return max(pos, neg)
}

// levenshteinMax is the edit distance, or any value above k once it exceeds k.
func levenshteinMax(a, b string, k int) int {
	if d := len(a) - len(b); d > k || -d > k {
		return k + 1
	}
	return levenshtein(a, b)
}

func levenshtein(a, b string) int {
	// Strip the common prefix and suffix: damaged lines usually differ in a few bytes.
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	if len(a) == 0 {
		return len(b)
	}
	if len(b) == 0 {
		return len(a)
	}
	if len(a) < len(b) {
		a, b = b, a
	}
	// Two long lines that differ throughout (minified code) are simply different;
	// the quadratic table would take seconds.
	if len(a)*len(b) > 4_000_000 {
		return len(a)
	}
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		prev := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cur := row[j]
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			row[j] = min(row[j]+1, row[j-1]+1, prev+cost)
			prev = cur
		}
	}
	return row[len(b)]
}

// diffLines lists up to five lines where the patch and the file differ.
func diffLines(pat, file []string, start int) []string {
	var out []string
	for i := range pat {
		if collapseWS(pat[i]) == collapseWS(file[i]) {
			continue
		}
		if len(out) == 5 {
			out = append(out, "…")
			break
		}
		out = append(out, fmt.Sprintf("line %d: patch has %q, file has %q", start+i+1, clip(pat[i]), clip(file[i])))
	}
	return out
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 100 {
		return s[:97] + "..."
	}
	return s
}

// uniformShift reports whether file is pat re-indented by one constant amount
// (after converting tabs and spaces to the file's style).
func uniformShift(pat, file []string, fs style) bool {
	pu := max(1, patchUnit(pat, file))
	delta, set := 0, false
	for i := range pat {
		if isBlank(pat[i]) {
			continue
		}
		a, b := leadingWS(toStyle(pat[i], fs, pu)), leadingWS(file[i])
		d := len(b) - len(a)
		if !set {
			delta, set = d, true
		} else if d != delta {
			return false
		}
	}
	return true
}

// unevenOnlyInContent allows lines whose indentation differs from the block's
// common shift only when they carry at least three letters or digits.
func unevenOnlyInContent(pat, file []string, fs style) bool {
	pu := max(1, patchUnit(pat, file))
	shifts := map[int]int{}
	ds := make([]int, len(pat))
	for i := range pat {
		if isBlank(pat[i]) {
			continue
		}
		ds[i] = len(leadingWS(file[i])) - len(leadingWS(toStyle(pat[i], fs, pu)))
		shifts[ds[i]]++
	}
	common, best := 0, -1
	for d, c := range shifts {
		if c > best || (c == best && d < common) {
			common, best = d, c
		}
	}
	for i := range pat {
		if isBlank(pat[i]) || ds[i] == common {
			continue
		}
		alnum := 0
		for _, c := range strings.TrimSpace(pat[i]) {
			if c == '_' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z' || c >= 0x80 {
				alnum++
			}
		}
		if alnum < 3 {
			return false
		}
	}
	return true
}

// squashHash is an FNV-1a hash of a line without its whitespace; a collision
// only adds a candidate, which scoring then rejects.
func squashHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' {
			continue
		}
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}
