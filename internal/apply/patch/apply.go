package patch

import (
	"fmt"
	"strings"
)

// DefaultFuzzyThreshold is the line similarity a fuzzy match needs by default.
const DefaultFuzzyThreshold = 0.9

// Options tune matching. The zero value uses the defaults.
type Options struct {
	// FuzzyThreshold is the minimum similarity (0..1] of a fuzzy match; 0 means 0.9.
	FuzzyThreshold float64
	// SearchBuffer is how many lines around an explicit :start_line:/:end_line:
	// range a SEARCH block may still match; 0 means 40.
	SearchBuffer int
}

func (o Options) buffer() int {
	if o.SearchBuffer <= 0 {
		return 40
	}
	return o.SearchBuffer
}

func (o Options) threshold() float64 {
	if o.FuzzyThreshold <= 0 {
		return DefaultFuzzyThreshold
	}
	return min(o.FuzzyThreshold, 1)
}

// BlockResult is where one block or hunk landed.
type BlockResult struct {
	Index int `json:"index"` // 1-based
	// Status is "applied" or "already-applied".
	Status string `json:"status"`
	// Line is the 1-based line of the original file where the block matched (or was inserted).
	Line int `json:"line"`
	// Method is exact, trailing-whitespace, indentation, fuzzy, insert, create or replace.
	Method     string  `json:"method"`
	Similarity float64 `json:"similarity"`
}

// Result is the new content of a file after a successful Apply.
type Result struct {
	Content  string        `json:"content"`
	Strategy Strategy      `json:"strategy"`
	Blocks   []BlockResult `json:"blocks"`
}

// ParseStrategy maps a strategy name, including the relaycode 1.1 aliases
// standard-diff and search-replace, to a Strategy.
func ParseStrategy(name string) (Strategy, bool) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "replace":
		return Replace, true
	case "new-unified":
		return NewUnified, true
	case "multi-search-replace", "search-replace":
		return MultiSearchReplace, true
	case "unified", "standard-diff":
		return Unified, true
	case "apply-patch":
		return ApplyPatch, true
	case "edit", "str-replace", "str_replace":
		return EditStrategy, true
	}
	return "", false
}

// HasSearchReplaceMarkers reports whether body has a line that is a SEARCH or
// REPLACE marker: a broken SEARCH/REPLACE patch, not a whole file.
func HasSearchReplaceMarkers(body string) bool {
	for _, l := range patchLines(body) {
		if k, _ := classify(l); k == mkSearch || k == mkReplace {
			return true
		}
	}
	return false
}

// Strategies lists the canonical strategy names.
var Strategies = []Strategy{Replace, NewUnified, MultiSearchReplace, Unified, ApplyPatch, EditStrategy}

// InferStrategy guesses the strategy of a block body that names none.
func InferStrategy(body string) Strategy {
	return inferLines(patchLines(body))
}

func inferLines(lines []string) Strategy {
	if isEditJSON(lines) {
		return EditStrategy
	}
	hasSearch, hasReplace, hasSep := false, false, false
	hunks, numbered := 0, 0
	minus, plus := false, false
	for _, l := range lines {
		if len(l) == 0 {
			continue
		}
		switch l[0] {
		case '<', '>', '=', '-', '+':
			switch k, _ := classify(l); k {
			case mkSearch:
				hasSearch = true
			case mkReplace:
				hasReplace = true
			case mkSep:
				hasSep = true
			}
		case '*':
			if m, _, ok := envMarker(l); ok && (m == "*** Begin Patch" || m == "*** Update File:" || m == "*** Add File:" || m == "*** Delete File:") {
				return ApplyPatch
			}
		}
		switch {
		case strings.HasPrefix(l, "@@"):
			hunks++
			if _, _, ok := parseHunkHeader(l); ok {
				numbered++
			}
		case strings.HasPrefix(l, "--- "):
			minus = true
		case strings.HasPrefix(l, "+++ "):
			plus = true
		}
	}
	if hasSearch && hasReplace && hasSep {
		return MultiSearchReplace
	}
	if hunks > 0 && (minus && plus || startsWithHunk(lines)) {
		if numbered == hunks {
			return Unified
		}
		return NewUnified
	}
	if hunks == 0 && startsWithHunk(lines) {
		// A git diff that changes no line (a rename or a mode change) is still a
		// diff: written as the file's new content it would replace the file with
		// the diff's text, so it goes to the diff engine, which refuses it.
		return Unified
	}
	return Replace
}

func startsWithHunk(lines []string) bool {
	for _, l := range lines {
		if isBlank(l) {
			continue
		}
		return strings.HasPrefix(l, "@@") || strings.HasPrefix(l, "diff --git ")
	}
	return false
}

// Apply applies one operation's body to a file's content. exists=false means
// the file does not exist (original must be ""). It never applies part of a
// patch: any failing block gives an *ApplyError listing every failing block.
// The file's line endings, BOM and final newline are kept.
func Apply(original string, exists bool, strategy Strategy, body string, opts Options) (Result, error) {
	if !exists && original != "" {
		return Result{}, fmt.Errorf("patch: original content given for a file that does not exist")
	}
	if strategy == "" {
		strategy = InferStrategy(body)
	}
	s, ok := ParseStrategy(string(strategy))
	if !ok {
		return Result{}, formatError(strategy, "unknown strategy %q; use one of replace, new-unified, multi-search-replace, unified, apply-patch, edit", strategy)
	}
	d := splitDoc(original)
	if len(d.lines) == 0 && crlfText(body) {
		// A new (or empty) file gets the line endings its content was written with.
		d.eol = "\r\n"
	}
	switch s {
	case Replace:
		return applyReplace(d, exists, body)
	case MultiSearchReplace:
		return applySR(d, body, opts)
	case Unified, NewUnified:
		return applyUnified(d, s, body, opts)
	case ApplyPatch:
		return applyPatchStrategy(d, exists, body, opts)
	case EditStrategy:
		return applyEditStrategy(original, body)
	}
	return Result{}, formatError(s, "strategy %q has no applier (ParseStrategy and Apply disagree)", s)
}

// applyReplace makes body the file, in the file's own line endings, BOM and final newline.
func applyReplace(d doc, exists bool, body string) (Result, error) {
	nd := splitDoc(body)
	if exists && d.bom {
		nd.bom = true
	}
	if exists && len(d.lines) > 0 {
		nd.eol = d.eol
		nd.final = d.final
		for i := range nd.eols {
			nd.eols[i] = ""
		}
	}
	var content string
	if len(nd.lines) == 0 {
		content = ""
		if nd.bom {
			content = bom
		}
	} else {
		content = nd.render(nd.lines, nd.eols)
	}
	method := "replace"
	if !exists {
		method = "create"
	}
	orig := d.render(d.lines, d.eols)
	if len(d.lines) == 0 && d.bom {
		orig = bom
	}
	status := "applied"
	if exists && content == orig {
		status = "already-applied"
	}
	return Result{Content: content, Strategy: Replace, Blocks: []BlockResult{{Index: 1, Status: status, Line: 1, Method: method, Similarity: 1}}}, nil
}
