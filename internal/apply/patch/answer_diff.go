package patch

import (
	"fmt"
	"strconv"
	"strings"
)

// diffStart finds the first line at or after i that starts a file's diff:
// `diff --git`, or `---` followed by `+++`; -1 when there is none.
func diffStart(body []string, i int) int {
	for ; i < len(body); i++ {
		l := body[i]
		if strings.HasPrefix(l, "diff --git ") {
			return i
		}
		if strings.HasPrefix(l, "--- ") && i+1 < len(body) && strings.HasPrefix(body[i+1], "+++ ") {
			return i
		}
	}
	return -1
}

// diffRegionEnd is where a diff that starts at from ends in text that goes
// on with prose: at a blank line followed by a line that cannot be part of a
// diff. Hunk counts do not end it (LLMs miscount), and a line without a
// diff prefix before any blank line stays in (a context line that lost its
// space): cutting a hunk short would apply half of it.
func diffRegionEnd(lines []string, from int) int {
	for i := from + 1; i < len(lines); i++ {
		if lines[i] != "" {
			continue
		}
		j := i + 1
		for j < len(lines) && lines[j] == "" {
			j++
		}
		if j == len(lines) || !diffLike(lines[j]) {
			return trimBlankEnd(lines, from, i)
		}
		i = j - 1
	}
	return trimBlankEnd(lines, from, len(lines))
}

// diffLike reports whether a line can be part of a diff.
func diffLike(l string) bool {
	if l == "" {
		return true
	}
	switch l[0] {
	case ' ', '+', '-', '\\':
		return true
	}
	return strings.HasPrefix(l, "@@") || strings.HasPrefix(l, "diff --git ") || isDiffMeta(l)
}

func trimBlankEnd(lines []string, from, to int) int {
	for to > from && lines[to-1] == "" {
		to--
	}
	return to
}

// gitSection is one file's part of a (git) diff.
type gitSection struct {
	from, to             int // body lines [from, to)
	oldPath, newPath     string
	renameFrom, renameTo string
	newFile, deleted     bool
	binary               bool
	hunks                int
}

// gitSections cuts a diff region into one section per file, reading git's
// extended headers (new/deleted file mode, rename from/to, binary).
func gitSections(body []string, from, to int) []gitSection {
	var out []gitSection
	cur := -1
	start := func(i int) {
		out = append(out, gitSection{from: i, to: to})
		if cur >= 0 {
			out[cur].to = i
		}
		cur = len(out) - 1
	}
	inHunk := false
	for i := from; i < to; i++ {
		l := body[i]
		switch {
		case strings.HasPrefix(l, "diff --git "):
			start(i)
			inHunk = false
			out[cur].oldPath, out[cur].newPath = gitHeaderPaths(l[len("diff --git "):])
		case !inHunk && strings.HasPrefix(l, "--- ") && i+1 < to && strings.HasPrefix(body[i+1], "+++ "):
			if cur < 0 || out[cur].hunks > 0 {
				start(i)
			}
			out[cur].oldPath, out[cur].newPath = diffPath(l[4:]), diffPath(body[i+1][4:])
			i++
		case strings.HasPrefix(l, "@@"):
			if cur < 0 {
				start(i)
			}
			out[cur].hunks++
			inHunk = true
		case cur >= 0 && !inHunk:
			s := &out[cur]
			switch {
			case strings.HasPrefix(l, "new file mode"):
				s.newFile = true
			case strings.HasPrefix(l, "deleted file mode"):
				s.deleted = true
			case strings.HasPrefix(l, "rename from "):
				s.renameFrom = diffPath(strings.TrimPrefix(l, "rename from "))
			case strings.HasPrefix(l, "rename to "):
				s.renameTo = diffPath(strings.TrimPrefix(l, "rename to "))
			case strings.HasPrefix(l, "Binary files "), strings.HasPrefix(l, "GIT binary patch"):
				s.binary = true
			}
		}
	}
	return out
}

// gitHeaderPaths reads `a/x b/y` (or quoted names) from a diff --git line.
func gitHeaderPaths(s string) (string, string) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, `"`) {
		if a, rest, ok := cutQuoted(s); ok {
			b := strings.TrimSpace(rest)
			if bq, _, ok := cutQuoted(b); ok {
				b = bq
			}
			return diffPath(a), diffPath(b)
		}
	}
	// a/x b/x with the same name: split where " b/" starts the second half.
	if i := strings.Index(s, " b/"); i > 0 {
		return diffPath(s[:i]), diffPath(s[i+1:])
	}
	f := strings.Fields(s)
	if len(f) == 2 {
		return diffPath(f[0]), diffPath(f[1])
	}
	return "", ""
}

func cutQuoted(s string) (string, string, bool) {
	for i := 1; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == '"' {
			u, err := strconv.Unquote(s[:i+1])
			if err != nil {
				return "", "", false
			}
			return u, s[i+1:], true
		}
	}
	return "", "", false
}

// diffOps reads every unified or git diff in the answer: fenced ```diff
// blocks and diffs pasted bare, one operation per file.
func (a *answerText) diffOps() ([]Operation, int, error) {
	var ops []Operation
	first := -1
	for _, s := range a.segments() {
		if s.fenced && bodyKind(s.body) != FormatDiff {
			continue
		}
		for i := diffStart(s.body, 0); i >= 0; i = diffStart(s.body, i) {
			end := len(s.body)
			if !s.fenced {
				end = diffRegionEnd(s.body, i)
				// A hunk header after the text that ended the diff means the diff went
				// on: its lines without a prefix are not prose, and applying the part
				// before them would apply half of it.
				next := diffStart(s.body, end)
				if next < 0 {
					next = len(s.body)
				}
				for k := end; k < next; k++ {
					if strings.HasPrefix(s.body[k], "@@") {
						return nil, 0, decisiveError{&FormatError{Format: FormatDiff, Reason: fmt.Sprintf("the diff at line %d is broken by line %d (%q), which is not a diff line, and goes on at line %d; put the whole diff in a ```diff block", s.line(i)+1, s.line(end)+2, clip(firstNonBlankFrom(s.body, end)), s.line(k)+1)}}
					}
				}
			}
			fo, err := a.regionDiffOps(s, i, end)
			if err != nil {
				return nil, 0, err
			}
			if first < 0 {
				first = s.line(i) + 1
			}
			ops = append(ops, fo...)
			if s.fenced {
				a.useFence(s)
			} else {
				a.use(s.line(i), s.line(end))
			}
			if end <= i {
				break
			}
			i = end
		}
		// A fenced block that names its file and holds hunks without ---/+++ headers.
		if s.fenced && diffStart(s.body, 0) < 0 {
			if p := pathFromInfo(s.info); p != "" && startsWithHunk(s.body) {
				st := inferLines(s.body)
				ops = append(ops, Operation{Kind: OpWrite, Path: p, Strategy: st, Content: s.sub(0, len(s.body))})
				if first < 0 {
					first = s.open + 1
				}
				a.useFence(s)
			}
		}
	}
	return ops, first, nil
}

// regionDiffOps turns one diff region into operations, one file at a time.
func (a *answerText) regionDiffOps(s segment, from, to int) ([]Operation, error) {
	var ops []Operation
	for _, g := range gitSections(s.body, from, to) {
		at := s.line(g.from) + 1
		if g.binary {
			return nil, decisiveError{&FormatError{Format: FormatDiff, Reason: fmt.Sprintf("line %d: a binary diff cannot be applied from text; copy the file instead", at)}}
		}
		oldP, newP := cleanPath(g.oldPath), cleanPath(g.newPath)
		body := s.sub(g.from, g.to)
		st := inferLines(s.body[g.from:g.to])
		if st != Unified && st != NewUnified {
			st = Unified
		}
		switch {
		case g.deleted || g.newPath == "/dev/null":
			if !validPath(oldP) || g.oldPath == "/dev/null" {
				return nil, decisiveError{&FormatError{Format: FormatDiff, Reason: fmt.Sprintf("line %d: the diff deletes a file but names none", at)}}
			}
			ops = append(ops, Operation{Kind: OpDelete, Path: oldP})
		case g.renameFrom != "" && g.renameTo != "":
			from, to := cleanPath(g.renameFrom), cleanPath(g.renameTo)
			if !validPath(from) || !validPath(to) {
				return nil, decisiveError{&FormatError{Format: FormatDiff, Reason: fmt.Sprintf("line %d: rename from %q to %q names no file", at, g.renameFrom, g.renameTo)}}
			}
			ops = append(ops, Operation{Kind: OpRename, From: from, To: to})
			if g.hunks > 0 {
				ops = append(ops, Operation{Kind: OpWrite, Path: cleanPath(g.renameTo), Strategy: st, Content: body})
			}
		case g.hunks == 0:
			if g.newFile && validPath(newP) {
				ops = append(ops, Operation{Kind: OpWrite, Path: newP, Strategy: Replace, Content: "", Create: true})
				continue
			}
			a.ignored = append(a.ignored, IgnoredBlock{Line: at, Header: clip(s.body[g.from]), Reason: "a diff section without hunks (a mode change?) changes no content"})
		default:
			p := newP
			if !validPath(p) || g.newPath == "" {
				p = oldP
			}
			if !validPath(p) || p == "/dev/null" {
				return nil, decisiveError{&FormatError{Format: FormatDiff, Reason: fmt.Sprintf("line %d: the diff names no file (--- a/path and +++ b/path)", at)}}
			}
			ops = append(ops, Operation{Kind: OpWrite, Path: p, Strategy: st, Content: body, Create: g.newFile || g.oldPath == "/dev/null"})
		}
	}
	return ops, nil
}

func firstNonBlankFrom(ls []string, i int) string {
	for ; i < len(ls); i++ {
		if ls[i] != "" {
			return ls[i]
		}
	}
	return ""
}
