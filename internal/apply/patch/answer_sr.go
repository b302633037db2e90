package patch

import (
	"fmt"
	"strings"
)

// srOps reads SEARCH/REPLACE blocks: aider's (the path on the line before
// the fence, or first in it), Cline's and Roo's (`<path>` before `<diff>`,
// `------- SEARCH`, `:start_line:`), several files in one answer. A block
// without a path of its own belongs to the file of the block before it.
func (a *answerText) srOps() ([]Operation, int, error) {
	var ops []Operation
	first := -1
	cur := ""   // path of the previous block
	xmlAt := -1 // last answer line a <path> was read from
	for _, s := range a.segments() {
		if s.fenced && bodyKind(s.body) != FormatSearchReplace {
			continue
		}
		infoPath := ""
		if s.fenced {
			infoPath = pathFromInfo(s.info)
		}
		inBlock := false
		blockFrom := -1
		pending := -1 // body line of the first block of the current run
		lastEnd := -1 // body line after the run's last >>>>>>> REPLACE
		runPath := ""
		flush := func() {
			if pending < 0 || lastEnd <= pending {
				return
			}
			ops = append(ops, Operation{Kind: OpWrite, Path: runPath, Strategy: MultiSearchReplace, Content: s.sub(pending, lastEnd)})
			pending = -1
		}
		for i, l := range s.body {
			k, bad := classify(l)
			if !inBlock {
				if t := strings.TrimSpace(l); strings.HasPrefix(t, "<path>") {
					if p := pathFromLine(t); p != "" {
						flush()
						cur, xmlAt = p, s.line(i)
					}
					continue
				}
				switch k {
				case mkSearch:
				case mkBad:
					if srWord(bad) {
						return nil, 0, decisiveError{&FormatError{Format: FormatSearchReplace, Reason: fmt.Sprintf("line %d: malformed marker %q; use exactly <<<<<<< SEARCH, ======= and >>>>>>> REPLACE", s.line(i)+1, bad)}}
					}
					continue
				case mkReplace:
					return nil, 0, decisiveError{&FormatError{Format: FormatSearchReplace, Reason: fmt.Sprintf("line %d: >>>>>>> REPLACE before any <<<<<<< SEARCH", s.line(i)+1)}}
				default:
					continue
				}
				p := a.srPath(s, i, infoPath, xmlAt)
				if p == "" {
					p = cur
				}
				if p == "" {
					return nil, 0, decisiveError{&FormatError{Format: FormatSearchReplace, Reason: fmt.Sprintf("the block at line %d names no file; put the file's path on the line before it (or before its code fence)", s.line(i)+1)}}
				}
				if p != runPath || pending < 0 {
					flush()
					pending, runPath = i, p
				}
				cur = p
				inBlock, blockFrom = true, i
				if first < 0 {
					first = s.line(i) + 1
				}
				continue
			}
			if k == mkReplace {
				// Validate the block with answer line numbers; its text is read again by Apply.
				if _, err := parseSRAt(s.body[blockFrom:i+1], s.line(blockFrom)); err != nil {
					return nil, 0, decisiveError{&FormatError{Format: FormatSearchReplace, Reason: err.Error()}}
				}
				a.use(s.line(blockFrom), s.line(i+1))
				inBlock, lastEnd = false, i+1
			}
		}
		if inBlock {
			return nil, 0, &CutOffError{Reason: fmt.Sprintf("the SEARCH/REPLACE block at line %d has no >>>>>>> REPLACE", s.line(blockFrom)+1)}
		}
		flush()
		if s.fenced && lastEnd >= 0 {
			a.useFence(s)
		}
	}
	return ops, first, nil
}

// srWord reports whether a malformed marker line is about SEARCH/REPLACE (a
// `<<<<<<< HEAD` conflict marker in prose is not this format's business).
func srWord(bad string) bool {
	u := strings.ToUpper(bad)
	return strings.Contains(u, "SEARCH") || strings.Contains(u, "REPLACE") || strings.Trim(bad, "=") == ""
}

// srPath finds the path of a block starting at body line i of s: a path line
// just above the marker, the fence's info string, a path as the fence's first
// line, the line above the fence (aider), or a <path> read since the last block.
func (a *answerText) srPath(s segment, i int, infoPath string, xmlAt int) string {
	if p, _ := a.pathBefore(s.line(i), s.line(0), 2); p != "" {
		return p
	}
	if !s.fenced {
		return ""
	}
	if infoPath != "" {
		return infoPath
	}
	if p, _ := a.pathBefore(s.open, 0, 2); p != "" && s.open > xmlAt {
		return p
	}
	return ""
}
