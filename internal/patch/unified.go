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
			h := uhunk{}
			h.oldStart, h.oldCount, h.hasNums = parseHunkHeader(l)
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

func hunkEdit(idx int, h uhunk) edit {
	e := edit{idx: idx, hint: -1, hintEnd: -1, insertAt: -1, hunk: h.lines, split: true}
	for _, l := range h.lines {
		switch l.op {
		case ' ':
			e.old = append(e.old, l.text)
			e.new = append(e.new, l.text)
		case '-':
			e.old = append(e.old, l.text)
		case '+':
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
// change with its own context, shrinking that context when lines were dropped.
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
	var out []placed
	prevEnd := -1 // end of the previous part's changed core in the file
	gapLimit := -1
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
		// Old lines before this part in the hunk give the part its own hint.
		oldBefore := 0
		for _, l := range e.hunk[:g.s-len(pre)] {
			if l.op != '+' {
				oldBefore++
			}
		}
		var found *placed
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
				if prevEnd >= 0 {
					pq.lo = max(q.lo, prevEnd-a)
					pq.hi = prevEnd + gapLimit + 10
					if q.hi >= 0 {
						pq.hi = min(pq.hi, q.hi)
					}
				}
				pq.noFuzzy = total < full
				mt, ms := ix.find(sub.old, pq)
				if ms != nil {
					continue
				}
				p := en.build(ix, sub, mt)
				found = &p
			}
		}
		if found == nil {
			return nil
		}
		out = append(out, *found)
		prevEnd = found.coreStart + found.coreN
		gapLimit = postTo - g.e
	}
	return out
}
