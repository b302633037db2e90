package patch

import (
	"strings"
)

// style is how a text indents: tabs or spaces, and the width of one level.
type style struct {
	tabs  bool
	unit  int
	known bool // false when no line is indented
}

func detectStyle(lines []string) style {
	tabs, spaces := 0, 0
	var ws []int
	for _, l := range lines {
		if len(l) == 0 || isBlank(l) {
			continue
		}
		switch l[0] {
		case '\t':
			tabs++
		case ' ':
			spaces++
			if len(ws) < 2000 {
				ws = append(ws, len(leadingWS(l)))
			}
		}
	}
	// A file that mixes both styles is left alone: no conversion is known to be right.
	minority := min(tabs, spaces)
	return style{tabs: tabs > spaces, unit: unitOf(ws), known: tabs+spaces > 0 && minority*20 <= tabs+spaces}
}

func unitOf(ws []int) int {
	if len(ws) == 0 {
		return 4
	}
	// Eight-space levels are rare enough that "everything at 8" means two levels of 4.
	for _, u := range []int{4, 2} {
		ok := 0
		for _, w := range ws {
			if w%u == 0 {
				ok++
			}
		}
		if ok*10 >= len(ws)*8 {
			return u
		}
	}
	return 4
}

// shiftIndent moves a line by the shift between the patch's reference
// indentation (pRef) and the file's (fRef); all three are in the file's style.
func shiftIndent(line, pRef, fRef string) string {
	if isBlank(line) {
		return line // whitespace-only lines are kept as written
	}
	ind := leadingWS(line)
	body := line[len(ind):]
	if strings.HasPrefix(ind, pRef) {
		return fRef + ind[len(pRef):] + body
	}
	if strings.HasPrefix(pRef, ind) {
		cut := len(pRef) - len(ind)
		if cut >= len(fRef) {
			return body
		}
		return fRef[:len(fRef)-cut] + body
	}
	// Mixed indentation: keep the width difference, in the file's character.
	w := len(fRef) + len(ind) - len(pRef)
	if w <= 0 {
		return body
	}
	c := " "
	if strings.HasPrefix(fRef, "\t") || (fRef == "" && strings.HasPrefix(ind, "\t")) {
		c = "\t"
	}
	return strings.Repeat(c, w) + body
}

// toStyle rewrites a line's indentation in the file's style: spaces become tabs
// (pu spaces per tab; leftover alignment spaces stay) or tabs become spaces.
func toStyle(line string, fs style, pu int) string {
	if !fs.known {
		return line
	}
	ind := leadingWS(line)
	if fs.tabs {
		if !strings.Contains(ind, " ") {
			return line
		}
		t, sp := strings.Count(ind, "\t"), strings.Count(ind, " ")
		t += sp / pu
		return strings.Repeat("\t", t) + strings.Repeat(" ", sp%pu) + line[len(ind):]
	}
	if !strings.Contains(ind, "\t") {
		return line
	}
	return strings.ReplaceAll(ind, "\t", strings.Repeat(" ", fs.unit)) + line[len(ind):]
}

// patchUnit infers how many spaces the patch used for one of the file's tabs,
// from lines the match paired up; otherwise from the patch's own indentation.
func patchUnit(old, file []string) int {
	votes := map[int]int{}
	for i := range old {
		po, fo := leadingWS(old[i]), leadingWS(file[i])
		if po == "" || fo == "" || strings.Contains(po, "\t") || strings.Contains(fo, " ") {
			continue
		}
		if len(po)%len(fo) == 0 {
			votes[len(po)/len(fo)]++
		}
	}
	best, bv := 0, 0
	for u, v := range votes {
		if v > bv || (v == bv && u < best) {
			best, bv = u, v
		}
	}
	if best > 0 {
		return best
	}
	return detectStyle(old).unit
}

// indentUnit guesses the width of one indentation level in space-indented lines.
func indentUnit(lines []string) int { return detectStyle(lines).unit }

// frame is how a block matched only with its indentation ignored writes the
// lines it adds or changes.
type frame int

const (
	frameShift   frame = iota // moved by the offset between the answer's old lines and the file's
	frameLiteral              // as the answer wrote them
	frameRefuse               // the evidence disagrees: refuse rather than guess
)

// reindentFrame decides from the block itself whether its new lines are
// written in the frame of its old lines (then they move with them) or
// already in the file's. Evidence, line by line, only where the old line and
// the file's differ in indentation: a new line that repeats an old line, or
// a changed line indented like the old line it replaces, votes for the old
// lines' frame; a changed line indented like the file's line votes for the
// file's. Moving needs votes for the old frame only and old lines that are
// off the file by one uniform amount; writing literally needs votes for the
// file's frame only. Without votes, the smallest indentation of the new
// lines decides the same way. Anything else is refused: re-indenting on a
// guess produced most of the wrong edits on answers relay had not seen.
// skipFirst ignores the first line (an edit that starts inside a line).
func reindentFrame(old, nw, file []string, mapping, pairs []int, fs style, skipFirst bool) (frame, string) {
	pu := max(1, patchUnit(old, file))
	ws := func(l string) string { return leadingWS(toStyle(l, fs, pu)) }
	open := false // a changed line that only the frame can place
	for j, nl := range nw {
		if isBlank(nl) || (skipFirst && j == 0) || (j < len(mapping) && mapping[j] >= 0) {
			continue
		}
		if i := pairs0(pairs, j); i >= 0 && editedLine(old[i], nl, file[i]) {
			continue // placed by its own old line (build's pair rule)
		}
		open = true
	}
	if !open {
		return frameShift, ""
	}
	oldVotes, fileVotes := 0, 0
	for j, nl := range nw {
		if isBlank(nl) || (skipFirst && j == 0) {
			continue
		}
		i := -1
		if j < len(mapping) {
			i = mapping[j]
		}
		repeats := i >= 0
		if !repeats && j < len(pairs) {
			i = pairs[j]
		}
		if i < 0 || (skipFirst && i == 0) || isBlank(old[i]) || isBlank(file[i]) {
			continue
		}
		po, fo := ws(old[i]), leadingWS(file[i])
		if po == fo {
			continue // this line says nothing about the frame
		}
		switch pn := ws(nl); {
		case repeats || pn == po:
			oldVotes++
		case pn == fo:
			fileVotes++
		}
	}
	o, f := old, file
	if skipFirst && len(o) > 0 {
		o, f = o[1:], f[1:]
	}
	uniform := uniformShift(o, f, fs)
	switch {
	case oldVotes > 0 && fileVotes == 0:
		if uniform {
			return frameShift, ""
		}
		return frameRefuse, "matched only with indentation ignored, and the old lines are off the file's indentation by different amounts, so where the new lines go is a guess; resend the block with the file's exact indentation"
	case fileVotes > 0 && oldVotes == 0:
		return frameLiteral, ""
	case oldVotes > 0 && fileVotes > 0:
		return frameRefuse, "matched only with indentation ignored, and some new lines follow the file's indentation while others follow the old lines'; resend the block with the file's exact indentation"
	}
	// No line says: compare the smallest indentation of the changed lines.
	minWS := func(ls []string, conv bool) (int, bool) {
		n, ok := 0, false
		for k, l := range ls {
			if isBlank(l) || (skipFirst && k == 0) {
				continue
			}
			w := len(leadingWS(l))
			if conv {
				w = len(ws(l))
			}
			if !ok || w < n {
				n, ok = w, true
			}
		}
		return n, ok
	}
	var changed []string
	for j, nl := range nw {
		if j >= len(mapping) || mapping[j] < 0 {
			changed = append(changed, nl)
		}
	}
	mNew, okNew := minWS(changed, true)
	mOld, _ := minWS(old, true)
	mFile, _ := minWS(file, false)
	switch {
	case !okNew || mOld == mFile:
		return frameShift, "" // nothing to move, or the shift is only tabs against spaces
	case mNew == mOld && uniform:
		return frameShift, ""
	case mNew == mFile:
		return frameLiteral, ""
	}
	return frameRefuse, "matched only with indentation ignored, and the new lines' indentation fits neither the file nor the old lines; resend the block with the file's exact indentation"
}

// editedLine reports whether new line nl is old line o edited in a way that
// places it by itself: o differs from the file's line f only in whitespace,
// and nl keeps o's indentation or puts text in front of o.
func editedLine(o, nl, f string) bool {
	if strings.TrimSpace(f) != strings.TrimSpace(o) {
		return false
	}
	if leadingWS(o) == leadingWS(nl) {
		return true
	}
	x, ok := strings.CutSuffix(nl, o)
	return ok && strings.TrimSpace(x) != "" && !isBlank(o)
}
