package patch

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Edit replaces one unique substring of a file: the old_string/new_string
// edit that agent tools (Claude Code, gemini-cli, opencode, Continue, Cline) send.
type Edit struct {
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
	// ReplaceAll replaces every occurrence instead of requiring exactly one.
	ReplaceAll bool `json:"replace_all,omitempty"`
	// InsertLine, when set, inserts NewString after this line (0: at the
	// top) instead of replacing OldString: str_replace_editor's insert.
	InsertLine *int `json:"insert_line,omitempty"`
}

// Why an edit did not apply; test with errors.Is on the error ApplyEdits returns.
var (
	// ErrEditNotFound: old_string is not in the file, not even ignoring whitespace or indentation.
	ErrEditNotFound = errors.New("old_string not found")
	// ErrEditAmbiguous: old_string occurs more than once and replace_all is not set.
	ErrEditAmbiguous = errors.New("old_string occurs more than once")
	// ErrEditNoOp: new_string equals old_string, so the edit would change nothing.
	ErrEditNoOp = errors.New("old_string and new_string are identical")
	// ErrEditEmptyOld: old_string is empty but the file is not (only a new or empty file can be written that way).
	ErrEditEmptyOld = errors.New("old_string is empty")
	// ErrEditInsertLine: insert_line is not a line of the file (0 to its line count).
	ErrEditInsertLine = errors.New("insert_line is outside the file")
	// ErrEditIndent: old_string matched only with indentation ignored, and
	// nothing in the edit says which indentation new_string is written in.
	ErrEditIndent = errors.New("old_string matched only with indentation ignored")
)

// EditError says which edit failed and why; it wraps one of the ErrEdit* values.
type EditError struct {
	// Index is the 1-based position of the failing edit.
	Index int `json:"index"`
	// Total is the number of edits given.
	Total int `json:"total"`
	Err   error
	// Lines are the 1-based lines where old_string occurs (ambiguous), at most 10.
	Lines []int `json:"lines,omitempty"`
	// Count is how many times old_string occurs (ambiguous).
	Count int `json:"count,omitempty"`
	// Method is the matching stage that found the occurrences: exact, whitespace or indentation.
	Method string `json:"method,omitempty"`
}

func (e *EditError) Error() string {
	prefix := fmt.Sprintf("edit %d of %d: ", e.Index, e.Total)
	if e.Total <= 1 {
		prefix = "edit: "
	}
	switch {
	case errors.Is(e.Err, ErrEditAmbiguous):
		ls := make([]string, len(e.Lines))
		for i, l := range e.Lines {
			ls[i] = fmt.Sprint(l)
		}
		how := ""
		if e.Method != "" && e.Method != "exact" {
			how = " (ignoring " + e.Method + ")"
		}
		return fmt.Sprintf("%sold_string occurs %d times%s, on %s %s; include more surrounding text so it matches once, or set replace_all", prefix, e.Count, how, plural(len(ls), "line", "lines"), strings.Join(ls, ", "))
	case errors.Is(e.Err, ErrEditNotFound):
		return prefix + "old_string not found in the file (not even ignoring whitespace and indentation); copy it exactly from the file"
	case errors.Is(e.Err, ErrEditNoOp):
		return prefix + "old_string and new_string are identical; the edit changes nothing"
	case errors.Is(e.Err, ErrEditInsertLine):
		return prefix + e.Err.Error()
	case errors.Is(e.Err, ErrEditEmptyOld):
		return prefix + "old_string is empty but the file is not; give the text to replace"
	}
	return prefix + e.Err.Error()
}

func (e *EditError) Unwrap() error { return e.Err }

// ApplyEdits applies edits in order, each to the result of the previous one,
// and returns the new content. It applies all of them or none: the first edit
// that fails returns an *EditError. An empty old_string writes new_string into
// an empty file. CRLF files keep CRLF.
func ApplyEdits(content string, edits []Edit) (string, error) {
	res, err := applyEditList(content, edits)
	return res.Content, err
}

// ApplyEditsResult is ApplyEdits with where and how each edit matched.
func ApplyEditsResult(content string, edits []Edit) (Result, error) {
	return applyEditList(content, edits)
}

func applyEditList(content string, edits []Edit) (Result, error) {
	res := Result{Content: content, Strategy: EditStrategy}
	if len(edits) == 0 {
		return Result{}, &EditError{Index: 0, Total: 0, Err: errors.New("no edits given")}
	}
	for i, e := range edits {
		out, br, err := applyOneEdit(res.Content, e)
		if err != nil {
			var ee *EditError
			if errors.As(err, &ee) {
				ee.Index, ee.Total = i+1, len(edits)
			}
			return Result{}, err
		}
		br.Index = i + 1
		res.Content = out
		res.Blocks = append(res.Blocks, br)
	}
	return res, nil
}

// applyOneEdit runs the matching cascade: exact, then whitespace-tolerant
// (trailing whitespace, runs of spaces, line endings), then indentation-tolerant.
func applyOneEdit(content string, e Edit) (string, BlockResult, error) {
	return applyOneEditIn(content, e, 0, -1)
}

// applyOneEditIn is applyOneEdit counting only occurrences that start on
// lines lo..hi (1-based; hi < 0 means no limit).
func applyOneEditIn(content string, e Edit, lo, hi int) (string, BlockResult, error) {
	if e.InsertLine != nil {
		return insertEdit(content, *e.InsertLine, e.NewString)
	}
	old, nw := e.OldString, e.NewString
	if old == nw {
		return "", BlockResult{}, &EditError{Err: ErrEditNoOp}
	}
	if old == "" {
		if content != "" && content != bom {
			return "", BlockResult{}, &EditError{Err: ErrEditEmptyOld}
		}
		return content + nw, BlockResult{Status: "applied", Line: 1, Method: "create", Similarity: 1}, nil
	}
	// A CRLF file gets its edits in CRLF, whatever line endings the edit used.
	eol := "\n"
	if crlf := strings.Count(content, "\r\n"); crlf > 0 && crlf*2 >= strings.Count(content, "\n") {
		old, nw, eol = toCRLF(old), toCRLF(nw), "\r\n"
	}
	for _, lv := range []level{lvExact, lvTrailing, lvIndent} {
		locs := findEdit(content, old, lv)
		if lo > 0 || hi >= 0 {
			var in [][2]int
			for _, l := range locs {
				if n := strings.Count(content[:l[0]], "\n") + 1; n >= lo && (hi < 0 || n <= hi) {
					in = append(in, l)
				}
			}
			locs = in
		}
		if len(locs) == 0 {
			continue
		}
		if len(locs) > 1 && !e.ReplaceAll {
			ee := &EditError{Err: ErrEditAmbiguous, Count: len(locs), Method: editMethod(lv)}
			for _, l := range locs {
				n := strings.Count(content[:l[0]], "\n") + 1
				if len(ee.Lines) == 10 {
					break
				}
				if len(ee.Lines) == 0 || ee.Lines[len(ee.Lines)-1] != n {
					ee.Lines = append(ee.Lines, n)
				}
			}
			return "", BlockResult{}, ee
		}
		var b strings.Builder
		at := 0
		for _, l := range locs {
			b.WriteString(content[at:l[0]])
			r, why := reindentEdit(content, l[0], content[l[0]:l[1]], old, nw, eol, lv)
			if why != "" {
				return "", BlockResult{}, &EditError{Err: fmt.Errorf("%w: %s", ErrEditIndent, why)}
			}
			b.WriteString(r)
			at = l[1]
		}
		b.WriteString(content[at:])
		line := strings.Count(content[:locs[0][0]], "\n") + 1
		out := b.String()
		if out == content {
			return "", BlockResult{}, &EditError{Err: ErrEditNoOp}
		}
		return out, BlockResult{Status: "applied", Line: line, Method: editMethod(lv), Similarity: 1}, nil
	}
	return "", BlockResult{}, &EditError{Err: ErrEditNotFound}
}

func editMethod(lv level) string {
	switch lv {
	case lvExact:
		return "exact"
	case lvTrailing:
		return "whitespace"
	}
	return "indentation"
}

func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// maxEditMatches bounds how many occurrences replace_all rewrites in one edit.
const maxEditMatches = 100000

// findEdit returns the byte ranges where old occurs at one matching level.
func findEdit(content, old string, lv level) [][2]int {
	if lv == lvExact {
		var out [][2]int
		for at := 0; at <= len(content) && len(out) < maxEditMatches; {
			i := strings.Index(content[at:], old)
			if i < 0 {
				break
			}
			out = append(out, [2]int{at + i, at + i + len(old)})
			at += i + len(old)
		}
		return out
	}
	re := editPattern(old, lv == lvIndent)
	if re == nil {
		return nil
	}
	var out [][2]int
	for _, l := range re.FindAllStringIndex(content, maxEditMatches) {
		out = append(out, [2]int{l[0], l[1]})
	}
	return out
}

// editPattern builds the tolerant form of old: every run of spaces and tabs
// inside a line matches any run, whitespace at the end of a line, a blank
// line's spaces and CR before a newline are optional, and with indent the
// indentation of every line (but the part of the first line the match starts
// in) may be anything. Text stays literal: only whitespace is ever tolerated.
func editPattern(old string, indent bool) *regexp.Regexp {
	lines := strings.Split(strings.ReplaceAll(old, "\r\n", "\n"), "\n")
	var b strings.Builder
	nonBlank := false
	for i, l := range lines {
		if i > 0 {
			b.WriteString(`[ \t]*\r?\n`)
		}
		body := strings.Trim(l, " \t\r")
		if body == "" {
			continue
		}
		switch lead := leadingWS(l); {
		case indent && (i > 0 || lead != ""):
			b.WriteString(`[ \t]*`)
		case lead != "":
			b.WriteString(regexp.QuoteMeta(lead))
		}
		for j, w := range strings.FieldsFunc(body, func(r rune) bool { return r == ' ' || r == '\t' }) {
			if j > 0 {
				b.WriteString(`[ \t]+`)
			}
			b.WriteString(regexp.QuoteMeta(w))
			nonBlank = true
		}
	}
	if !nonBlank {
		return nil // whitespace alone is too little to match loosely
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil
	}
	return re
}

// reindentEdit returns the replacement for one match. An exact match takes
// new as written. A tolerant match keeps the file's own text for the lines new
// repeats from old unchanged; with indentation tolerance, lines new adds or
// changes are shifted by the difference between old's indentation and the
// file's, so they keep their indentation relative to the matched text.
func reindentEdit(content string, at int, matched, old, nw, eol string, lv level) (string, string) {
	if lv == lvExact {
		return nw, ""
	}
	oldL := strings.Split(strings.ReplaceAll(old, "\r\n", "\n"), "\n")
	newL := strings.Split(strings.ReplaceAll(nw, "\r\n", "\n"), "\n")
	fileL := strings.Split(strings.ReplaceAll(matched, "\r\n", "\n"), "\n")
	if len(fileL) != len(oldL) {
		return strings.Join(newL, eol), "" // cannot happen: the pattern matches one line per line
	}
	// Only a match that starts at the beginning of a line says anything about its first line's indentation.
	lineStart := at == 0 || content[at-1] == '\n'
	ref := -1
	if lv == lvIndent {
		for i := range oldL {
			if !isBlank(oldL[i]) && (i > 0 || lineStart) {
				ref = i
				break
			}
		}
	}
	var pRef, fRef string
	fs := style{}
	pu := 1
	if ref >= 0 {
		fs = detectStyle(strings.Split(content, "\n"))
		pu = max(1, patchUnit(oldL, fileL))
		pRef, fRef = leadingWS(toStyle(oldL[ref], fs, pu)), leadingWS(fileL[ref])
	}
	mapping := lcsMap(oldL, newL)
	if ref >= 0 {
		fr, why := reindentFrame(oldL, newL, fileL, mapping, pairChanged(oldL, newL, mapping), fs, !lineStart)
		switch fr {
		case frameRefuse:
			return "", why
		case frameLiteral:
			ref = -1
		}
	}
	out := make([]string, len(newL))
	for j, nl := range newL {
		if i := mapping[j]; i >= 0 {
			out[j] = fileL[i] // unchanged line: the file's own text, whitespace and all
			continue
		}
		if ref >= 0 && (j > 0 || lineStart) && !isBlank(nl) {
			nl = shiftIndent(toStyle(nl, fs, pu), pRef, fRef)
		}
		out[j] = nl
	}
	return strings.Join(out, eol), ""
}

// parseEditBody reads an edit strategy body: JSON (one edit, a list, or
// {"edits": [...]}) or SEARCH/REPLACE blocks whose SEARCH is any substring.
func parseEditBody(body string) ([]Edit, error) {
	t := strings.TrimSpace(strings.TrimPrefix(body, bom))
	if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return parseEditJSON(t)
	}
	blocks, err := parseSR(patchLines(body))
	if errors.Is(err, errCutOff) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("an edit body is JSON {\"old_string\", \"new_string\", \"replace_all\"} or SEARCH/REPLACE blocks: %v", err)
	}
	out := make([]Edit, len(blocks))
	for i, b := range blocks {
		out[i] = Edit{OldString: strings.Join(b.search, "\n"), NewString: strings.Join(b.replace, "\n")}
	}
	return out, nil
}

func parseEditJSON(t string) ([]Edit, error) {
	type raw struct {
		Old        *string `json:"old_string"`
		New        *string `json:"new_string"`
		ReplaceAll bool    `json:"replace_all"`
		InsertLine *int    `json:"insert_line"`
		Edits      []raw   `json:"edits"`
	}
	var list []raw
	if strings.HasPrefix(t, "[") {
		if err := json.Unmarshal([]byte(t), &list); err != nil {
			return nil, fmt.Errorf("edit list is not valid JSON: %v", err)
		}
	} else {
		var one raw
		if err := json.Unmarshal([]byte(t), &one); err != nil {
			return nil, fmt.Errorf("edit is not valid JSON: %v", err)
		}
		if one.Old == nil && one.New == nil && one.Edits != nil {
			list = one.Edits
		} else {
			list = []raw{one}
		}
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("no edits: give {\"old_string\": …, \"new_string\": …}")
	}
	out := make([]Edit, len(list))
	for i, r := range list {
		if r.InsertLine != nil && r.New != nil && (r.Old == nil || *r.Old == "") {
			out[i] = Edit{NewString: *r.New, InsertLine: r.InsertLine}
			continue
		}
		if r.Old == nil || r.New == nil {
			return nil, fmt.Errorf("edit %d needs both \"old_string\" and \"new_string\"", i+1)
		}
		out[i] = Edit{OldString: *r.Old, NewString: *r.New, ReplaceAll: r.ReplaceAll}
	}
	return out, nil
}

// isEditJSON reports whether a body is nothing but JSON edits, so a block
// without a strategy is read as edits, not as a whole file.
func isEditJSON(lines []string) bool {
	first := ""
	for _, l := range lines {
		if !isBlank(l) {
			first = strings.TrimSpace(l)
			break
		}
	}
	if !strings.HasPrefix(first, "{") && !strings.HasPrefix(first, "[") {
		return false
	}
	text := strings.Join(lines, "\n")
	if !strings.Contains(text, `"old_string"`) {
		return false
	}
	type one struct {
		Old        *string `json:"old_string"`
		New        *string `json:"new_string"`
		ReplaceAll bool    `json:"replace_all"`
	}
	strict := func(v any) bool {
		d := json.NewDecoder(strings.NewReader(text))
		d.DisallowUnknownFields()
		return d.Decode(v) == nil && !d.More()
	}
	var e one
	if strict(&e) {
		return e.Old != nil && e.New != nil
	}
	var list []one
	if strict(&list) {
		for _, e := range list {
			if e.Old == nil || e.New == nil {
				return false
			}
		}
		return len(list) > 0
	}
	var wrap struct {
		Edits []one `json:"edits"`
	}
	return strict(&wrap) && len(wrap.Edits) > 0
}

// applyEditStrategy is Apply for the edit strategy: edits apply whole or not
// at all; an edit whose old and new text are identical is refused.
func applyEditStrategy(original string, body string) (Result, error) {
	edits, err := parseEditBody(body)
	if errors.Is(err, errCutOff) {
		return Result{}, cutOff(EditStrategy, strings.TrimPrefix(err.Error(), errCutOff.Error()+": "))
	}
	if err != nil {
		return Result{}, formatError(EditStrategy, "invalid edit: %v", err)
	}
	return ApplyEditOp(original, edits)
}

// ApplyEditOp is Apply for the edit strategy given typed edits (no body to parse): they
// apply whole or not at all, an edit that changes nothing is refused, and a failure is an
// *ApplyError like every strategy's.
func ApplyEditOp(original string, edits []Edit) (Result, error) {
	var noops []BlockFailure
	for i, e := range edits {
		if e.OldString == e.NewString && e.InsertLine == nil {
			noops = append(noops, BlockFailure{Index: i + 1, Reason: noOpReason(EditStrategy), NoOp: true})
		}
	}
	if len(noops) > 0 {
		return Result{}, &ApplyError{Strategy: EditStrategy, Total: len(edits), Failures: noops, NoOp: len(noops) == len(edits)}
	}
	res, err := applyEditList(original, edits)
	if err != nil {
		return Result{}, editApplyError(err, len(edits))
	}
	return res, nil
}

// editApplyError turns an *EditError into the *ApplyError every strategy returns.
func editApplyError(err error, total int) error {
	var ee *EditError
	if !errors.As(err, &ee) {
		return err
	}
	ae := &ApplyError{Strategy: EditStrategy, Total: total}
	f := BlockFailure{Index: ee.Index, Reason: strings.TrimPrefix(strings.TrimPrefix(ee.Error(), fmt.Sprintf("edit %d of %d: ", ee.Index, ee.Total)), "edit: ")}
	if errors.Is(err, ErrEditNoOp) {
		// The edit matched but its replacement equals the text it replaces.
		f.NoOp = true
		ae.NoOp = total == 1
	}
	ae.Failures = []BlockFailure{f}
	return ae
}

// insertEdit inserts text after line n (0: before the first line), as
// str_replace_editor's insert does; a line past the end is refused, not clamped.
func insertEdit(content string, n int, text string) (string, BlockResult, error) {
	if text == "" {
		return "", BlockResult{}, &EditError{Err: ErrEditNoOp}
	}
	lines := strings.SplitAfter(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if n < 0 || n > len(lines) {
		return "", BlockResult{}, &EditError{Err: fmt.Errorf("%w: insert_line %d, but the file has %d lines", ErrEditInsertLine, n, len(lines))}
	}
	eol := "\n"
	if crlf := strings.Count(content, "\r\n"); crlf > 0 && crlf*2 >= strings.Count(content, "\n") {
		eol, text = "\r\n", toCRLF(text)
	}
	if !strings.HasSuffix(text, "\n") {
		text += eol
	}
	var b strings.Builder
	for i, l := range lines {
		if i == n {
			b.WriteString(text)
		}
		if i == len(lines)-1 && i+1 == n && !strings.HasSuffix(l, "\n") {
			l += eol // text goes after a last line without a newline
		}
		b.WriteString(l)
	}
	if n == len(lines) {
		b.WriteString(text)
	}
	return b.String(), BlockResult{Status: "applied", Line: n + 1, Method: "insert", Similarity: 1}, nil
}
