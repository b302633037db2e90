package ask

import (
	"fmt"
	"strconv"
	"strings"
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
	return buildEnvelope(repo, prompt, "", context, diff)
}

// buildEnvelope is BuildEnvelope with an optional "Shared Memory:" section after the request.
func buildEnvelope(repo, prompt, memory, context, diff string) string {
	lines := []string{
		"You are helping another coding agent by reviewing or advising on work in a local repository.",
		"Repository path: " + repo,
		"Use the repository files for context when needed.",
		"Respond with concise, actionable feedback.",
		"",
		"Request:",
		strings.TrimSpace(prompt),
	}
	if memory != "" {
		lines = append(lines, "", "Shared Memory:", memory)
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

// maxDepthDigits bounds PHONE_A_FRIEND_DEPTH: real nesting is a handful of levels.
const maxDepthDigits = 4

// ParseDepth reads PHONE_A_FRIEND_DEPTH. Unset or empty is depth 0; otherwise
// only plain ASCII digits (at most four, no sign, no spaces, no underscores)
// count. Anything else reports ok=false: the caller treats it as over the
// limit, because a value like "-5", "+3", " 1" or full-width "１" that
// parsed leniently would let agents recurse forever.
func ParseDepth(s string) (depth int, ok bool) {
	if s == "" {
		return 0, true
	}
	if len(s) > maxDepthDigits {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// validModel is the charset a --model value may use: model names look like
// gpt-5-codex, gemini-2.5-pro, qwen2.5-coder:7b, anthropic/claude-sonnet-4@2025.
// It starts with a letter or digit so it can never be read as a flag.
func validModel(m string) bool {
	if m == "" || len(m) > 128 {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && strings.IndexByte("._:/@+-", c) >= 0:
		default:
			return false
		}
	}
	return true
}
