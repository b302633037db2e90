package patch

import (
	"fmt"
	"sort"
	"strings"
)

// edit is one block or hunk reduced to "these old lines become these new lines".
type edit struct {
	idx      int // 1-based block number for messages
	old, new []string
	hint     int // 0-based line hint into the original, -1 for none
	hintEnd  int // 0-based last line of an explicit range, -1 for none
	insertAt int // for an empty old: 0-based insertion line, -1 for none
	eof      bool
	anchors  []string // apply-patch `@@ context` lines that must precede the match, in order
	hunk     []hline
	split    bool // a unified hunk may be split into parts when it fails whole
	// pairs maps each new line to the old line it repeats as context, or -1;
	// nil means "find out by comparing the lines" (lcsMap).
	pairs []int
}

// newToOld maps each new line to the old line it repeats unchanged, or -1:
// the hunk's own context lines when it has them, else a longest common subsequence.
func (e edit) newToOld() []int {
	if len(e.pairs) == len(e.new) && e.pairs != nil {
		return e.pairs
	}
	return lcsMap(e.old, e.new)
}

// hline is one line of a unified-style hunk.
type hline struct {
	op   byte // ' ', '-', '+'
	text string
}

// placed is an edit located in the file, with its final replacement lines.
type placed struct {
	idx       int
	start, n  int      // region of the file replaced
	repl      []string // replacement text
	replEol   []string // per replacement line ending, "" for the dominant one
	lv        level
	sim       float64
	line      int // 1-based line reported to the user
	method    string
	already   bool
	order     int
	coreStart int
	coreN     int
	coreRepl  []string
	coreEols  []string
}

type engine struct {
	s       Strategy
	d       doc
	opts    Options
	ordered bool // apply-patch: chunks in file order after a cursor
	seqOK   bool // multi-search-replace: a failed block may match text made by earlier blocks
	newUni  bool // no trusted line numbers
	order   int  // placement counter: insertions at one line keep block order
	total   int  // blocks in the patch, no-ops included
}

// run applies the edits whole or not at all. A SEARCH/REPLACE block whose
// old and new lines are identical is refused: it changes nothing, so the
// answer meant something else (Claude Code, opencode, Roo and gemini-cli
// refuse it too). A diff's context-only hunk changes nothing and is skipped,
// as git apply and apply-multi-diff do.
func (en *engine) run(edits []edit) (Result, error) {
	var noops []BlockFailure
	var keep []edit
	for _, e := range edits {
		if len(e.old) > 0 && equalStrings(e.old, e.new) {
			noops = append(noops, BlockFailure{Index: e.idx, Reason: noOpReason(en.s), NoOp: true})
			continue
		}
		keep = append(keep, e)
	}
	if len(noops) > 0 && en.s == MultiSearchReplace {
		return Result{}, &ApplyError{Strategy: en.s, Total: len(edits), Failures: noops, NoOp: len(noops) == len(edits)}
	}
	if len(keep) == 0 && len(noops) > 0 {
		var bs []BlockResult
		for _, f := range noops {
			bs = append(bs, BlockResult{Index: f.Index, Status: "no-op", Method: "none"})
		}
		return Result{Content: en.d.render(en.d.lines, en.d.eols), Strategy: en.s, Blocks: bs}, nil
	}
	en.total = len(edits)
	res, err := en.runEdits(keep)
	if err != nil || len(noops) == 0 {
		return res, err
	}
	for _, f := range noops {
		res.Blocks = append(res.Blocks, BlockResult{Index: f.Index, Status: "no-op", Method: "none"})
	}
	sort.SliceStable(res.Blocks, func(a, b int) bool { return res.Blocks[a].Index < res.Blocks[b].Index })
	return res, nil
}

// noOpReason says what is identical, in the strategy's words.
func noOpReason(s Strategy) string {
	switch s {
	case MultiSearchReplace:
		return "SEARCH and REPLACE are identical, so the block changes nothing; send only blocks that change something"
	case EditStrategy:
		return "old_string and new_string are identical, so the edit changes nothing"
	}
	return "the hunk has no added or removed lines, so it changes nothing"
}

// AllNoOp reports whether every block of a result changed nothing (a diff of
// context-only hunks).
func AllNoOp(bs []BlockResult) bool {
	for _, b := range bs {
		if b.Status != "no-op" {
			return false
		}
	}
	return len(bs) > 0
}

func (en *engine) runEdits(edits []edit) (Result, error) {
	ix := newIndex(en.d.lines)
	var ok []placed
	var fails []BlockFailure
	var retry []edit
	firstFail := map[int]BlockFailure{} // a retried block that fails again is reported against the original
	cursor, drift, prevEnd := 0, 0, -1
	for _, e := range edits {
		ps, f := en.place(ix, e, cursor, drift, prevEnd)
		if f != nil {
			if en.seqOK && !f.AlreadyApplied {
				retry = append(retry, e)
				firstFail[e.idx] = *f
				continue
			}
			fails = append(fails, *f)
			continue
		}
		for _, p := range ps {
			if !p.already {
				cursor = max(cursor, p.start+p.n)
				prevEnd = p.start + p.n
				if e.hint >= 0 && len(ps) == 1 {
					drift = p.start - e.hint
				}
			}
		}
		ok = append(ok, ps...)
	}
	// Overlapping blocks cannot both apply to the original; with sequential
	// semantics the later one is searched again after the earlier ones applied.
	ok, overl := dropOverlaps(ok)
	if len(overl) > 0 {
		if en.seqOK {
			byIdx := map[int]edit{}
			for _, e := range edits {
				byIdx[e.idx] = e
			}
			for _, i := range overl {
				retry = append(retry, byIdx[i])
			}
			sort.Slice(retry, func(a, b int) bool { return retry[a].idx < retry[b].idx })
		} else {
			for _, i := range overl {
				fails = append(fails, BlockFailure{Index: i, Reason: "overlaps an earlier " + en.unit() + "; merge them into one"})
			}
		}
	}
	lines, eols := en.d.lines, en.d.eols
	var results []BlockResult
	if len(retry) > 0 {
		var clash *BlockFailure
		if lines, eols, clash = splice(lines, eols, ok); clash != nil {
			return Result{}, &ApplyError{Strategy: en.s, Total: en.total, Failures: []BlockFailure{*clash}}
		}
		for _, e := range retry {
			cur := en.d
			cur.lines, cur.eols = lines, eols
			sub := &engine{s: en.s, d: cur, opts: en.opts}
			// Shift the hint by what earlier blocks added above it.
			if e.hint >= 0 {
				for _, p := range ok {
					if p.start+p.n <= e.hint && !p.already {
						e.hint += len(p.repl) - p.n
					}
				}
			}
			ps, f := sub.place(newIndex(lines), e, 0, 0, -1)
			if f != nil {
				if ff, ok := firstFail[e.idx]; ok && !f.AlreadyApplied {
					f = &ff
				}
				fails = append(fails, *f)
				continue
			}
			var clash *BlockFailure
			if lines, eols, clash = splice(lines, eols, ps); clash != nil {
				fails = append(fails, *clash)
				continue
			}
			for _, p := range ps {
				results = append(results, p.result())
			}
		}
	} else {
		var clash *BlockFailure
		if lines, eols, clash = splice(lines, eols, ok); clash != nil {
			return Result{}, &ApplyError{Strategy: en.s, Total: en.total, Failures: []BlockFailure{*clash}}
		}
	}
	for _, p := range ok {
		results = append(results, p.result())
	}
	sort.SliceStable(results, func(a, b int) bool { return results[a].Index < results[b].Index })
	total := en.total
	if len(fails) > 0 {
		sort.SliceStable(fails, func(a, b int) bool { return fails[a].Index < fails[b].Index })
		all := true
		for _, f := range fails {
			all = all && f.AlreadyApplied
		}
		if all && len(results) == 0 {
			return Result{}, &ApplyError{Strategy: en.s, Total: total, Failures: fails, AlreadyApplied: true}
		}
		var real []BlockFailure
		for _, f := range fails {
			if f.AlreadyApplied {
				results = append(results, BlockResult{Index: f.Index, Status: "already-applied", Line: f.ClosestLine, Method: "exact", Similarity: 1})
				continue
			}
			real = append(real, f)
		}
		if len(real) > 0 {
			return Result{}, &ApplyError{Strategy: en.s, Total: total, Failures: real}
		}
		sort.SliceStable(results, func(a, b int) bool { return results[a].Index < results[b].Index })
	}
	results = mergeParts(results)
	allAlready := len(results) > 0
	for _, r := range results {
		allAlready = allAlready && r.Status == "already-applied"
	}
	if allAlready {
		var fs []BlockFailure
		for _, r := range results {
			fs = append(fs, BlockFailure{Index: r.Index, Reason: "already applied", ClosestLine: r.Line, Similarity: 1, AlreadyApplied: true})
		}
		return Result{}, &ApplyError{Strategy: en.s, Total: total, Failures: fs, AlreadyApplied: true}
	}
	return Result{Content: en.d.render(lines, eols), Strategy: en.s, Blocks: results}, nil
}

func (p placed) result() BlockResult {
	st := "applied"
	if p.already {
		st = "already-applied"
	}
	return BlockResult{Index: p.idx, Status: st, Line: p.line, Method: p.method, Similarity: round3(p.sim)}
}

func round3(f float64) float64 { return float64(int(f*1000+0.5)) / 1000 }

func (en *engine) unit() string {
	return (&ApplyError{Strategy: en.s}).unit()
}

// dropOverlaps keeps edits in block order and returns the indexes of those that overlap an earlier one.
func dropOverlaps(ps []placed) ([]placed, []int) {
	var keep []placed
	var bad []int
	badIdx := map[int]bool{}
	for _, p := range ps {
		if p.already {
			keep = append(keep, p)
			continue
		}
		clash := false
		for _, k := range keep {
			if k.already {
				continue
			}
			if p.coreStart < k.coreStart+k.coreN && k.coreStart < p.coreStart+p.coreN {
				clash = true
				break
			}
			if p.coreN == 0 && k.coreN == 0 && p.coreStart == k.coreStart {
				continue // two insertions at one spot keep block order
			}
		}
		if clash || badIdx[p.idx] {
			if !badIdx[p.idx] {
				bad = append(bad, p.idx)
				badIdx[p.idx] = true
			}
			continue
		}
		keep = append(keep, p)
	}
	// Parts of a split hunk are all-or-nothing.
	if len(badIdx) > 0 {
		var k2 []placed
		for _, p := range keep {
			if !badIdx[p.idx] {
				k2 = append(k2, p)
			}
		}
		keep = k2
	}
	return keep, bad
}

// splice applies placed edits to lines. Edits must not overlap; an insertion
// at the start of a replaced region goes before it.
func splice(lines, eols []string, ps []placed) ([]string, []string, *BlockFailure) {
	var act []placed
	for _, p := range ps {
		if !p.already {
			act = append(act, p)
		}
	}
	if len(act) == 0 {
		return lines, eols, nil
	}
	sort.SliceStable(act, func(a, b int) bool {
		if act[a].coreStart != act[b].coreStart {
			return act[a].coreStart < act[b].coreStart
		}
		if (act[a].coreN == 0) != (act[b].coreN == 0) {
			return act[a].coreN == 0
		}
		return act[a].order < act[b].order
	})
	out := make([]string, 0, len(lines)+16)
	oe := make([]string, 0, len(lines)+16)
	at := 0
	for i, p := range act {
		if p.coreStart < at {
			return nil, nil, &BlockFailure{Index: p.idx, Reason: fmt.Sprintf("overlaps block %d at line %d; merge them into one", act[i-1].idx, p.coreStart+1)}
		}
		out = append(out, lines[at:p.coreStart]...)
		oe = append(oe, eols[at:p.coreStart]...)
		out = append(out, p.coreRepl...)
		oe = append(oe, p.coreEols...)
		at = p.coreStart + p.coreN
	}
	out = append(out, lines[at:]...)
	oe = append(oe, eols[at:]...)
	return out, oe, nil
}

// place locates one edit; on failure it returns a BlockFailure that explains why.
func (en *engine) place(ix *index, e edit, cursor, drift, prevEnd int) ([]placed, *BlockFailure) {
	q := query{hint: -1, lo: 0, hi: -1, preferFrom: -1, threshold: en.opts.threshold(), eof: e.eof}
	if e.hint >= 0 {
		q.hint = e.hint + drift
	}
	if en.newUni {
		q.preferFrom = prevEnd
	}
	if en.s == Unified {
		q.preferFrom, q.agree = prevEnd, true
	}
	if en.ordered {
		q.firstAfter, q.after, q.unanchored = true, cursor, len(e.anchors) == 0
		for _, an := range e.anchors {
			a := findAnchor(ix, an, q.after)
			if a < 0 {
				return nil, &BlockFailure{Index: e.idx, Reason: fmt.Sprintf("context line %q (after @@) not found", clip(an))}
			}
			q.after = a + 1
		}
	}
	n := len(ix.lines)
	// Pure insertions: no old lines to search for.
	if len(e.old) == 0 {
		return en.insert(ix, e, q)
	}
	// An explicit line range (:start_line: with :end_line:) is tried exactly,
	// then widened by the search buffer; nothing outside it is considered.
	if e.hintEnd >= 0 {
		lo := max(e.hint, 0)
		rq := q
		rq.lo, rq.hi = lo, max(lo, e.hintEnd-len(e.old)+1)
		if mt, ms := ix.find(e.old, rq); ms == nil {
			return en.finish(ix, e, mt)
		}
		buf := en.opts.buffer()
		q.lo, q.hi = max(0, lo-buf), max(0, e.hintEnd+buf-len(e.old)+1)
	}
	mt, ms := ix.find(e.old, q)
	if ms == nil && mt.lv == lvFuzzy {
		// A near miss next to the exact new text is a repeat, not a change.
		if f := en.already(ix, e, q); f != nil {
			return nil, f
		}
	}
	if ms == nil {
		return en.finish(ix, e, mt)
	}
	if len(ms.ambiguous) > 0 {
		return nil, &BlockFailure{Index: e.idx, Reason: ambiguousReason(en.s, ms.ambiguous)}
	}
	if f := en.already(ix, e, q); f != nil {
		return nil, f
	}
	if ps := en.blankTolerant(ix, e, q); ps != nil {
		return ps, nil
	}
	if e.split && len(e.hunk) > 0 {
		if ps := en.splitHunk(ix, e, q); ps != nil {
			return ps, nil
		}
	}
	f := &BlockFailure{Index: e.idx, Reason: en.notFound()}
	if ms.closest >= 0 {
		f.ClosestLine = ms.closest + 1
		f.Similarity = round3(ms.sim)
		f.Diff = ms.diff
		if ms.vetoed != "" {
			f.Reason += " (the closest match differs in substance: " + ms.vetoed + ")"
			f.Vetoed = ms.vetoed
		}
	} else if n > 0 {
		f.Reason += "; no similar lines in the file"
	}
	return nil, f
}

func (en *engine) notFound() string {
	switch en.s {
	case MultiSearchReplace:
		return "SEARCH not found"
	}
	return "context and removed lines not found"
}

func ambiguousReason(s Strategy, at []int) string {
	ls := make([]string, 0, len(at))
	for i, a := range at {
		if i == 5 {
			ls = append(ls, "…")
			break
		}
		ls = append(ls, fmt.Sprint(a+1))
	}
	what := "SEARCH"
	if s != MultiSearchReplace {
		what = "hunk"
	}
	return fmt.Sprintf("%s matches %d places (lines %s); add surrounding lines or a line number so it matches one", what, len(at), strings.Join(ls, ", "))
}

func findAnchor(ix *index, anchor string, from int) int {
	k := strings.TrimSpace(anchor)
	for _, p := range ix.trim[k] {
		if p >= from {
			return p
		}
	}
	// LLMs often give only the start of the line (e.g. a function signature).
	for i := from; i < len(ix.lines); i++ {
		if k != "" && strings.HasPrefix(ix.keys[i], k) {
			return i
		}
	}
	return -1
}

func (en *engine) insert(ix *index, e edit, q query) ([]placed, *BlockFailure) {
	n := len(ix.lines)
	at := -1
	switch {
	case n == 0:
		at = 0
	case e.insertAt >= 0:
		at = min(e.insertAt, n)
	case en.ordered && len(e.anchors) > 0:
		at = q.after
	case en.ordered || e.eof:
		at = n
	}
	if at < 0 {
		reason := "empty SEARCH needs a :start_line: to say where to insert"
		if en.s != MultiSearchReplace {
			reason = "hunk has no context or removed lines; add a few unchanged lines around it so relay can place it"
		}
		return nil, &BlockFailure{Index: e.idx, Reason: reason}
	}
	// Inserting the same lines again at the same spot is a repeat, not a change.
	if n > 0 && len(e.new) > 0 && at-len(e.new) >= 0 && equalLines(ix.lines[at-len(e.new):at], e.new) {
		return []placed{{idx: e.idx, already: true, line: at - len(e.new) + 1, method: "exact", sim: 1}}, nil
	}
	// A :start_line: or @@-anchored insertion applied before sits right at `at` now; short text ("}") proves nothing.
	if (e.insertAt >= 0 || len(e.anchors) > 0) && at+len(e.new) <= n && len(squash(strings.Join(e.new, ""))) >= 8 && sameTrimmed(ix.lines[at:at+len(e.new)], e.new) {
		return []placed{{idx: e.idx, already: true, line: at + 1, method: "exact", sim: 1}}, nil
	}
	method := "insert"
	if n == 0 {
		method = "create"
	}
	repl := append([]string(nil), e.new...)
	if n > 0 && en.s == MultiSearchReplace {
		repl = inferInsertIndent(ix.lines, at, repl)
	}
	eols := make([]string, len(repl))
	if en.d.mixed() && n > 0 {
		near := en.d.eols[min(max(at-1, 0), n-1)]
		for j := range eols {
			eols[j] = near
		}
	}
	en.order++
	p := placed{idx: e.idx, start: at, n: 0, repl: repl, replEol: eols, lv: lvExact, sim: 1, line: at + 1, method: method, order: en.order}
	p.coreStart, p.coreN, p.coreRepl, p.coreEols = at, 0, p.repl, p.replEol
	return []placed{p}, nil
}

// sameTrimmed compares lines ignoring indentation (insertions are re-indented).
func sameTrimmed(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.TrimSpace(a[i]) != strings.TrimSpace(b[i]) {
			return false
		}
	}
	return true
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.TrimRight(a[i], " \t") != strings.TrimRight(b[i], " \t") {
			return false
		}
	}
	return true
}

// inferInsertIndent indents inserted lines that carry no indentation like their neighbours.
func inferInsertIndent(lines []string, at int, repl []string) []string {
	for _, r := range repl {
		if !isBlank(r) && leadingWS(r) != "" {
			return repl
		}
	}
	ind := ""
	prev := ""
	for i := at - 1; i >= 0; i-- {
		if !isBlank(lines[i]) {
			prev = lines[i]
			break
		}
	}
	next := ""
	for i := at; i < len(lines); i++ {
		if !isBlank(lines[i]) {
			next = lines[i]
			break
		}
	}
	switch {
	case prev != "" && strings.ContainsAny(strings.TrimSpace(prev)[len(strings.TrimSpace(prev))-1:], "{[(:"):
		unit := strings.Repeat(" ", indentUnit(lines))
		if strings.Contains(leadingWS(prev), "\t") {
			unit = "\t"
		}
		ind = leadingWS(prev) + unit
	case next != "" && prev != "":
		ind = leadingWS(next)
		if len(leadingWS(prev)) > len(ind) {
			ind = leadingWS(prev)
		}
	case prev != "":
		ind = leadingWS(prev)
	case next != "":
		ind = leadingWS(next)
	}
	if ind == "" {
		return repl
	}
	out := make([]string, len(repl))
	for i, r := range repl {
		if isBlank(r) {
			out[i] = r
		} else {
			out[i] = ind + r
		}
	}
	return out
}

// already reports a block whose new text is in the file while its old text is not.
func (en *engine) already(ix *index, e edit, q query) *BlockFailure {
	// Short new text (a lone "}" or "B") is found everywhere; it proves nothing.
	if len(e.new) == 0 || len(squash(strings.Join(e.new, ""))) < 8 {
		return nil
	}
	q.noFuzzy, q.strict = true, true
	q.lo, q.hi = 0, -1
	q.firstAfter = false
	mt, ms := ix.find(e.new, q)
	if ms != nil && len(ms.ambiguous) == 0 {
		return nil
	}
	line := 0
	if ms == nil {
		line = mt.start + 1
	} else {
		line = ms.ambiguous[0] + 1
	}
	return &BlockFailure{Index: e.idx, Reason: "the change is already present", ClosestLine: line, Similarity: 1, AlreadyApplied: true}
}

func allBlank(ls []string) bool {
	for _, l := range ls {
		if !isBlank(l) {
			return false
		}
	}
	return true
}

// finish builds the replacement for a located edit, or notices it was already applied.
func (en *engine) finish(ix *index, e edit, mt match) ([]placed, *BlockFailure) {
	// Old lines still present inside a copy of the new lines: applied before.
	if len(e.new) > len(e.old) && containsRun(e.new, e.old) {
		q := query{hint: mt.start, lo: 0, hi: -1, preferFrom: -1, noFuzzy: true, strict: true}
		if m2, ms := ix.find(e.new, q); ms == nil && m2.start <= mt.start && mt.start+len(e.old) <= m2.start+len(e.new) {
			return []placed{{idx: e.idx, already: true, line: m2.start + 1, method: m2.lv.method(), sim: 1}}, nil
		}
	}
	p, f := en.build(ix, e, mt)
	if f != nil {
		return nil, f
	}
	if p.coreN == 0 && len(p.coreRepl) == 0 && !equalStrings(e.old, e.new) {
		// The block would change nothing here: its result is already in the file.
		p.already = true
	}
	return []placed{p}, nil
}

func containsRun(hay, needle []string) bool {
	if len(needle) == 0 {
		return true
	}
outer:
	for i := 0; i+len(needle) <= len(hay); i++ {
		for j := range needle {
			if strings.TrimSpace(hay[i+j]) != strings.TrimSpace(needle[j]) {
				continue outer
			}
		}
		return true
	}
	return false
}

func (en *engine) build(ix *index, e edit, mt match) (placed, *BlockFailure) {
	s, m := mt.start, len(e.old)
	file := ix.lines[s : s+m]
	fileEols := en.d.eols[s : s+m]
	mapping := e.newToOld()
	repl := make([]string, len(e.new))
	eols := make([]string, len(e.new))
	ref := firstNonBlank(e.old)
	fs := ix.style()
	pu := 0
	var pairs []int
	fr := frameShift
	if mt.lv >= lvIndent {
		pairs = pairChanged(e.old, e.new, mapping)
		var why string
		if fr, why = reindentFrame(e.old, e.new, file, mapping, pairs, fs, false); fr == frameRefuse {
			return placed{}, &BlockFailure{Index: e.idx, Reason: why, ClosestLine: s + 1, Similarity: round3(mt.sim)}
		}
	}
	for j, nl := range e.new {
		if i := mapping[j]; i >= 0 {
			repl[j] = file[i]
			eols[j] = fileEols[i]
			if !isBlank(e.old[i]) && !isBlank(file[i]) {
				ref = i // a blank line says nothing about indentation
			}
			continue
		}
		// A whitespace-only line is written as the answer wrote it: the engine
		// that produced the answer kept it byte for byte.
		if isBlank(nl) || fr == frameLiteral {
			repl[j] = nl
			continue
		}
		// A changed line whose old line differs from the file's only in
		// whitespace is that line edited: it keeps the file's indentation when
		// the answer kept the old line's, and text put in front of the old line
		// goes in front of the file's.
		if i := pairs0(pairs, j); i >= 0 && strings.TrimSpace(file[i]) == strings.TrimSpace(e.old[i]) {
			lo, ln := leadingWS(e.old[i]), leadingWS(nl)
			if ln == lo {
				repl[j] = leadingWS(file[i]) + nl[len(ln):]
				continue
			}
			if x, ok := strings.CutSuffix(nl, e.old[i]); ok && strings.TrimSpace(x) != "" && !isBlank(e.old[i]) {
				repl[j] = x + file[i]
				continue
			}
		}
		// When the match had to ignore indentation, new lines take the file's
		// tabs-or-spaces and the shift the match found; otherwise they are as written.
		if mt.lv >= lvIndent && ref >= 0 {
			if pu == 0 {
				pu = max(1, patchUnit(e.old, file))
			}
			nl = shiftIndent(toStyle(nl, fs, pu), leadingWS(toStyle(e.old[ref], fs, pu)), leadingWS(file[ref]))
		}
		repl[j] = nl
	}
	// In a file with mixed line endings a new or changed line takes the ending
	// of the line above it (of the line below when it comes first).
	if en.d.mixed() {
		prev := ""
		if s > 0 {
			prev = en.d.eols[s-1]
		} else if m > 0 {
			prev = fileEols[0]
		}
		for j := range eols {
			switch {
			case mapping[j] >= 0:
				prev = eols[j]
			case eols[j] == "":
				eols[j] = prev
			}
		}
	}
	if en.s == MultiSearchReplace {
		// A REPLACE section is written without trailing whitespace, as Roo Code
		// and diff-apply write it: an answer's stray spaces never reach the file.
		for j := range repl {
			if !isBlank(repl[j]) {
				repl[j] = strings.TrimRight(repl[j], " \t")
			}
		}
	}
	en.order++
	p := placed{idx: e.idx, start: s, n: m, repl: repl, replEol: eols, lv: mt.lv, sim: mt.sim, line: s + 1, method: mt.lv.method(), order: en.order}
	// Shrink to the changed core so neighbouring hunks that share context do not clash.
	cs, cn, cr, ce := s, m, repl, eols
	for cn > 0 && len(cr) > 0 && cr[0] == ix.lines[cs] && (ce[0] == "" || ce[0] == en.d.eols[cs]) {
		cs++
		cn--
		cr, ce = cr[1:], ce[1:]
	}
	for cn > 0 && len(cr) > 0 && cr[len(cr)-1] == ix.lines[cs+cn-1] && (ce[len(ce)-1] == "" || ce[len(ce)-1] == en.d.eols[cs+cn-1]) {
		cn--
		cr, ce = cr[:len(cr)-1], ce[:len(ce)-1]
	}
	// Keep the ending of a replaced last line (no final newline stays that way via render).
	p.coreStart, p.coreN, p.coreRepl, p.coreEols = cs, cn, cr, ce
	return p, nil
}

func pairs0(p []int, j int) int {
	if j < len(p) {
		return p[j]
	}
	return -1
}

// pairChanged pairs each changed new line with the old line it replaces:
// between two unchanged lines, n removed and n added lines pair in order;
// with unequal counts a new line pairs with the next old line it contains.
func pairChanged(old, nw []string, mapping []int) []int {
	out := make([]int, len(nw))
	for j := range out {
		out[j] = -1
	}
	oi, j := 0, 0
	for j <= len(nw) {
		k := j
		for k < len(nw) && mapping[k] < 0 {
			k++
		}
		oEnd := len(old)
		if k < len(nw) {
			oEnd = mapping[k]
		}
		if nn, no := k-j, oEnd-oi; nn > 0 && no > 0 {
			if nn == no {
				for t := 0; t < nn; t++ {
					out[j+t] = oi + t
				}
			} else {
				u := oi
				for t := j; t < k && u < oEnd; t++ {
					for v := u; v < oEnd; v++ {
						if o := strings.TrimSpace(old[v]); o != "" && strings.Contains(nw[t], o) {
							out[t], u = v, v+1
							break
						}
					}
				}
			}
		}
		if k >= len(nw) {
			break
		}
		oi, j = mapping[k]+1, k+1
	}
	return out
}

func firstNonBlank(ls []string) int {
	for i, l := range ls {
		if !isBlank(l) {
			return i
		}
	}
	if len(ls) > 0 {
		return 0
	}
	return -1
}

// lcsMap maps each new line to the old line it repeats unchanged, or -1.
func lcsMap(old, nw []string) []int {
	out := make([]int, len(nw))
	for j := range out {
		out[j] = -1
	}
	// Common prefix and suffix first; the LCS table only covers the middle.
	p := 0
	for p < len(old) && p < len(nw) && old[p] == nw[p] {
		out[p] = p
		p++
	}
	sfx := 0
	for sfx < len(old)-p && sfx < len(nw)-p && old[len(old)-1-sfx] == nw[len(nw)-1-sfx] {
		out[len(nw)-1-sfx] = len(old) - 1 - sfx
		sfx++
	}
	a, b := old[p:len(old)-sfx], nw[p:len(nw)-sfx]
	if len(a) == 0 || len(b) == 0 || len(a)*len(b) > 4_000_000 {
		return out
	}
	dp := make([][]int32, len(a)+1)
	for i := range dp {
		dp[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			out[p+j] = p + i
			i++
			j++
		case dp[i+1][j] >= dp[i][j+1]:
			i++
		default:
			j++
		}
	}
	return out
}

var methodRank = map[string]int{"exact": 0, "trailing-whitespace": 1, "indentation": 2, "fuzzy": 3}

// mergeParts folds the parts of a split hunk into one result per block.
func mergeParts(rs []BlockResult) []BlockResult {
	var out []BlockResult
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].Index == r.Index {
			m := &out[n-1]
			if r.Status == "applied" {
				m.Status = "applied"
			}
			m.Line = min(m.Line, r.Line)
			if methodRank[r.Method] > methodRank[m.Method] {
				m.Method = r.Method
			}
			m.Similarity = min(m.Similarity, r.Similarity)
			continue
		}
		out = append(out, r)
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
