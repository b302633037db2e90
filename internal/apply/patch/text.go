package patch

import "strings"

const bom = "\ufeff"

// doc is a file split into lines, remembering each line's own ending so
// untouched lines are written back byte for byte.
type doc struct {
	bom   bool
	lines []string
	eols  []string // "\n", "\r\n", or "" for a last line without newline
	eol   string   // dominant ending, used for new lines
	final bool     // the file ends with a newline (or is empty)
}

func splitDoc(s string) doc {
	d := doc{eol: "\n", final: true}
	if strings.HasPrefix(s, bom) {
		d.bom = true
		s = s[len(bom):]
	}
	if s == "" {
		return d
	}
	crlf, lf := 0, 0
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			d.lines = append(d.lines, s)
			d.eols = append(d.eols, "")
			d.final = false
			break
		}
		line := s[:i]
		if strings.HasSuffix(line, "\r") {
			d.lines = append(d.lines, line[:len(line)-1])
			d.eols = append(d.eols, "\r\n")
			crlf++
		} else {
			d.lines = append(d.lines, line)
			d.eols = append(d.eols, "\n")
			lf++
		}
		s = s[i+1:]
	}
	if crlf > lf {
		d.eol = "\r\n"
	}
	return d
}

// mixed reports whether the file uses both LF and CRLF line endings.
func (d doc) mixed() bool {
	lf, crlf := false, false
	for _, e := range d.eols {
		lf = lf || e == "\n"
		crlf = crlf || e == "\r\n"
		if lf && crlf {
			return true
		}
	}
	return false
}

// normalizeEOL gives every line the file's dominant ending.
func (d *doc) normalizeEOL() {
	for i, e := range d.eols {
		if e != "" {
			d.eols[i] = d.eol
		}
	}
}

// render joins lines; eols[i] == "" for a non-final line means "use the dominant ending".
func (d doc) render(lines, eols []string) string {
	var n int
	for _, l := range lines {
		n += len(l) + 2
	}
	var b strings.Builder
	b.Grow(n + 3)
	if d.bom {
		b.WriteString(bom)
	}
	for i, l := range lines {
		b.WriteString(l)
		last := i == len(lines)-1
		if last && !d.final {
			break
		}
		e := eols[i]
		if e == "" {
			e = d.eol
		}
		b.WriteString(e)
	}
	return b.String()
}

// crlfText reports whether most of s's lines end in CRLF.
func crlfText(s string) bool {
	crlf := strings.Count(s, "\r\n")
	return crlf > 0 && crlf*2 > strings.Count(s, "\n")
}

// patchLines splits patch text into lines, dropping CR so CRLF responses work.
func patchLines(s string) []string {
	s = strings.TrimPrefix(s, bom)
	if s == "" {
		return nil
	}
	ls := strings.Split(s, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	for i, l := range ls {
		ls[i] = strings.TrimSuffix(l, "\r")
	}
	return ls
}

func leadingWS(s string) string {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return s[:i]
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// collapseWS trims and collapses every whitespace run to one space.
func collapseWS(s string) string {
	s = strings.TrimSpace(s)
	if !strings.ContainsAny(s, "\t\r\v\f") && !strings.Contains(s, "  ") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteByte(c)
	}
	return b.String()
}

// squash removes all whitespace; it is the key for anchoring damaged lines.
func squash(s string) string {
	if !strings.ContainsAny(s, " \t\r\v\f") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' {
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
