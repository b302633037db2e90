package ask

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Limits of a request, in UTF-8 bytes; phone-a-friend's, so agents that know it fit.
const (
	MaxContextBytes = 200_000
	MaxDiffBytes    = 300_000
	MaxPromptBytes  = 500_000
)

// BuildEnvelope assembles the prompt a friend receives, in phone-a-friend's layout:
// lines joined with "\n", optional sections after an empty line, the whole
// text trimmed.
func BuildEnvelope(repo, prompt, context, diff string) string {
	lines := []string{
		"You are helping another coding agent by reviewing or advising on work in a local repository.",
		"Repository path: " + repo,
		"Use the repository files for context when needed.",
		"Respond with concise, actionable feedback.",
		"",
		"Request:",
		strings.TrimSpace(prompt),
	}
	if context != "" {
		lines = append(lines, "", "Additional Context:", context)
	}
	if diff != "" {
		lines = append(lines, "", "Git Diff:", diff)
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// tooLarge is the size error for one of the request's parts.
func tooLarge(label string, n, max int) *Error {
	return &Error{
		Message: fmt.Sprintf("%s is too large (%d bytes; max %d bytes)", label, n, max),
		Hint:    "reduce the size of your input or context (limits are in UTF-8 bytes)",
	}
}

// ParseDepth reads PHONE_A_FRIEND_DEPTH like Python's int(): surrounding
// whitespace, a sign and digit underscores are allowed; anything else is 0.
func ParseDepth(s string) int {
	s = strings.TrimFunc(s, unicode.IsSpace)
	sign := ""
	if s != "" && (s[0] == '+' || s[0] == '-') {
		sign, s = s[:1], s[1:]
	}
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return 0
	}
	digits := strings.ReplaceAll(s, "_", "")
	for _, r := range digits {
		if r < '0' || r > '9' {
			return 0
		}
	}
	n, err := strconv.Atoi(sign + digits)
	if err != nil { // only a range error is left: Python ints do not overflow
		if sign == "-" {
			return math.MinInt
		}
		return math.MaxInt
	}
	return n
}
