package patch

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"
)

// fence is one fenced code block of a response.
type fence struct {
	open, close int // line indexes; close == len(lines) when unclosed
	info        string
	body        []string
	src         *source
}

// source is the normalized response with line start offsets, so block
// bodies are sliced from it instead of joined line by line.
type source struct {
	text string
	offs []int  // offs[i] is where line i starts; offs[len(lines)] == len(text)+1
	crlf []bool // line i ended in CRLF in the response; nil when none did
}

// newSource splits an answer into lines (BOM dropped, CRLF folded to LF) and
// remembers where each line starts and which ended in CRLF.
func newSource(text string) (*source, []string) {
	text = strings.TrimPrefix(text, bom)
	var crlf []bool
	if strings.IndexByte(text, '\r') >= 0 {
		raw := strings.Split(text, "\n")
		crlf = make([]bool, len(raw))
		for i, l := range raw {
			crlf[i] = strings.HasSuffix(l, "\r")
		}
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	lines := strings.Split(text, "\n")
	src := &source{text: text, offs: make([]int, len(lines)+1), crlf: crlf}
	for i, l := range lines {
		src.offs[i+1] = src.offs[i] + len(l) + 1
	}
	return src, lines
}

// crlfBody reports whether most lines of body [i, j) ended in CRLF.
func (f fence) crlfBody(i, j int) bool {
	if f.src == nil || f.src.crlf == nil || i >= j {
		return false
	}
	n := 0
	for k := f.open + 1 + i; k < f.open+1+j; k++ {
		if f.src.crlf[k] {
			n++
		}
	}
	return n*2 > j-i
}

// sub returns body lines [i, j) of f as text, each ending in a newline.
func (f fence) sub(i, j int) string {
	if i >= j {
		return ""
	}
	if f.src == nil {
		return joinLines(f.body[i:j])
	}
	a, b := f.src.offs[f.open+1+i], f.src.offs[f.open+1+j]
	var t string
	if b > len(f.src.text) {
		t = f.src.text[a:] + "\n"
	} else {
		t = f.src.text[a:b]
	}
	// A block written with CRLF keeps CRLF, so a new file gets the endings it was written with.
	if f.crlfBody(i, j) {
		t = strings.ReplaceAll(t, "\n", "\r\n")
	}
	return t
}

func fenceOpen(l string) (byte, int, string, bool) {
	t := strings.TrimLeft(l, " \t")
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return 0, 0, "", false
	}
	c := t[0]
	n := countRun(t, c)
	if n < 3 {
		return 0, 0, "", false
	}
	info := strings.TrimSpace(t[n:])
	if c == '`' && strings.IndexByte(info, '`') >= 0 {
		return 0, 0, "", false // inline code, not a fence
	}
	return c, n, info, true
}

// findClose returns the closing fence line. With nested, an inner fence that
// opens with a language (```bash inside a README) must be closed first.
// fl lists the lines that start with a fence character, so scans skip the rest.
func findClose(lines []string, fl []int, from int, c byte, n int, nested bool) int {
	depth := 0
	k := sort.SearchInts(fl, from)
	for ; k < len(fl); k++ {
		i := fl[k]
		t := strings.TrimLeft(lines[i], " \t")
		if len(t) < n || t[0] != c {
			continue
		}
		k := countRun(t, c)
		if k < n {
			continue
		}
		info := strings.TrimSpace(t[k:])
		if info == "" {
			if depth == 0 {
				return i
			}
			depth--
			continue
		}
		if nested && !strings.ContainsAny(info, "`") {
			if _, h, _ := splitInfo(info); h == "" {
				depth++
			}
		}
	}
	return -1
}

// fenceLines lists the lines that could open or close a fence.
func fenceLines(lines []string) []int {
	var fl []int
	for i, l := range lines {
		t := strings.TrimLeft(l, " \t")
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fl = append(fl, i)
		}
	}
	return fl
}

func scanFences(lines []string) []fence {
	var out []fence
	fl := fenceLines(lines)
	for k := 0; k < len(fl); k++ {
		i := fl[k]
		c, n, info, ok := fenceOpen(lines[i])
		if !ok {
			continue
		}
		j := findClose(lines, fl, i+1, c, n, true)
		if j < 0 {
			j = findClose(lines, fl, i+1, c, n, false)
		}
		if j < 0 {
			j = len(lines)
		}
		out = append(out, fence{open: i, close: j, info: info, body: lines[i+1 : j]})
		k = sort.SearchInts(fl, j+1) - 1
	}
	return out
}

var commentTokens = []string{"<!--", "//", "/*", "#", "--", ";"}

// splitInfo splits a fence info string into language and relay header.
func splitInfo(info string) (lang, header string, comment bool) {
	info = strings.TrimSpace(info)
	rest := info
	if !startsComment(info) {
		i := strings.IndexAny(info, " \t")
		if i < 0 {
			return info, "", false
		}
		lang, rest = info[:i], strings.TrimSpace(info[i:])
	}
	for _, tok := range commentTokens {
		if strings.HasPrefix(rest, tok) {
			h := strings.TrimSpace(rest[len(tok):])
			h = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(h, "-->"), "*/"))
			return lang, h, true
		}
	}
	// relaycode 1.0 also took a bare header after the language; only when it looks like a path.
	if (strings.ContainsAny(rest, "/.") || strings.HasPrefix(rest, `"`)) && !strings.ContainsAny(rest, "={}") {
		return lang, rest, false
	}
	return lang, "", false
}

func startsComment(s string) bool {
	for _, tok := range commentTokens {
		if strings.HasPrefix(s, tok) {
			return true
		}
	}
	return false
}

// parseHeader reads `path`, `path strategy`, `"quoted path" [strategy]`.
func parseHeader(h string) (p string, s Strategy, reason string) {
	h = strings.TrimSpace(h)
	if h == "" {
		return "", "", "no file path in the header"
	}
	if q := h[0]; q == '"' || q == '\'' || q == '`' {
		end := strings.IndexByte(h[1:], q)
		if end < 0 {
			return "", "", "unterminated quoted path"
		}
		p = h[1 : 1+end]
		rest := strings.TrimSpace(h[2+end:])
		if rest == "" {
			return p, "", ""
		}
		st, ok := ParseStrategy(rest)
		if !ok {
			return "", "", fmt.Sprintf("malformed header: unknown strategy %q after the quoted path", rest)
		}
		return p, st, ""
	}
	f := strings.Fields(h)
	if len(f) >= 2 {
		if st, ok := ParseStrategy(f[len(f)-1]); ok {
			return strings.TrimSpace(strings.TrimSuffix(h, f[len(f)-1])), st, ""
		}
	}
	// relaycode: an unknown second word is part of the path.
	return h, "", ""
}

// validPath rejects paths that name no file; whether a path is safe to
// write is the transaction's decision.
func validPath(p string) bool { return p != "" && p != "." && p != "/" && p != ".." }

func cleanPath(p string) string {
	p = strings.TrimSpace(p)
	p = strings.ReplaceAll(p, `\`, "/")
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	if p == "" {
		return p
	}
	return path.Clean(p)
}

// Compiled on first use: package init runs for every relay command, not only apply.
var (
	deleteRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^(//|#|--|/\*)\s*TODO:\s*delete this file\s*(\*/)?$`)
	})
	startRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(//|#|--|<!--|/\*)\s*START\s*(-->|\*/)?$`) })
	endRe   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(//|#|--|<!--|/\*)\s*END\s*(-->|\*/)?$`) })
)

// Parse reads an LLM response: fenced file blocks, the control YAML and the
// reasoning around them. A response without a valid control block or without
// operations returns *NotPatchError.
func Parse(text string) (*Response, error) {
	src, lines := newSource(text)
	fences := scanFences(lines)
	for i := range fences {
		fences[i].src = src
	}
	resp := &Response{}

	// Control block: the last ```yaml block without a file header, else a bare tail.
	ctrlFence := -1
	var ctrlErr error
	for i := len(fences) - 1; i >= 0; i-- {
		lang, h, _ := splitInfo(fences[i].info)
		if l := strings.ToLower(lang); (l == "yaml" || l == "yml") && h == "" {
			// The body starts on the line after the opening fence (open is 0-based).
			c, err := parseControl(strings.Join(fences[i].body, "\n"), fences[i].open+2)
			if err == nil {
				resp.Control = c
				ctrlFence = i
			} else {
				ctrlErr = err
			}
			break
		}
	}
	tailFrom := len(lines)
	if ctrlFence < 0 {
		lastEnd := -1
		if len(fences) > 0 {
			lastEnd = fences[len(fences)-1].close
		}
		for i := len(lines) - 1; i > lastEnd && i >= len(lines)-20; i-- {
			if strings.HasPrefix(lines[i], "projectId:") {
				c, err := parseControl(strings.Join(lines[i:], "\n"), i+1)
				if err == nil {
					resp.Control = c
					tailFrom = i
				} else if ctrlErr == nil {
					ctrlErr = err
				}
				break
			}
		}
	}

	// Reasoning: text outside code blocks and the control YAML.
	at := 0
	addReason := func(to int) {
		for ; at < to && at < tailFrom; at++ {
			if t := strings.TrimSpace(lines[at]); t != "" {
				resp.Reasoning = append(resp.Reasoning, t)
			}
		}
	}
	for i, f := range fences {
		addReason(f.open)
		at = f.close + 1
		if i == ctrlFence {
			continue
		}
		resp.blockOps(f)
	}
	addReason(tailFrom)

	// A file block that runs to the end of the text was cut off: applying the
	// rest of the answer would apply half of it.
	if n := len(fences); n > 0 && fences[n-1].close == len(lines) && n-1 != ctrlFence {
		// Only a file block (one with a path) says this text is an answer cut off.
		if f := fences[n-1]; len(f.body) > 0 && !isControlText(f.body) && (hasHeader(f.info) || isEnvelope(f.body)) {
			return resp, &CutOffError{Reason: fmt.Sprintf("the code block at line %d (```%s) is never closed", f.open+1, clip(f.info))}
		}
	}
	if resp.cutOff != "" {
		return resp, &CutOffError{Reason: resp.cutOff}
	}

	if ctrlFence < 0 && tailFrom == len(lines) {
		reason := "no control block; end the response with a ```yaml block holding projectId and uuid"
		if ctrlErr != nil {
			reason = "invalid control block: " + ctrlErr.Error()
		}
		return resp, &NotPatchError{Reason: reason}
	}
	if len(resp.Operations) == 0 {
		reason := "no file operations (code blocks need a header like ```ts // src/file.ts)"
		if len(resp.Ignored) > 0 {
			reason = fmt.Sprintf("no file operations; %d code %s ignored: %s", len(resp.Ignored), plural(len(resp.Ignored), "block", "blocks"), resp.Ignored[0].Reason)
		}
		return resp, &NotPatchError{Reason: reason}
	}
	return resp, nil
}

func (r *Response) ignore(f fence, reason string) {
	r.Ignored = append(r.Ignored, IgnoredBlock{Line: f.open + 1, Header: f.info, Reason: reason})
}

// blockOps turns one fenced block into operations (or an ignored block).
func (r *Response) blockOps(f fence) {
	if f.crlfBody(0, len(f.body)) {
		// A block written with CRLF keeps CRLF in every operation it makes.
		n0 := len(r.Operations)
		defer func() {
			for k := n0; k < len(r.Operations); k++ {
				if r.Operations[k].Kind == OpWrite {
					r.Operations[k].Content = toCRLF(r.Operations[k].Content)
				}
			}
		}()
	}
	lang, header, _ := splitInfo(f.info)
	if f.close == -1 {
		r.ignore(f, "unclosed code block")
		return
	}
	if header == "" {
		// A bare codex envelope or a diff with file headers names its own paths.
		if isEnvelope(f.body) {
			r.envelopeOps(f, "")
			return
		}
		if ops := r.diffOps(f.body, "", ""); len(ops) > 0 && ops[0].Path != "" {
			r.Operations = append(r.Operations, ops...)
			return
		}
		r.ignore(f, "no file path in the header")
		return
	}
	if strings.EqualFold(strings.TrimSpace(header), "rename-file") {
		r.renameOps(f)
		return
	}
	p, st, reason := parseHeader(header)
	if reason != "" {
		r.ignore(f, reason)
		return
	}
	_ = lang
	// path.Clean would turn "src/utils/" into a file named utils.
	if t := strings.TrimSpace(p); strings.HasSuffix(t, "/") || strings.HasSuffix(t, `\`) {
		r.ignore(f, fmt.Sprintf("%q ends with a slash: it names a directory, not a file", t))
		return
	}
	p = cleanPath(p)
	if !validPath(p) {
		r.ignore(f, fmt.Sprintf("no file path in the header (%q is not a file)", header))
		return
	}
	if isDeleteBody(f.body) {
		r.Operations = append(r.Operations, Operation{Kind: OpDelete, Path: p})
		return
	}
	if st == "" {
		st = inferLines(f.body)
	}
	switch st {
	case ApplyPatch:
		if isEnvelope(f.body) {
			r.envelopeOps(f, p)
			return
		}
	case Unified, NewUnified:
		if ops := r.diffOps(f.body, p, st); len(ops) > 0 {
			r.Operations = append(r.Operations, ops...)
			return
		}
	case Replace:
		r.Operations = append(r.Operations, Operation{Kind: OpWrite, Path: p, Strategy: Replace, Content: replaceContent(f, p)})
		return
	}
	r.Operations = append(r.Operations, Operation{Kind: OpWrite, Path: p, Strategy: st, Content: f.sub(0, len(f.body))})
}

func joinLines(ls []string) string {
	if len(ls) == 0 {
		return ""
	}
	return strings.Join(ls, "\n") + "\n"
}

func hasHeader(info string) bool {
	_, h, _ := splitInfo(info)
	return h != ""
}

// isControlText reports whether an unclosed block holds only the control
// YAML (projectId, uuid, ...): the answer is complete, only its fence is open.
func isControlText(body []string) bool {
	for _, l := range body {
		if strings.HasPrefix(strings.TrimSpace(l), "projectId:") {
			return true
		}
	}
	return false
}

// isDeleteBody is true for a body that is only the delete marker.
func isDeleteBody(body []string) bool {
	var t string
	for _, l := range body {
		if isBlank(l) {
			continue
		}
		if t != "" {
			return false
		}
		t = strings.TrimSpace(l)
	}
	return t != "" && deleteRe().MatchString(t)
}

// replaceContent keeps only the text between // START and // END and drops a
// first line that merely repeats the path as a comment.
func replaceContent(f fence, p string) string {
	body := f.body
	s, e := -1, -1
	for i, l := range body {
		// Cheap test first: the regexps only run on lines that could be markers.
		if !strings.Contains(l, "START") && !strings.Contains(l, "END") {
			continue
		}
		t := strings.TrimSpace(l)
		if s < 0 && startRe().MatchString(t) {
			s = i
		} else if s >= 0 && endRe().MatchString(t) {
			e = i
		}
	}
	if s >= 0 && e > s {
		// The prompt's template puts a blank line inside each marker; it is layout, not content.
		a, b := s+1, e
		if a < b && strings.TrimSpace(body[a]) == "" {
			a++
		}
		if a < b && strings.TrimSpace(body[b-1]) == "" {
			b--
		}
		return f.sub(a, b)
	}
	if len(body) > 0 {
		first := strings.TrimSpace(body[0])
		for _, tok := range commentTokens {
			if strings.HasPrefix(first, tok) {
				rest := strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(first[len(tok):]), "-->"), "*/"))
				if rest != "" && cleanPath(strings.Trim(rest, `"'`)) == p {
					return f.sub(1, len(body))
				}
				break
			}
		}
	}
	return f.sub(0, len(body))
}

func (r *Response) renameOps(f fence) {
	body := strings.TrimSpace(strings.Join(f.body, "\n"))
	type mv struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
	var list []mv
	var one mv
	if err := json.Unmarshal([]byte(body), &one); err == nil {
		list = []mv{one}
	} else if err := json.Unmarshal([]byte(body), &list); err != nil {
		r.ignore(f, fmt.Sprintf("rename-file block is not JSON {\"from\": …, \"to\": …}: %v", err))
		return
	}
	for _, m := range list {
		if !validPath(cleanPath(m.From)) || !validPath(cleanPath(m.To)) {
			r.ignore(f, "rename-file block needs non-empty \"from\" and \"to\"")
			return
		}
	}
	for _, m := range list {
		r.Operations = append(r.Operations, Operation{Kind: OpRename, From: cleanPath(m.From), To: cleanPath(m.To)})
	}
}

func (r *Response) envelopeOps(f fence, fallback string) {
	files, err := parseEnvelope(f.body)
	if errors.Is(err, errCutOff) {
		r.cutOff = fmt.Sprintf("the apply_patch block at line %d has *** Begin Patch but no *** End Patch", f.open+1)
		return
	}
	if err != nil {
		r.ignore(f, "invalid apply_patch envelope: "+err.Error())
		return
	}
	for _, ef := range files {
		p := cleanPath(ef.path)
		if !validPath(p) {
			p = fallback
		}
		if !validPath(p) {
			r.ignore(f, fmt.Sprintf("apply_patch section for %q names no file", ef.path))
			return
		}
		switch ef.kind {
		case "add":
			r.Operations = append(r.Operations, Operation{Kind: OpWrite, Path: p, Strategy: Replace, Content: joinLines(ef.lines)})
		case "delete":
			r.Operations = append(r.Operations, Operation{Kind: OpDelete, Path: p})
		case "update":
			if strings.TrimSpace(strings.Join(ef.lines, "")) != "" {
				r.Operations = append(r.Operations, Operation{Kind: OpWrite, Path: p, Strategy: ApplyPatch, Content: joinLines(ef.lines)})
			}
			if ef.moveTo != "" {
				r.Operations = append(r.Operations, Operation{Kind: OpRename, From: p, To: cleanPath(ef.moveTo), Overwrite: true})
			}
		}
	}
}

// diffOps splits a multi-file unified diff into one operation per file. With
// a single file it returns one op for the header path.
func (r *Response) diffOps(body []string, p string, st Strategy) []Operation {
	secs := splitDiffSections(body)
	if st == "" {
		st = inferLines(body)
		if st != Unified && st != NewUnified {
			return nil
		}
	}
	if len(secs) <= 1 && p != "" {
		return []Operation{{Kind: OpWrite, Path: p, Strategy: st, Content: joinLines(body)}}
	}
	var ops []Operation
	for _, s := range secs {
		files, err := parseUnified(s.lines)
		if err != nil || len(files) != 1 {
			continue
		}
		fp := files[0].newPath
		if fp == "/dev/null" || !validPath(cleanPath(fp)) {
			if op := cleanPath(files[0].oldPath); fp == "/dev/null" && op != "/dev/null" && validPath(op) {
				ops = append(ops, Operation{Kind: OpDelete, Path: cleanPath(files[0].oldPath)})
			}
			continue
		}
		ops = append(ops, Operation{Kind: OpWrite, Path: cleanPath(fp), Strategy: st, Content: joinLines(s.lines)})
	}
	if len(ops) == 0 && p != "" {
		return []Operation{{Kind: OpWrite, Path: p, Strategy: st, Content: joinLines(body)}}
	}
	return ops
}

type diffSection struct{ lines []string }

// splitDiffSections cuts a diff at each file header (diff --git, or ---/+++).
func splitDiffSections(lines []string) []diffSection {
	var secs []diffSection
	start := -1
	sawHunk := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		isGit := strings.HasPrefix(l, "diff --git ")
		isHdr := strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ")
		if isGit || (isHdr && (start < 0 || sawHunk)) {
			if start >= 0 {
				secs = append(secs, diffSection{lines[start:i]})
			}
			start = i
			sawHunk = false
			if isHdr {
				i++
			}
			continue
		}
		if strings.HasPrefix(l, "@@") {
			sawHunk = true
		}
	}
	if start >= 0 {
		secs = append(secs, diffSection{lines[start:]})
	}
	return secs
}

// parseControl validates the control YAML; first is the answer's line number (from 1) of
// src's first line, so a YAML error names the line of the answer, not of the block.
func parseControl(src string, first int) (Control, error) {
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(src), &raw); err != nil {
		return Control{}, fmt.Errorf("not valid YAML: %s", answerLines(firstLine(err.Error()), first))
	}
	var c Control
	str := func(k string) (string, bool) {
		v, ok := raw[k]
		if !ok || v == nil {
			return "", false
		}
		switch t := v.(type) {
		case string:
			return t, true
		case int, int64, float64, bool:
			return fmt.Sprint(t), true
		}
		return "", false
	}
	var ok bool
	if c.ProjectID, ok = str("projectId"); !ok || strings.TrimSpace(c.ProjectID) == "" {
		return Control{}, fmt.Errorf("projectId is missing")
	}
	if c.UUID, ok = str("uuid"); !ok {
		return Control{}, fmt.Errorf("uuid is missing")
	}
	if _, err := uuid.Parse(c.UUID); err != nil {
		return Control{}, fmt.Errorf("uuid %q is not a UUID", c.UUID)
	}
	// UUIDs are case-insensitive: one spelling, so a re-sent response in capitals is not applied twice.
	c.UUID = strings.ToLower(c.UUID)
	if v, ok := raw["changeSummary"].([]any); ok {
		for _, it := range v {
			m, ok := it.(map[string]any)
			if !ok {
				continue
			}
			for k, p := range m {
				c.ChangeSummary = append(c.ChangeSummary, ChangeSummaryItem{Action: k, Path: fmt.Sprint(p)})
			}
		}
	}
	switch v := raw["gitCommitMsg"].(type) {
	case string:
		c.GitCommitMsg = v
	case []any:
		var ls []string
		for _, x := range v {
			ls = append(ls, fmt.Sprint(x))
		}
		c.GitCommitMsg = strings.Join(ls, "\n")
	}
	c.PromptSummary, _ = str("promptSummary")
	return c, nil
}

// yamlLine matches the line numbers in a YAML error ("yaml: line 2: …", "line 2: mapping
// key … already defined at line 1").
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bline (\d+)`) })

// answerLines rewrites a YAML error about a block starting at answer line first: its line
// numbers count from the block's first line, the user reads the answer's.
func answerLines(msg string, first int) string {
	msg = strings.TrimPrefix(msg, "yaml: ")
	return yamlLine().ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if err != nil {
			return m
		}
		return "line " + strconv.Itoa(n+first-1)
	})
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Unfence returns the body of text when text is a single fenced code block
// (a patch pasted with its markdown fence), and the strategy its header names.
func Unfence(text string) (body string, st Strategy, ok bool) {
	text = strings.TrimPrefix(text, bom)
	if strings.IndexByte(text, '\r') >= 0 {
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	first := 0
	for first < len(lines) && isBlank(lines[first]) {
		first++
	}
	if first == len(lines) {
		return "", "", false
	}
	c, n, info, isFence := fenceOpen(lines[first])
	if !isFence {
		return "", "", false
	}
	fl := fenceLines(lines)
	end := findClose(lines, fl, first+1, c, n, true)
	if end < 0 {
		end = findClose(lines, fl, first+1, c, n, false)
	}
	if end < 0 {
		return "", "", false
	}
	for _, l := range lines[end+1:] {
		if !isBlank(l) {
			return "", "", false
		}
	}
	if _, h, _ := splitInfo(info); h != "" {
		if _, s, reason := parseHeader(h); reason == "" {
			st = s
		}
	}
	return joinLines(lines[first+1 : end]), st, true
}
