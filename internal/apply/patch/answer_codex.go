package patch

import (
	"errors"
	"fmt"
	"strings"
)

// codexOps reads codex `*** Begin Patch` … `*** End Patch` envelopes, fenced
// or bare (a shell heredoc around one is skipped as prose).
func (a *answerText) codexOps() ([]Operation, int, error) {
	var ops []Operation
	first := -1
	for _, s := range a.segments() {
		if s.fenced && !isEnvelope(s.body) {
			continue
		}
		for i := 0; i < len(s.body); {
			from, to := envelopeRegion(s.body, i, s.fenced)
			if from < 0 {
				break
			}
			fo, err := envelopeOperations(s.body[from:to], s, from)
			if err != nil {
				return nil, 0, err
			}
			if first < 0 {
				first = s.line(from) + 1
			}
			ops = append(ops, fo...)
			a.use(s.line(from), s.line(to))
			if s.fenced {
				a.useFence(s)
			}
			i = to
		}
	}
	return ops, first, nil
}

// envelopeRegion finds the next envelope at or after i: from *** Begin Patch
// through *** End Patch (to the end when it never ends: a cut-off answer). A
// fenced block may leave out *** Begin Patch.
func envelopeRegion(body []string, i int, fenced bool) (int, int) {
	from := -1
	for j := i; j < len(body); j++ {
		m, _, ok := envMarker(body[j])
		if !ok {
			continue
		}
		if m == "*** Begin Patch" || (fenced && from < 0 && m != "*** End Patch" && m != "*** Move to:") {
			from = j
			break
		}
	}
	if from < 0 {
		return -1, -1
	}
	for j := from + 1; j < len(body); j++ {
		if m, _, ok := envMarker(body[j]); ok && m == "*** End Patch" {
			return from, j + 1
		}
		if m, _, ok := envMarker(body[j]); ok && m == "*** Begin Patch" {
			return from, j // a second envelope: the first never ended
		}
	}
	return from, len(body)
}

// envelopeOperations parses one envelope into operations with codex's
// semantics: Add writes a new file, Delete removes one, Update patches one,
// and Move to renames it, replacing a file already there.
func envelopeOperations(lines []string, s segment, from int) ([]Operation, error) {
	files, err := parseEnvelope(lines)
	if errors.Is(err, errCutOff) {
		return nil, &CutOffError{Reason: fmt.Sprintf("the codex patch at line %d has *** Begin Patch but no *** End Patch", s.line(from)+1)}
	}
	if err != nil {
		return nil, decisiveError{&FormatError{Format: FormatCodex, Reason: fmt.Sprintf("the patch at line %d: %v", s.line(from)+1, err)}}
	}
	crlf := s.crlfBody(from, from+len(lines))
	var ops []Operation
	for _, ef := range files {
		p := cleanPath(ef.path)
		if !validPath(p) {
			return nil, decisiveError{&FormatError{Format: FormatCodex, Reason: fmt.Sprintf("a section at line %d names no file (%q)", s.line(from)+1, ef.path)}}
		}
		switch ef.kind {
		case "add":
			content := joinLines(ef.lines)
			if crlf {
				content = toCRLF(content)
			}
			ops = append(ops, Operation{Kind: OpWrite, Path: p, Strategy: Replace, Content: content, Create: true})
		case "delete":
			ops = append(ops, Operation{Kind: OpDelete, Path: p})
		case "update":
			if strings.TrimSpace(strings.Join(ef.lines, "")) != "" {
				ops = append(ops, Operation{Kind: OpWrite, Path: p, Strategy: ApplyPatch, Content: joinLines(ef.lines)})
			}
			if ef.moveTo != "" {
				to := cleanPath(ef.moveTo)
				if !validPath(to) {
					return nil, decisiveError{&FormatError{Format: FormatCodex, Reason: fmt.Sprintf("*** Move to: %q names no file", ef.moveTo)}}
				}
				ops = append(ops, Operation{Kind: OpRename, From: p, To: to, Overwrite: true})
			}
		}
	}
	return ops, nil
}
