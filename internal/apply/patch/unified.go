package patch

import (
	"fmt"
	"strconv"
	"strings"
)

// udFile is one file's part of a unified diff.
type udFile struct {
	oldPath, newPath string
	hunks            []uhunk
}

type uhunk struct {
	oldStart, oldCount int
	newCount           int // -1 when the header gives none
	hasNums            bool
	lines              []hline
	noEOLNew           bool // "\ No newline at end of file" after the new side
	noEOLOld           bool
}

func isDiffMeta(l string) bool {
	for _, p := range []string{"index ", "new file mode", "deleted file mode", "similarity index", "rename from", "rename to", "old mode", "new mode", "dissimilarity index", "copy from", "copy to", "Binary files"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// diffPath cleans a ---/+++ header path: quotes, a/ b/ prefixes, timestamps.
func diffPath(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	if len(s) >= 2 && s[0] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		} else {
			s = strings.Trim(s, `"`)
		}
	}
	if s == "/dev/null" {
		return s
	}
	if strings.HasPrefix(s, "a/") || strings.HasPrefix(s, "b/") {
		s = s[2:]
	}
	return s
}

// parseUnified splits a (possibly multi-file) unified diff into files and hunks.
// Line numbers and counts are kept only as hints: LLMs miscount them.
func parseUnified(lines []string) ([]udFile, error) {
	var files []udFile
	cur := -1
	inHunk := false
	newFile := func() {
		files = append(files, udFile{})
		cur = len(files) - 1
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "diff --git "):
			newFile()
			inHunk = false
			continue
		case strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			if cur < 0 || len(files[cur].hunks) > 0 || files[cur].oldPath != "" {
				newFile()
			}
			files[cur].oldPath = diffPath(l[4:])
			files[cur].newPath = diffPath(lines[i+1][4:])
			i++
			inHunk = false
			continue
		case strings.HasPrefix(l, "@@"):
			if cur < 0 {
				newFile()
			}
			h := uhunk{newCount: -1}
			h.oldStart, h.oldCount, h.hasNums = parseHunkHeader(l)
			if h.hasNums {
				h.newCount = newSideCount(l)
			}
			files[cur].hunks = append(files[cur].hunks, h)
			inHunk = true
			continue
		}
		if !inHunk {
			continue
		}
		if isDiffMeta(l) && cur >= 0 && len(files[cur].hunks) == 0 {
			continue
		}
		h := &files[cur].hunks[len(files[cur].hunks)-1]
		switch {
		case l == "":
			h.lines = append(h.lines, hline{'e', ""}) // raw empty line: blank context, unless trailing
		case l[0] == ' ' || l[0] == '-' || l[0] == '+':
			h.lines = append(h.lines, hline{l[0], l[1:]})
		case l[0] == '\\':
			if len(h.lines) > 0 && h.lines[len(h.lines)-1].op == '-' {
				h.noEOLOld = true
			} else {
				h.noEOLNew = true
			}
		default:
			// A context line that lost its leading space.
			h.lines = append(h.lines, hline{' ', l})
		}
	}
	var out []udFile
	for _, f := range files {
		for k := range f.hunks {
			h := &f.hunks[k]
			for len(h.lines) > 0 && h.lines[len(h.lines)-1].op == 'e' {
				h.lines = h.lines[:len(h.lines)-1]
			}
			for j := range h.lines {
				if h.lines[j].op == 'e' {
					h.lines[j].op = ' '
				}
			}
		}
		var hs []uhunk
		for _, h := range f.hunks {
			if len(h.lines) > 0 {
				hs = append(hs, h)
			}
		}
		f.hunks = hs
		if len(f.hunks) > 0 || f.newPath == "/dev/null" {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no hunks found; a diff needs @@ lines followed by ' ' context, '-' removed and '+' added lines")
	}
	return out, nil
}

func parseHunkHeader(l string) (start, count int, ok bool) {
	// @@ -a,b +c,d @@ ...
	rest := strings.TrimPrefix(l, "@@")
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "-") {
		return 0, 0, false
	}
	f := strings.Fields(rest[1:])
	if len(f) == 0 {
		return 0, 0, false
	}
	a, b, _ := strings.Cut(f[0], ",")
	s, err := strconv.Atoi(a)
	if err != nil {
		return 0, 0, false
	}
	c := 1
	if b != "" {
		if c, err = strconv.Atoi(b); err != nil {
			return 0, 0, false
		}
	}
	return s, c, true
}

// newSideCount reads d of "@@ -a,b +c,d @@" (1 when d is left out), -1 if absent.
func newSideCount(l string) int {
	for _, f := range strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "@@")) {
		if !strings.HasPrefix(f, "+") {
			continue
		}
		_, d, found := strings.Cut(f[1:], ",")
		if !found {
			return 1
		}
		n, err := strconv.Atoi(d)
		if err != nil {
			return -1
		}
		return n
	}
	return -1
}

// cutOffHunk reports a last hunk whose header promises far more lines than
// it has: the answer stopped inside it. LLMs miscount by a few lines, not by
// half a hunk, and a hunk that changes nothing yet promises more is unfinished.
func cutOffHunk(h uhunk) string {
	if !h.hasNums || h.newCount < 0 {
		return ""
	}
	old, nw, changes := 0, 0, 0
	for _, l := range h.lines {
		switch l.op {
		case ' ':
			old++
			nw++
		case '-':
			old++
			changes++
		case '+':
			nw++
			changes++
		}
	}
	promised := max(h.oldCount, h.newCount)
	short := changes == 0 && (old < h.oldCount || nw < h.newCount)
	short = short || (old*2 < h.oldCount && nw*2 < h.newCount && promised-max(old, nw) >= 10)
	if !short {
		return ""
	}
	return fmt.Sprintf("the last hunk's header promises %d old and %d new lines but it has %d and %d", h.oldCount, h.newCount, old, nw)
}

func hunkEdit(idx int, h uhunk) edit {
	e := edit{idx: idx, hint: -1, hintEnd: -1, insertAt: -1, hunk: h.lines, split: true, pairs: []int{}}
	for _, l := range h.lines {
		switch l.op {
		case ' ':
			e.pairs = append(e.pairs, len(e.old))
			e.old = append(e.old, l.text)
			e.new = append(e.new, l.text)
		case '-':
			e.old = append(e.old, l.text)
		case '+':
			e.pairs = append(e.pairs, -1)
			e.new = append(e.new, l.text)
		}
	}
	if h.hasNums {
		e.hint = max(h.oldStart-1, 0)
		if h.oldCount == 0 {
			e.hint = h.oldStart
		}
		if len(e.old) == 0 {
			e.insertAt = e.hint
		}
	}
	return e
}

func applyUnified(d doc, s Strategy, body string, opts Options) (Result, error) {
	files, err := parseUnified(patchLines(body))
	if err != nil {
		return Result{}, formatError(s, "invalid diff: %v", err)
	}
	if len(files) > 1 {
		var names []string
		for _, f := range files {
			names = append(names, f.newPath)
		}
		return Result{}, formatError(s, "the diff changes %d files (%s); relay patch changes one file: split the diff, or apply the whole response with relay apply", len(files), strings.Join(names, ", "))
	}
	f := files[0]
	if len(f.hunks) > 0 {
		if why := cutOffHunk(f.hunks[len(f.hunks)-1]); why != "" {
			return Result{}, cutOff(s, why)
		}
	}
	var edits []edit
	for i, h := range f.hunks {
		e := hunkEdit(i+1, h)
		if s == NewUnified && len(e.old) == 0 && len(d.lines) > 0 {
			e.insertAt = -1
		}
		edits = append(edits, e)
	}
	en := &engine{s: s, d: d, opts: opts, newUni: s == NewUnified}
	if f.newPath == "/dev/null" {
		en.d.final = true
	}
	for _, h := range f.hunks {
		if h.noEOLNew {
			en.d.final = false
		} else if h.noEOLOld {
			en.d.final = true
		}
	}
	return en.run(edits)
}

// splitHunk places a hunk whose lines do not match as a whole by locating each
// change with its own context, leaving out far context when lines were
// inserted or dropped. Every context line of the hunk must still be matched by
// a part or found between the parts (a few foreign lines allowed), so a part
// never lands in a different place.
func (en *engine) splitHunk(ix *index, e edit, q query) []placed {
	type grp struct{ s, e int }
	var groups []grp
	for i := 0; i < len(e.hunk); {
		if e.hunk[i].op == ' ' {
			i++
			continue
		}
		j := i
		for j < len(e.hunk) && e.hunk[j].op != ' ' {
			j++
		}
		groups = append(groups, grp{i, j})
		i = j
	}
	if len(groups) == 0 {
		return nil
	}
	const maxCtx = 4
	type partPos struct {
		start, end int  // located region of the part's old lines
		a, b       int  // context lines kept before and after the change
		sure       bool // matched exactly, once in the file, with all its near context
	}
	var out []placed
	var pos []partPos
	for gi, g := range groups {
		preFrom := 0
		if gi > 0 {
			preFrom = groups[gi-1].e
		}
		postTo := len(e.hunk)
		if gi+1 < len(groups) {
			postTo = groups[gi+1].s
		}
		pre := e.hunk[preFrom:g.s]
		post := e.hunk[g.e:postTo]
		if len(pre) > maxCtx {
			pre = pre[len(pre)-maxCtx:]
		}
		if len(post) > maxCtx {
			post = post[:maxCtx]
		}
		oldBefore := len(hunkOld(e.hunk[:g.s-len(pre)]))
		var found *placed
		var fp partPos
		full := len(pre) + len(post)
		for total := full; total >= 0 && found == nil; total-- {
			for a := min(len(pre), total); a >= 0 && found == nil; a-- {
				b := total - a
				if b > len(post) {
					break
				}
				var part []hline
				part = append(part, pre[len(pre)-a:]...)
				part = append(part, e.hunk[g.s:g.e]...)
				part = append(part, post[:b]...)
				sub := hunkEdit(e.idx, uhunk{lines: part})
				if allBlank(sub.old) {
					continue
				}
				pq := q
				pq.eof = false
				if q.hint >= 0 {
					pq.hint = q.hint + oldBefore + (len(pre) - a)
				}
				if len(pos) > 0 {
					prev := pos[len(pos)-1]
					gap := len(hunkOld(e.hunk[groups[gi-1].e:g.s]))
					pq.lo = max(q.lo, prev.end-prev.b-a)
					pq.hi = prev.end + gap + nearbySlack
					if q.hi >= 0 {
						pq.hi = min(pq.hi, q.hi)
					}
				}
				pq.quick = total < full
				mt, ms := ix.find(sub.old, pq)
				if ms != nil {
					continue
				}
				ps, f := en.finish(ix, sub, mt)
				if f != nil {
					continue
				}
				found = &ps[0]
				fp = partPos{start: mt.start, end: mt.start + len(sub.old), a: a, b: b}
				if total == full && mt.lv <= lvTrailing && nonBlankCount(sub.old) >= 4 {
					_, again := ix.find(sub.old, query{hint: -1, hi: -1, preferFrom: -1, strict: true})
					fp.sure = again == nil
				}
			}
		}
		if found == nil {
			return nil
		}
		out = append(out, *found)
		pos = append(pos, fp)
	}
	// Context the parts left out must be where the hunk says it is: next to
	// the part, or, for a part that is certain of its place (exact, unique,
	// with its near context), somewhere on the right side of it nearby.
	first, last := groups[0], groups[len(groups)-1]
	slack := func(p partPos) int {
		if p.sure {
			return farSlack
		}
		return nearbySlack
	}
	if !nearby(ix, hunkOld(e.hunk[:first.s-pos[0].a]), pos[0].start-1, -1, -1, slack(pos[0])) {
		return nil
	}
	lp := pos[len(pos)-1]
	if !nearby(ix, hunkOld(e.hunk[last.e+lp.b:]), lp.end, 1, -1, slack(lp)) {
		return nil
	}
	for k := 1; k < len(groups); k++ {
		mid := hunkOld(e.hunk[groups[k-1].e:groups[k].s])
		left, right := pos[k-1], pos[k]
		if left.b+right.a >= len(mid) {
			continue
		}
		if !nearby(ix, mid[left.b:len(mid)-right.a], left.end, 1, right.start, nearbySlack) {
			return nil
		}
	}
	return out
}

func hunkOld(ls []hline) []string {
	var out []string
	for _, l := range ls {
		if l.op != '+' {
			out = append(out, l.text)
		}
	}
	return out
}

// nearbySlack is how many foreign lines may sit between a located part and
// the context it dropped; farSlack is the same for a part certain of its place
// (an answer that skipped a function between two context lines).
const (
	nearbySlack = 3
	farSlack    = 40
)

func nonBlankCount(ls []string) int {
	n := 0
	for _, l := range ls {
		if !isBlank(l) {
			n++
		}
	}
	return n
}

// nearby checks that want (context lines in file order) appears walking from
// pos in direction dir, allowing slack extra lines in total and not
// reaching limit (-1 for none).
func nearby(ix *index, want []string, pos, dir, limit, slack int) bool {
	order := make([]int, len(want))
	for i := range want {
		if dir < 0 {
			order[i] = len(want) - 1 - i
		} else {
			order[i] = i
		}
	}
	for _, k := range order {
		key := strings.TrimSpace(want[k])
		for {
			if pos < 0 || pos >= len(ix.lines) || (limit >= 0 && pos >= limit) {
				return false
			}
			if ix.keys[pos] == key || (stripComment(ix.keys[pos]) == stripComment(key) && stripComment(key) != "") {
				pos += dir
				break
			}
			if slack == 0 {
				return false
			}
			slack--
			pos += dir
		}
	}
	return true
}

// stripComment drops a trailing // or # comment: LLMs annotate context lines.
func stripComment(s string) string {
	for _, tok := range []string{" //", " #", "\t//", "\t#"} {
		if i := strings.Index(s, tok); i >= 0 {
			s = s[:i]
		}
	}
	return strings.TrimSpace(s)
}
