package patch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// Format is how an answer writes its changes. relay's own format ends with a
// control block; the others are what agents and chat UIs write without it.
type Format string

// The formats ParseAnswer reads.
const (
	FormatRelay         Format = "relay"          // fenced file blocks and the YAML control block
	FormatDiff          Format = "diff"           // unified or git diff, one or many files
	FormatCodex         Format = "codex"          // *** Begin Patch envelopes
	FormatSearchReplace Format = "search-replace" // aider, Cline and Roo SEARCH/REPLACE blocks
	FormatEdit          Format = "edit"           // old_string/new_string JSON, str_replace_editor commands
	FormatWhole         Format = "whole"          // whole files in fenced blocks that name their path
)

// Formats lists every format, in the order detection reports them.
var Formats = []Format{FormatRelay, FormatDiff, FormatCodex, FormatSearchReplace, FormatEdit, FormatWhole}

// ParseFormat maps a --format value to a Format.
func ParseFormat(name string) (Format, bool) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "relay":
		return FormatRelay, true
	case "diff", "git", "git-diff", "unified", "udiff":
		return FormatDiff, true
	case "codex", "apply-patch", "apply_patch":
		return FormatCodex, true
	case "search-replace", "searchreplace", "sr", "aider":
		return FormatSearchReplace, true
	case "edit", "edits", "json":
		return FormatEdit, true
	case "whole", "files", "whole-file":
		return FormatWhole, true
	}
	return "", false
}

// Label names a format for people: "format: git diff, 3 files".
func (f Format) Label() string {
	switch f {
	case FormatDiff:
		return "git diff"
	case FormatCodex:
		return "codex patch"
	case FormatSearchReplace:
		return "SEARCH/REPLACE"
	case FormatEdit:
		return "edit"
	case FormatWhole:
		return "whole files"
	}
	return string(f)
}

// Found is one format an answer holds: the files it names and the line where it starts.
type Found struct {
	Format Format   `json:"format"`
	Files  []string `json:"files"`
	Line   int      `json:"line"`
}

func (f Found) String() string {
	return fmt.Sprintf("%s (%d %s: %s) at line %d", f.Format.Label(), len(f.Files), plural(len(f.Files), "file", "files"), clip(strings.Join(f.Files, ", ")), f.Line)
}

// AmbiguousError is an answer without a control block that holds changes in
// more than one format: relay will not guess which one the author meant.
type AmbiguousError struct {
	Found []Found
}

func (e *AmbiguousError) Error() string {
	parts := make([]string, len(e.Found))
	for i, f := range e.Found {
		parts[i] = f.String()
	}
	return "the answer holds changes in more than one format: " + strings.Join(parts, "; ") + "; relay does not guess which one is meant"
}

// FormatError is an answer whose changes are in a format relay reads but are
// malformed (a broken marker, a diff without hunks, an edit without a path).
type FormatError struct {
	Format Format
	Reason string
}

func (e *FormatError) Error() string { return fmt.Sprintf("%s: %s", e.Format.Label(), e.Reason) }

// formatParser reads one format from an answer; ops nil means not found.
type formatParser func(a *answerText) (ops []Operation, line int, err error)

var formatParsers = map[Format]formatParser{
	FormatDiff:          (*answerText).diffOps,
	FormatCodex:         (*answerText).codexOps,
	FormatSearchReplace: (*answerText).srOps,
	FormatEdit:          (*answerText).editOps,
	FormatWhole:         (*answerText).wholeOps,
}

// ParseAnswer reads an answer in any format. An answer with relay's control
// block is relay's format (Parse). Without one, every format is looked for:
// exactly one must hold changes, or the answer is refused (*AmbiguousError);
// the result gets a new uuid, a summary from the answer's text and
// Response.Bare, which tells the transaction there is no projectId to check.
// force reads only that format (others are listed in Ignored).
func ParseAnswer(text string, force Format) (*Response, error) {
	if force != "" {
		if _, ok := formatParsers[force]; !ok && force != FormatRelay {
			return nil, fmt.Errorf("unknown format %q; use one of relay, diff, codex, search-replace, edit, whole", force)
		}
	}
	if force == "" || force == FormatRelay {
		resp, err := Parse(text)
		var np *NotPatchError
		switch {
		case err == nil:
			resp.Format = FormatRelay
			return resp, nil
		case force == FormatRelay || !errors.As(err, &np) || resp.Control.UUID != "" || strings.HasPrefix(np.Reason, "invalid control block"):
			// A relay answer (it has its control block) that is broken, or cut off: say so, guess nothing.
			return resp, err
		}
	}
	a := newAnswerText(text)
	var found []Found
	var ops []Operation
	var format Format
	for _, f := range Formats[1:] {
		if force != "" && f != force {
			continue
		}
		fo, line, err := formatParsers[f](a)
		if err != nil {
			if force == "" && len(fo) == 0 && !isDecisive(err) {
				continue // evidence too weak to speak for this format
			}
			return nil, err
		}
		if len(fo) == 0 {
			continue
		}
		found = append(found, Found{Format: f, Files: opPaths(fo), Line: line})
		ops, format = fo, f
	}
	if len(found) > 1 {
		return nil, &AmbiguousError{Found: found}
	}
	if len(found) == 0 {
		what := "no control block, and no diff, codex patch, SEARCH/REPLACE block, edit or code block that names its file"
		if force != "" {
			what = "no " + force.Label() + " changes found"
		}
		return &Response{Ignored: a.ignored}, &NotPatchError{Reason: what}
	}
	resp := &Response{Format: format, Bare: true, Operations: ops, Reasoning: a.prose(), Ignored: a.ignored}
	summary := answerSummary(resp.Reasoning, format, ops)
	resp.Control = Control{UUID: uuid.NewString(), PromptSummary: summary, GitCommitMsg: summary}
	for _, op := range ops {
		switch op.Kind {
		case OpDelete:
			resp.Control.ChangeSummary = append(resp.Control.ChangeSummary, ChangeSummaryItem{Action: "delete", Path: op.Path})
		case OpRename:
			resp.Control.ChangeSummary = append(resp.Control.ChangeSummary, ChangeSummaryItem{Action: "rename", Path: op.To})
		default:
			act := "edit"
			if op.Create {
				act = "new"
			}
			resp.Control.ChangeSummary = append(resp.Control.ChangeSummary, ChangeSummaryItem{Action: act, Path: op.Path})
		}
	}
	return resp, nil
}

// decisiveError is a format error that stands even when detection was only
// looking (a broken SEARCH marker is an answer in that format, not prose).
type decisiveError struct{ error }

func (e decisiveError) Unwrap() error { return e.error }

func isDecisive(err error) bool {
	var d decisiveError
	var cut *CutOffError
	return errors.As(err, &d) || errors.As(err, &cut)
}

// Files lists the paths a response changes, in order, each once.
func (r *Response) Files() []string { return opPaths(r.Operations) }

func opPaths(ops []Operation) []string {
	seen := map[string]bool{}
	var out []string
	for _, op := range ops {
		p := op.Path
		if op.Kind == OpRename {
			p = op.To
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// answerSummary is the first sentence of the answer's prose, or what it does.
func answerSummary(prose []string, f Format, ops []Operation) string {
	for _, l := range prose {
		l = strings.TrimSpace(strings.TrimLeft(l, "#*->` "))
		if len(l) < 4 || strings.HasSuffix(l, ":") && len(l) < 20 {
			continue
		}
		if i := strings.Index(l, ". "); i > 0 {
			l = l[:i+1]
		}
		return clip(l)
	}
	n := len(opPaths(ops))
	return fmt.Sprintf("Apply a %s answer (%d %s)", f.Label(), n, plural(n, "file", "files"))
}

// answerText is an answer split into lines and fenced blocks, with the lines
// each format used marked, so what is left is the answer's prose.
type answerText struct {
	lines   []string
	src     *source
	fences  []fence
	used    []bool
	ignored []IgnoredBlock
}

func newAnswerText(text string) *answerText {
	src, lines := newSource(text)
	a := &answerText{lines: lines, src: src, used: make([]bool, len(lines))}
	// A diff of a markdown file has fence lines as context (" ```ts"): inside a
	// diff they are diff lines, not fences of the answer.
	masked := lines
	if m := inDiff(lines); m != nil {
		masked = make([]string, len(lines))
		for i, l := range lines {
			if !m[i] {
				masked[i] = l
			}
		}
	}
	a.fences = scanFences(masked)
	for i := range a.fences {
		f := &a.fences[i]
		f.src, f.body = src, lines[f.open+1:f.close]
	}
	return a
}

// inDiff marks the lines that belong to a diff: from a file header (diff
// --git, or --- then +++) through the lines that can be diff lines; nil when
// the text holds no diff.
func inDiff(lines []string) []bool {
	var m []bool
	for i := diffStart(lines, 0); i >= 0; i = diffStart(lines, i) {
		if m == nil {
			m = make([]bool, len(lines))
		}
		j := i
		for j < len(lines) && (j < i+2 || diffLike(lines[j]) || strings.HasPrefix(lines[j], "+++ ")) {
			m[j] = true
			j++
		}
		if j == i {
			j++
		}
		i = j
	}
	return m
}

// segment is a run of answer lines: a fenced block's body, or the text
// between fences. It is a fence so its lines slice out with fence.sub.
type segment struct {
	fence
	fenced bool
}

// segments lists the fenced bodies and the unfenced runs between them, in order.
func (a *answerText) segments() []segment {
	var out []segment
	at := 0
	add := func(from, to int) {
		if to > from {
			out = append(out, segment{fence: fence{open: from - 1, close: to, body: a.lines[from:to], src: a.src}})
		}
	}
	for _, f := range a.fences {
		add(at, f.open)
		out = append(out, segment{fence: f, fenced: true})
		at = min(f.close+1, len(a.lines))
	}
	add(at, len(a.lines))
	return out
}

// line is the 0-based answer line of body line i of s.
func (s segment) line(i int) int { return s.open + 1 + i }

func (a *answerText) use(from, to int) {
	for i := max(from, 0); i < to && i < len(a.used); i++ {
		a.used[i] = true
	}
}

func (a *answerText) useFence(s segment) {
	a.use(s.open, min(s.close+1, len(a.lines)))
}

// prose is the answer's text outside the changes a format read.
func (a *answerText) prose() []string {
	var out []string
	inFence := make([]bool, len(a.lines))
	for _, f := range a.fences {
		for i := f.open; i <= f.close && i < len(a.lines); i++ {
			inFence[i] = true
		}
	}
	for i, l := range a.lines {
		if a.used[i] || inFence[i] {
			continue
		}
		if t := strings.TrimSpace(l); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func (a *answerText) ignore(s segment, reason string) {
	a.ignored = append(a.ignored, IgnoredBlock{Line: s.open + 1, Header: s.info, Reason: reason})
}

// bodyKind says which format a fenced block's body is written in.
func bodyKind(body []string) Format {
	if isEnvelope(body) {
		return FormatCodex
	}
	if isEditJSON(body) || isToolJSON(body) {
		return FormatEdit
	}
	for _, l := range body {
		if k, _ := classify(l); k == mkSearch || k == mkReplace {
			return FormatSearchReplace
		}
	}
	if diffStart(body, 0) >= 0 {
		return FormatDiff
	}
	return FormatWhole
}
