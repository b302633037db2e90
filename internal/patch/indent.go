package patch

import (
	"math"
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
	return style{tabs: tabs > spaces, unit: unitOf(ws), known: tabs+spaces > 0}
}

func unitOf(ws []int) int {
	if len(ws) == 0 {
		return 4
	}
	for _, u := range []int{8, 4, 2} {
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

// reindent moves a new line by the shift the match found between the patch's
// reference line (pRef) and the file's (fRef), converting tabs and spaces when
// the patch and the file indent differently.
func reindent(line, pRef, fRef string, ps, fs style) string {
	if isBlank(line) {
		return ""
	}
	ind := leadingWS(line)
	body := line[len(ind):]
	if !ps.known || !fs.known || ps.tabs == fs.tabs {
		if strings.HasPrefix(ind, pRef) {
			return fRef + ind[len(pRef):] + body
		}
		cut := len(pRef) - len(ind)
		if cut >= len(fRef) {
			return body
		}
		return fRef[:len(fRef)-cut] + body
	}
	lv := levels(fRef, fs.unit) + levels(ind, ps.unit) - levels(pRef, ps.unit)
	if lv < 0 {
		lv = 0
	}
	if fs.tabs {
		return strings.Repeat("\t", int(math.Round(lv))) + body
	}
	return strings.Repeat(" ", int(math.Round(lv*float64(fs.unit)))) + body
}

func levels(ind string, unit int) float64 {
	var lv float64
	for _, c := range ind {
		if c == '\t' {
			lv++
		} else {
			lv += 1 / float64(unit)
		}
	}
	return lv
}

// indentUnit guesses the width of one indentation level in space-indented lines.
func indentUnit(lines []string) int { return detectStyle(lines).unit }
