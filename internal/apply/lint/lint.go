// Package lint counts the errors a linter or compiler reported, from its
// output and exit code, for the formats of the common tools.
package lint

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// The patterns compile on first use: package init runs for every relay command.
var (
	// tsc: "Found 3 errors." / "Found 1 error in src/a.ts:3".
	tscFound = lazyRE(`(?m)\bFound (\d+) errors?\b`)
	// eslint: "✖ 5 problems (3 errors, 2 warnings)".
	eslintProblems = lazyRE(`(?m)(?:✖|x)\s*\d+ problems? \((\d+) errors?`)
	// Generic summaries: "3 errors", "1 error(s)", "error count: 2" is not matched on purpose.
	nErrors = lazyRE(`(?mi)\b(\d+) errors?(?:\(s\))?\b`)
	// file:line:col: diagnostics from go vet, gcc, clang, ruff, rustc short format, mypy with columns.
	locLine = lazyRE(`^\s*[^\s:][^:]*:\d+:\d+:?\s`)
	// file:line: diagnostics without a column (go build's "./a.go:3: …", flake8 -q, shells).
	locLineNoCol = lazyRE(`^\s*[^\s:][^:]*:\d+:\s`)
	// tsc non-pretty: "src/a.ts(3,5): error TS2322: ...".
	tscLoc = lazyRE(`^\s*\S.*\(\d+,\d+\): error\b`)
	// lines gcc/clang print for context that are not errors.
	nonError = lazyRE(`:\s*(?:warning|note|info|hint):`)
)

// Count returns how many errors a linter run reported. Exit code 0 means 0
// errors whatever the output says; a failing run whose output has no
// recognisable count counts as 1, so a failure is never mistaken for success.
func Count(stdout, stderr string, exitCode int) int {
	if exitCode == 0 {
		return 0
	}
	out := stdout + "\n" + stderr
	if n, ok := lastInt(tscFound(), out); ok {
		return atLeastOne(n)
	}
	if n, ok := lastInt(eslintProblems(), out); ok {
		return atLeastOne(n)
	}
	if n, ok := lastInt(nErrors(), out); ok {
		return atLeastOne(n)
	}
	locs := 0
	for line := range strings.Lines(out) {
		if (locLine().MatchString(line) || tscLoc().MatchString(line)) && !nonError().MatchString(line) {
			locs++
		}
	}
	return atLeastOne(locs)
}

// lastInt returns the number in the last match: summaries come at the end.
func lastInt(re *regexp.Regexp, s string) (int, bool) {
	all := re.FindAllStringSubmatch(s, -1)
	if len(all) == 0 {
		return 0, false
	}
	n, err := strconv.Atoi(all[len(all)-1][1])
	if err != nil {
		return 0, false
	}
	return n, true
}

// atLeastOne: the command failed, so it found at least one problem.
func atLeastOne(n int) int {
	return max(n, 1)
}

func lazyRE(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// Diagnostics returns the error lines of a linter run (file:line: message, tsc's
// file(line,col): error …), without warnings, notes or repeats, in the order reported.
// A failing run with no such line gives its last non-empty output line, so a person sees
// what the linter said.
func Diagnostics(stdout, stderr string, exitCode int) []string {
	if exitCode == 0 {
		return nil
	}
	out := stdout + "\n" + stderr
	var lines []string
	seen := map[string]bool{}
	last := ""
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) != "" {
			last = strings.TrimSpace(line)
		}
		if (locLine().MatchString(line+" ") || locLineNoCol().MatchString(line+" ") || tscLoc().MatchString(line)) && !nonError().MatchString(line) && !seen[line] {
			seen[line] = true
			lines = append(lines, printable(strings.TrimSpace(line)))
		}
	}
	if len(lines) == 0 && last != "" {
		lines = []string{printable(last)}
	}
	return lines
}

// printable replaces control characters (a linter quotes the project's text, which may
// hold terminal escapes) and caps the line at 300 bytes.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return '?'
		}
		return r
	}, s)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
