package hosts

import (
	"fmt"
	"strings"
)

// UnifiedDiff shows a change as one unified-diff hunk with three lines of
// context: the edits relay makes to a config file are one contiguous region.
func UnifiedDiff(c Change) string {
	oldName, newName := c.Path, c.Path
	if c.Old == nil {
		oldName = "/dev/null"
	}
	if c.New == nil {
		newName = "/dev/null"
	}
	a, b := splitKeep(string(c.Old)), splitKeep(string(c.New))
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	if pre == len(a) && pre == len(b) {
		return ""
	}
	const ctx = 3
	from := max(0, pre-ctx)
	aEnd := min(len(a), len(a)-suf+ctx)
	bEnd := min(len(b), len(b)-suf+ctx)
	var s strings.Builder
	fmt.Fprintf(&s, "--- %s\n+++ %s\n", oldName, newName)
	fmt.Fprintf(&s, "@@ -%s +%s @@\n", hunkRange(from, aEnd-from), hunkRange(from, bEnd-from))
	line := func(prefix, l string) {
		s.WriteString(prefix)
		s.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			s.WriteString("\n\\ No newline at end of file\n")
		}
	}
	for _, l := range a[from:pre] {
		line(" ", l)
	}
	for _, l := range a[pre : len(a)-suf] {
		line("-", l)
	}
	for _, l := range b[pre : len(b)-suf] {
		line("+", l)
	}
	for _, l := range a[len(a)-suf : aEnd] {
		line(" ", l)
	}
	return s.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func splitKeep(s string) []string {
	if s == "" {
		return nil
	}
	return strings.SplitAfter(s, "\n")[:strings.Count(s, "\n")+boolInt(!strings.HasSuffix(s, "\n"))]
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
