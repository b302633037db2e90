package patch

import (
	"regexp"
	"strings"
	"sync"
)

// Names of files that have no extension but are plainly files.
var bareFileNames = map[string]bool{
	"Makefile": true, "Dockerfile": true, "LICENSE": true, "README": true, "Gemfile": true, "Procfile": true,
	"Rakefile": true, "Jenkinsfile": true, "Vagrantfile": true, "CODEOWNERS": true, "Containerfile": true,
	"Justfile": true, "justfile": true, "makefile": true, "GNUmakefile": true, "Brewfile": true,
}

// pathLike reports whether s reads as a relative file path an answer names:
// no spaces, no URL, and a directory, an extension or a well-known name.
func pathLike(s string) bool {
	if s == "" || len(s) > 255 || strings.ContainsAny(s, " \t\"'<>|*?{}[]()$;,=!") || strings.Contains(s, "://") {
		return false
	}
	if strings.HasPrefix(s, "-") || strings.HasSuffix(s, "/") || strings.HasSuffix(s, ".") || strings.HasPrefix(s, "@") {
		return false
	}
	if strings.ContainsAny(s, "/\\") {
		base := s[strings.LastIndexAny(s, "/\\")+1:]
		return base != "" && base != ".." && !strings.Contains(s, ":")
	}
	if bareFileNames[s] {
		return true
	}
	dot := strings.LastIndexByte(s, '.')
	if dot <= 0 && !strings.HasPrefix(s, ".") {
		return false
	}
	ext := s[dot+1:]
	if ext == "" || len(ext) > 12 || strings.ContainsAny(ext, ":") {
		return false
	}
	// "e.g" or "i.e" are words, not files; a file's extension is letters and digits.
	for _, c := range ext {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return !strings.ContainsAny(s[:max(dot, 0)], ":")
}

var titleRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(?:title|file|filename|path)\s*=\s*["']?([^"'\s]+)["']?`)
})

// pathFromInfo reads a file path from a fence's info string: relay's header
// (` ```ts // src/a.ts `), a path after the language (` ```python app.py `), a
// path alone (` ```src/a.ts `), `lang:path` or `title="path"`.
func pathFromInfo(info string) string {
	info = strings.TrimSpace(info)
	if info == "" {
		return ""
	}
	if m := titleRe().FindStringSubmatch(info); m != nil && pathLike(cleanPath(m[1])) {
		return cleanPath(m[1])
	}
	lang, h, _ := splitInfo(info)
	if h != "" {
		if p, _, reason := parseHeader(h); reason == "" && pathLike(cleanPath(p)) || reason == "" && strings.ContainsAny(p, " ") && strings.ContainsAny(p, "/.") {
			return cleanPath(p)
		}
	}
	if _, p, ok := strings.Cut(lang, ":"); ok && pathLike(cleanPath(p)) {
		return cleanPath(p)
	}
	if strings.ContainsAny(lang, "/.") && pathLike(cleanPath(lang)) {
		return cleanPath(lang)
	}
	return ""
}

// pathFromLine reads a file path from a line that names one and nothing
// else: `src/a.ts`, `**src/a.ts**`, `### src/a.ts`, `File: src/a.ts`,
// `<path>src/a.ts</path>`, a comment holding only the path. "" otherwise.
func pathFromLine(l string) string {
	t := strings.TrimSpace(l)
	if t == "" || len(t) > 300 {
		return ""
	}
	if strings.HasPrefix(t, "<path>") && strings.HasSuffix(t, "</path>") {
		return cleanPathIf(strings.TrimSuffix(strings.TrimPrefix(t, "<path>"), "</path>"))
	}
	t = strings.TrimSpace(strings.TrimLeft(t, "#>"))
	for _, m := range []string{"- ", "+ ", "* ", "1. "} {
		t = strings.TrimPrefix(t, m)
	}
	for _, tok := range commentTokens {
		if strings.HasPrefix(t, tok) {
			t = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(t[len(tok):]), "-->"), "*/"))
			break
		}
	}
	for _, p := range []string{"File:", "file:", "Filename:", "filename:", "Path:", "path:", "FILE:", "In ", "Update ", "Create ", "New file:", "Modified file:"} {
		if r, ok := strings.CutPrefix(t, p); ok {
			t = strings.TrimSpace(r)
			break
		}
	}
	t = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(t), ":"))
	for _, q := range []string{"**", "__", "`", "*", "_", `"`, "'"} {
		if len(t) > 2*len(q) && strings.HasPrefix(t, q) && strings.HasSuffix(t, q) {
			t = strings.TrimSpace(t[len(q) : len(t)-len(q)])
		}
	}
	t = strings.TrimSpace(strings.TrimSuffix(t, ":"))
	return cleanPathIf(t)
}

func cleanPathIf(t string) string {
	p := cleanPath(t)
	if !pathLike(p) || !validPath(p) {
		return ""
	}
	return p
}

// pathBefore is the path named by the nearest non-blank line above line i
// (0-based), looking at most back lines up, never above stop.
func (a *answerText) pathBefore(i, stop, back int) (string, int) {
	for j := i - 1; j >= max(stop, 0) && j >= i-back; j-- {
		if isBlank(a.lines[j]) {
			continue
		}
		if p := pathFromLine(a.lines[j]); p != "" {
			return p, j
		}
		return "", -1
	}
	return "", -1
}
