package patch

import (
	"errors"
	"fmt"
	"strings"
)

// envFile is one file section of a codex `*** Begin Patch` envelope.
type envFile struct {
	kind   string // add, delete, update
	path   string
	moveTo string
	lines  []string // add: file lines (without '+'); update: the section
}

func envMarker(l string) (string, string, bool) {
	t := strings.TrimSpace(l)
	for _, m := range []string{"*** Add File:", "*** Delete File:", "*** Update File:", "*** Move to:"} {
		if strings.HasPrefix(t, m) {
			return m, strings.TrimSpace(t[len(m):]), true
		}
	}
	switch t {
	case "*** Begin Patch", "*** End Patch":
		return t, "", true
	}
	return "", "", false
}

func isEnvelope(lines []string) bool {
	for _, l := range lines {
		if m, _, ok := envMarker(l); ok && m != "*** Move to:" && m != "*** End Patch" {
			return true
		}
	}
	return false
}

// parseEnvelope reads the codex apply_patch format leniently (marker
// whitespace, no *** Begin Patch); *** Begin Patch without *** End Patch is a
// cut-off answer.
func parseEnvelope(lines []string) ([]envFile, error) {
	var files []envFile
	cur := -1
	begun, ended := false, false
	for i, l := range lines {
		m, arg, ok := envMarker(l)
		if !ok {
			if cur < 0 {
				continue
			}
			f := &files[cur]
			switch f.kind {
			case "add":
				if strings.HasPrefix(l, "+") {
					f.lines = append(f.lines, l[1:])
				} else {
					f.lines = append(f.lines, l)
				}
			case "update":
				f.lines = append(f.lines, l)
			case "delete":
				if strings.TrimSpace(l) != "" {
					return nil, fmt.Errorf("line %d: unexpected text after *** Delete File: %s", i+1, f.path)
				}
			}
			continue
		}
		switch m {
		case "*** Begin Patch":
			begun, ended = true, false
		case "*** End Patch":
			cur = -1
			ended = true
		case "*** Move to:":
			if cur < 0 || files[cur].kind != "update" {
				return nil, fmt.Errorf("line %d: *** Move to: must follow an *** Update File: line", i+1)
			}
			files[cur].moveTo = arg
		default:
			if arg == "" {
				return nil, fmt.Errorf("line %d: %s needs a path", i+1, m)
			}
			kind := map[string]string{"*** Add File:": "add", "*** Delete File:": "delete", "*** Update File:": "update"}[m]
			files = append(files, envFile{kind: kind, path: arg})
			cur = len(files) - 1
		}
	}
	if begun && !ended {
		return nil, fmt.Errorf("%w: *** Begin Patch has no *** End Patch", errCutOff)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *** Add File, *** Delete File or *** Update File sections found")
	}
	for _, f := range files {
		if f.kind == "update" && len(strings.TrimSpace(strings.Join(f.lines, ""))) == 0 && f.moveTo == "" {
			return nil, fmt.Errorf("*** Update File: %s has no changes", f.path)
		}
	}
	return files, nil
}

type apChunk struct {
	anchors []string
	lines   []hline
	eof     bool
}

// parseSection reads one file's update section: @@ anchors, ' '/'-'/'+' lines, *** End of File.
func parseSection(lines []string) ([]apChunk, error) {
	var chunks []apChunk
	cur := func() *apChunk {
		if len(chunks) == 0 {
			chunks = append(chunks, apChunk{})
		}
		return &chunks[len(chunks)-1]
	}
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case t == "@@" || strings.HasPrefix(l, "@@ ") || strings.HasPrefix(t, "@@ "):
			anchor := strings.TrimSpace(strings.TrimPrefix(t, "@@"))
			// Consecutive @@ lines narrow the context (class, then method).
			if len(chunks) == 0 || len(cur().lines) > 0 || cur().eof {
				chunks = append(chunks, apChunk{})
			}
			if anchor != "" {
				c := cur()
				c.anchors = append(c.anchors, anchor)
			}
		case t == "*** End of File":
			cur().eof = true
		case strings.HasPrefix(t, "*** "):
			if _, _, ok := envMarker(l); ok {
				continue
			}
			cur().lines = append(cur().lines, hline{' ', l})
		case l == "":
			cur().lines = append(cur().lines, hline{'e', ""})
		case l[0] == ' ' || l[0] == '-' || l[0] == '+':
			cur().lines = append(cur().lines, hline{l[0], l[1:]})
		default:
			cur().lines = append(cur().lines, hline{' ', l})
		}
	}
	var out []apChunk
	for _, c := range chunks {
		for len(c.lines) > 0 && c.lines[len(c.lines)-1].op == 'e' {
			c.lines = c.lines[:len(c.lines)-1]
		}
		for j := range c.lines {
			if c.lines[j].op == 'e' {
				c.lines[j].op = ' '
			}
		}
		changes := false
		for _, l := range c.lines {
			changes = changes || l.op != ' '
		}
		if changes {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no changes found; an update section needs @@ chunks with '-' and '+' lines")
	}
	return out, nil
}

func applyPatchStrategy(d doc, exists bool, body string, opts Options) (Result, error) {
	lines := patchLines(body)
	if isEnvelope(lines) {
		files, err := parseEnvelope(lines)
		if errors.Is(err, errCutOff) {
			return Result{}, cutOff(ApplyPatch, strings.TrimPrefix(err.Error(), errCutOff.Error()+": "))
		}
		if err != nil {
			return Result{}, formatError(ApplyPatch, "invalid apply_patch envelope: %v", err)
		}
		if len(files) > 1 {
			var names []string
			for _, f := range files {
				names = append(names, f.path)
			}
			return Result{}, formatError(ApplyPatch, "the patch changes %d files (%s); relay patch changes one file: apply the whole response with relay apply", len(files), strings.Join(names, ", "))
		}
		f := files[0]
		switch f.kind {
		case "add":
			eol := "\n"
			if crlfText(body) {
				eol = "\r\n" // a new file keeps the line endings it was written with
			}
			return applyReplace(d, exists, strings.Join(f.lines, eol)+eol)
		case "delete":
			return Result{}, formatError(ApplyPatch, "the patch deletes %s; relay patch only changes content: use relay apply", f.path)
		}
		lines = f.lines
	}
	chunks, err := parseSection(lines)
	if err != nil {
		return Result{}, formatError(ApplyPatch, "invalid apply_patch section: %v", err)
	}
	edits := make([]edit, len(chunks))
	for i, c := range chunks {
		e := hunkEdit(i+1, uhunk{lines: c.lines})
		e.anchors = c.anchors
		e.eof = c.eof
		edits[i] = e
	}
	en := &engine{s: ApplyPatch, d: d, opts: opts, ordered: true}
	return en.run(edits)
}
