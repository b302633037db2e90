package patch

import (
	"errors"
	"fmt"
	"strings"
)

// NotPatchError means a response is not a relay patch at all (no control block
// or no operations); callers such as the clipboard watcher skip it quietly.
type NotPatchError struct {
	Reason string
}

func (e *NotPatchError) Error() string { return "not a relay patch: " + e.Reason }

// CutOffError means a response ends in the middle of a block: the answer was
// cut off (a length limit, a partial copy). Nothing of it is applied.
type CutOffError struct {
	Reason string
}

func (e *CutOffError) Error() string {
	return "the answer looks cut off: " + e.Reason + "; nothing was applied"
}

// errCutOff marks a parse error that means the patch text ends inside a block.
var errCutOff = errors.New("cut off")

// cutOff is the *ApplyError of a patch that ends in the middle of a block.
func cutOff(s Strategy, what string) *ApplyError {
	return &ApplyError{Strategy: s, Truncated: true, Failures: []BlockFailure{{Index: 0, Reason: "the answer looks cut off: " + what + "; nothing was applied (copy the whole answer, or ask for the rest)"}}}
}

// BlockFailure describes one block or hunk that did not apply.
type BlockFailure struct {
	// Index is 1-based; 0 means the patch as a whole (for example a format error).
	Index int `json:"index"`
	// Reason is a short lowercase description, e.g. "SEARCH not found".
	Reason string `json:"reason"`
	// ClosestLine is the 1-based line of the best candidate found, 0 if none.
	ClosestLine int `json:"closestLine,omitempty"`
	// Similarity of the closest candidate, 0..1.
	Similarity float64 `json:"similarity,omitempty"`
	// Diff lists the lines that differ between the patch and the closest candidate.
	Diff []string `json:"diff,omitempty"`
	// Vetoed says why the closest candidate is a different place, not a damaged copy
	// (a changed number or identifier); a looser threshold would not help.
	Vetoed string `json:"vetoed,omitempty"`
	// AlreadyApplied is set when the block's new text is already in the file.
	AlreadyApplied bool `json:"alreadyApplied,omitempty"`
	// NoOp is set when the block's old and new text are identical: it changes nothing anywhere.
	NoOp bool `json:"noOp,omitempty"`
}

// ApplyError is returned by Apply when any block fails; the patch is then not
// applied at all. Its message lists every failing block so an LLM can fix it.
type ApplyError struct {
	Strategy Strategy `json:"strategy"`
	// Total is the number of blocks or hunks in the patch.
	Total    int            `json:"total"`
	Failures []BlockFailure `json:"failures"`
	// AlreadyApplied is true when every block's change is already present.
	AlreadyApplied bool `json:"alreadyApplied,omitempty"`
	// NoOp is true when the only edit matched but replaced its text with the same text.
	NoOp bool `json:"noOp,omitempty"`
	// Truncated is true when the patch ends in the middle of a block: the answer was cut off.
	Truncated bool `json:"truncated,omitempty"`
}

func (e *ApplyError) Error() string {
	var b strings.Builder
	switch {
	case e.NoOp:
		what := "SEARCH and REPLACE are identical"
		switch e.unit() {
		case "hunk":
			what = "the hunk has no added or removed lines"
		case "edit":
			what = "old_string and new_string are identical"
		}
		if e.Total > 1 {
			what += " in every " + e.unit()
		}
		return "the patch changes nothing: " + what
	case e.AlreadyApplied:
		b.WriteString("the change is already present in the file")
		var at []string
		for _, f := range e.Failures {
			if f.ClosestLine > 0 {
				at = append(at, fmt.Sprintf("%s %d at line %d", e.unit(), f.Index, f.ClosestLine))
			}
		}
		if len(at) > 0 {
			fmt.Fprintf(&b, " (new text of %s)", strings.Join(at, ", "))
		}
		return b.String()
	case len(e.Failures) == 1 && e.Failures[0].Index == 0:
		b.WriteString(e.Failures[0].Reason)
	default:
		one, many := "block", "blocks"
		if e.Strategy == EditStrategy {
			one, many = "edit", "edits"
		}
		fmt.Fprintf(&b, "%s patch does not apply: %d of %d %s failed", e.Strategy, len(e.Failures), e.Total, plural(e.Total, one, many))
	}
	for _, f := range e.Failures {
		if f.Index == 0 && len(e.Failures) == 1 {
			writeDetails(&b, f)
			continue
		}
		fmt.Fprintf(&b, "\n%s %d of %d: %s", e.unit(), f.Index, e.Total, f.Reason)
		writeDetails(&b, f)
	}
	return b.String()
}

func writeDetails(b *strings.Builder, f BlockFailure) {
	if f.ClosestLine > 0 {
		fmt.Fprintf(b, "; closest match at line %d (%d%% similar)", f.ClosestLine, int(f.Similarity*100))
	}
	for _, d := range f.Diff {
		b.WriteString("\n    ")
		b.WriteString(d)
	}
}

func (e *ApplyError) unit() string {
	switch e.Strategy {
	case Unified, NewUnified, ApplyPatch:
		return "hunk"
	case EditStrategy:
		return "edit"
	}
	return "block"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func formatError(s Strategy, format string, args ...any) *ApplyError {
	return &ApplyError{Strategy: s, Total: 0, Failures: []BlockFailure{{Index: 0, Reason: fmt.Sprintf(format, args...)}}}
}
