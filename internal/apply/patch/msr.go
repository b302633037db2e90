package patch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// srBlock is one SEARCH/REPLACE block.
type srBlock struct {
	search, replace []string
	start, end      int // 1-based :start_line: / :end_line:, 0 when absent
}

type markerKind int

const (
	mkNone markerKind = iota
	mkSearch
	mkSep
	mkReplace
	mkBad // looks like a marker but is malformed
)

// classify recognises the marker variants LLMs produce: exactly seven marker
// characters and a space (`<<<<<<< SEARCH`, Roo's `SEARCH>`), and Cline's
// `------- SEARCH` / `+++++++ REPLACE`. A line that is almost a marker (another
// count, no space, text after =======) is mkBad: guessing what it meant has
// applied wrong edits, so the patch is refused naming that line.
func classify(line string) (markerKind, string) {
	t := strings.TrimSpace(line)
	if t == "" {
		return mkNone, ""
	}
	switch t[0] {
	case '<':
		n := countRun(t, '<')
		rest := t[n:]
		word := strings.TrimSpace(rest)
		if n == 7 && (rest == " SEARCH" || rest == " SEARCH>") {
			return mkSearch, ""
		}
		if n >= 7 || (n >= 5 && (word == "SEARCH" || word == "SEARCH>")) {
			return mkBad, t
		}
	case '=':
		n := countRun(t, '=')
		switch {
		case n == 7 && n == len(t):
			return mkSep, ""
		case n == 7 && t[n] != '=':
			return mkBad, t // text after the separator
		case n >= 5 && n <= 9 && n == len(t):
			return mkBad, t // a separator is exactly seven '='
		}
	case '>':
		n := countRun(t, '>')
		rest := t[n:]
		word := strings.TrimSpace(rest)
		if n == 7 && (rest == " REPLACE" || rest == " REPLACE<") {
			return mkReplace, ""
		}
		if n >= 7 || (n >= 5 && (word == "REPLACE" || word == "REPLACE<")) {
			return mkBad, t
		}
	case '-':
		n := countRun(t, '-')
		if n >= 3 && (t[n:] == " SEARCH" || t[n:] == " SEARCH>") {
			return mkSearch, ""
		}
		if n >= 3 && (t[n:] == "SEARCH" || strings.TrimSpace(t[n:]) == "SEARCH") {
			return mkBad, t
		}
	case '+':
		n := countRun(t, '+')
		if n >= 3 && (t[n:] == " REPLACE" || t[n:] == " REPLACE<") {
			return mkReplace, ""
		}
		if n >= 3 && strings.TrimSpace(t[n:]) == "REPLACE" {
			return mkBad, t
		}
	}
	return mkNone, ""
}

func countRun(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// unescape turns Roo's escaped markers (`\=======`, `\:start_line:`) back into content.
func unescape(line string) string {
	t := strings.TrimLeft(line, " \t")
	if !strings.HasPrefix(t, `\`) {
		return line
	}
	rest := t[1:]
	k, _ := classify(rest)
	if k != mkNone || strings.HasPrefix(rest, ":start_line:") || strings.HasPrefix(rest, ":end_line:") || strings.HasPrefix(strings.TrimSpace(rest), "-------") {
		return line[:len(line)-len(t)] + rest
	}
	return line
}

func lineMarker(t string) (string, int, bool) {
	for _, name := range []string{":start_line:", ":end_line:"} {
		if strings.HasPrefix(t, name) {
			v := strings.TrimSpace(strings.TrimPrefix(t, name))
			v = strings.TrimPrefix(v, "=")
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return name, -1, true
			}
			return name, n, true
		}
	}
	return "", 0, false
}

// parseSR reads SEARCH/REPLACE blocks and checks the marker sequence; errors
// name the line and the marker expected so an LLM can repair its output.
func parseSR(lines []string) ([]srBlock, error) { return parseSRAt(lines, 0) }

// parseSRAt is parseSR for lines that start after line base of a larger
// text: errors name the line of that text.
func parseSRAt(lines []string, base int) ([]srBlock, error) {
	const (
		outside = iota
		header
		search
		replace
	)
	state := outside
	var blocks []srBlock
	var cur srBlock
	stray, inside := 0, 0 // non-blank lines outside and inside blocks
	for i, l := range lines {
		no := base + i + 1
		k, bad := classify(l)
		if state != outside {
			inside++
		} else if k == mkNone && !isBlank(l) {
			stray++
		}
		switch state {
		case outside:
			switch k {
			case mkSearch:
				state = header
				cur = srBlock{}
			case mkSep:
				return nil, fmt.Errorf("line %d: marker ======= before any <<<<<<< SEARCH; every block must start with <<<<<<< SEARCH", no)
			case mkReplace:
				return nil, fmt.Errorf("line %d: marker >>>>>>> REPLACE before any <<<<<<< SEARCH", no)
			case mkBad:
				return nil, fmt.Errorf("line %d: malformed marker %q; use exactly <<<<<<< SEARCH", no, bad)
			}
			continue
		case header:
			t := strings.TrimSpace(l)
			if name, v, ok := lineMarker(t); ok {
				if v < 0 {
					return nil, fmt.Errorf("line %d: %s needs a line number, e.g. %s 12", no, name, name)
				}
				if name == ":start_line:" {
					cur.start = v
				} else {
					cur.end = v
				}
				continue
			}
			if k == mkNone && len(t) >= 5 && countRun(t, '-') == len(t) {
				state = search
				continue
			}
			state = search
			fallthrough
		case search:
			switch k {
			case mkSep:
				state = replace
				continue
			case mkSearch:
				return nil, fmt.Errorf("line %d: <<<<<<< SEARCH inside a SEARCH section; close the previous block with ======= and >>>>>>> REPLACE", no)
			case mkReplace:
				return nil, fmt.Errorf("line %d: >>>>>>> REPLACE before =======; separate SEARCH from REPLACE with a ======= line", no)
			case mkBad:
				return nil, fmt.Errorf("line %d: marker %q inside a SEARCH section; expected =======", no, bad)
			}
			cur.search = append(cur.search, unescape(l))
		case replace:
			switch k {
			case mkReplace:
				blocks = append(blocks, cur)
				state = outside
				continue
			case mkSep:
				return nil, fmt.Errorf("line %d: a second ======= in one block; escape it as \\======= if it is content", no)
			case mkSearch:
				return nil, fmt.Errorf("line %d: <<<<<<< SEARCH before >>>>>>> REPLACE; close the previous block first", no)
			case mkBad:
				return nil, fmt.Errorf("line %d: marker %q inside a REPLACE section; expected >>>>>>> REPLACE", no, bad)
			}
			if name, _, ok := lineMarker(strings.TrimSpace(l)); ok {
				return nil, fmt.Errorf("line %d: %s in a REPLACE section; line markers belong right after <<<<<<< SEARCH (escape as \\%s if it is content)", no, name, name)
			}
			cur.replace = append(cur.replace, unescape(l))
		}
	}
	switch state {
	case header, search:
		return nil, fmt.Errorf("%w: the last block ends inside its SEARCH section, without ======= and >>>>>>> REPLACE", errCutOff)
	case replace:
		return nil, fmt.Errorf("%w: the last block ends without >>>>>>> REPLACE", errCutOff)
	}
	// Mostly text outside the blocks is a whole file sent under the wrong
	// strategy (its own text may contain markers); applying its blocks would
	// apply something else than the answer meant.
	if len(blocks) > 0 && stray >= 10 && stray > 2*inside {
		return nil, fmt.Errorf("%d lines are outside any SEARCH/REPLACE block, more than inside them: this looks like a whole file, not a patch; send the whole file without a strategy, or only SEARCH/REPLACE blocks", stray)
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("no SEARCH/REPLACE blocks found; expected <<<<<<< SEARCH, the old lines, =======, the new lines, >>>>>>> REPLACE")
	}
	for i := range blocks {
		b := &blocks[i]
		// Numbers copied from a numbered file view go only when every SEARCH line
		// has one, and REPLACE is numbered throughout or not at all.
		sAll, _ := numbered(b.search)
		rAll, rSome := numbered(b.replace)
		if sAll && (rAll || !rSome) {
			b.search = stripLineNumbers(b.search)
			if rAll {
				b.replace = stripLineNumbers(b.replace)
			}
		}
	}
	return blocks, nil
}

// numbered reports whether every (all) or any (some) non-blank line has a `12 | ` prefix.
func numbered(ls []string) (all, some bool) {
	all = true
	seen := 0
	for _, l := range ls {
		if isBlank(l) {
			continue
		}
		seen++
		if _, ok := numberPrefix(l); ok {
			some = true
		} else {
			all = false
		}
	}
	return all && seen > 0, some
}

// stripLineNumbers removes `12 | ` prefixes.
func stripLineNumbers(ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		if n, ok := numberPrefix(l); ok {
			out[i] = l[n:]
		} else {
			out[i] = l
		}
	}
	return out
}

func numberPrefix(l string) (int, bool) {
	i := 0
	for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
		i++
	}
	d := i
	for i < len(l) && isDigit(l[i]) {
		i++
	}
	if i == d {
		return 0, false
	}
	for i < len(l) && l[i] == ' ' {
		i++
	}
	if i >= len(l) || l[i] != '|' {
		return 0, false
	}
	i++
	if i < len(l) && l[i] == ' ' {
		i++
	}
	return i, true
}

func applySR(d doc, body string, opts Options) (Result, error) {
	blocks, err := parseSR(patchLines(body))
	if errors.Is(err, errCutOff) {
		return Result{}, cutOff(MultiSearchReplace, strings.TrimPrefix(err.Error(), errCutOff.Error()+": "))
	}
	if err != nil {
		return Result{}, formatError(MultiSearchReplace, "invalid SEARCH/REPLACE patch: %v", err)
	}
	edits := make([]edit, len(blocks))
	for i, b := range blocks {
		e := edit{idx: i + 1, old: b.search, new: b.replace, hint: -1, hintEnd: -1, insertAt: -1}
		// As a hunk (unchanged lines are context), a block whose SEARCH does not
		// match whole can still be placed change by change, like a unified hunk.
		e.hunk, e.split = srHunk(b.search, b.replace), true
		if len(e.old) == 1 && isBlank(e.old[0]) && len(b.search) == 1 {
			e.old = nil // a lone blank SEARCH line is an empty SEARCH
		}
		if b.start > 0 {
			e.hint = b.start - 1
			if len(e.old) == 0 {
				e.insertAt = b.start - 1
			}
		}
		if b.end > 0 && b.end >= b.start {
			e.hintEnd = b.end - 1
		}
		edits[i] = e
	}
	// SEARCH/REPLACE is a text edit, as in Roo Code and diff-apply: a file
	// with mixed line endings is a CRLF file that picked up LF lines from
	// earlier patches, and comes back in CRLF.
	if d.mixed() {
		d.eols = append([]string(nil), d.eols...)
		d.eol = "\r\n"
		d.normalizeEOL()
	}
	en := &engine{s: MultiSearchReplace, d: d, opts: opts, seqOK: true}
	res, err := en.run(edits)
	var ae *ApplyError
	if err != nil && errors.As(err, &ae) && !ae.AlreadyApplied {
		// Agent tools (Cline, Claude Code) send SEARCH text that is part of a
		// line: when the blocks do not all match as lines, they may still all
		// match as unique substrings (inside their line range, when given).
		if r2, ok := applySRAsEdits(d, blocks); ok {
			return r2, nil
		}
	}
	return res, err
}

// applySRAsEdits applies every block as an old_string/new_string edit, or
// reports false when any block does not apply that way.
func applySRAsEdits(d doc, blocks []srBlock) (Result, bool) {
	content := d.render(d.lines, d.eols)
	if len(d.lines) == 0 {
		return Result{}, false
	}
	var out []BlockResult
	for i, b := range blocks {
		if len(b.search) == 0 || isBlank(strings.Join(b.search, "")) {
			return Result{}, false
		}
		e := Edit{OldString: strings.Join(b.search, "\n"), NewString: strings.Join(b.replace, "\n")}
		if e.OldString == e.NewString {
			return Result{}, false // refused by the line engine already
		}
		lo, hi := 0, -1
		if b.start > 0 {
			lo, hi = b.start, b.start
			if b.end >= b.start {
				hi = b.end
			}
		}
		next, br, err := applyOneEditIn(content, e, lo, hi)
		if err != nil {
			return Result{}, false
		}
		br.Index = i + 1
		out = append(out, br)
		content = next
	}
	return Result{Content: content, Strategy: MultiSearchReplace, Blocks: out}, true
}

// srHunk turns a SEARCH/REPLACE pair into hunk lines: lines REPLACE repeats
// unchanged are context, the rest are removed and added lines.
func srHunk(search, replace []string) []hline {
	m := lcsMap(search, replace)
	var out []hline
	i := 0
	for j, r := range replace {
		if k := m[j]; k >= 0 {
			for ; i < k; i++ {
				out = append(out, hline{'-', search[i]})
			}
			out = append(out, hline{' ', r})
			i = k + 1
			continue
		}
		out = append(out, hline{'+', r})
	}
	for ; i < len(search); i++ {
		out = append(out, hline{'-', search[i]})
	}
	return out
}
