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
		return ""
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
