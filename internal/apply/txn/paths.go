package txn

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// StateDir is the project directory that holds relay's transaction records.
const StateDir = ".relaycode"

// PathError is a path from a response that relay refuses to touch.
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("refusing path %q: %s", e.Path, e.Reason)
}

// CleanPath checks an untrusted, slash-separated project path and returns its
// clean form. It refuses absolute paths, "..", and anything inside .git/ or
// .relaycode/; symlinks are checked when the file is opened through the root.
func CleanPath(p string) (string, error) {
	switch {
	case strings.TrimSpace(p) == "":
		return "", &PathError{p, "the path is empty"}
	case strings.ContainsRune(p, 0):
		return "", &PathError{p, "the path contains a NUL byte"}
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.IsAbs(p) || filepath.VolumeName(p) != "" || hasDriveLetter(p):
		return "", &PathError{p, "absolute paths are not allowed; use a path relative to the project root"}
	}
	slashed := strings.ReplaceAll(p, `\`, "/")
	for _, el := range strings.Split(slashed, "/") {
		if el == ".." {
			return "", &PathError{p, `".." is not allowed; paths must stay inside the project`}
		}
	}
	clean := path.Clean(slashed)
	if clean == "." {
		return "", &PathError{p, "the path names the project root, not a file"}
	}
	for _, el := range strings.Split(clean, "/") {
		if strings.EqualFold(el, ".git") {
			return "", &PathError{p, "files inside .git/ are managed by git, not by patches"}
		}
	}
	if first, _, _ := strings.Cut(clean, "/"); strings.EqualFold(first, StateDir) {
		return "", &PathError{p, "files inside .relaycode/ are relay's own records"}
	}
	return clean, nil
}

func hasDriveLetter(p string) bool {
	return len(p) >= 2 && p[1] == ':' && (p[0] >= 'a' && p[0] <= 'z' || p[0] >= 'A' && p[0] <= 'Z')
}

// parentDirs lists the ancestors of a clean path, outermost first ("a", "a/b").
func parentDirs(p string) []string {
	var dirs []string
	for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
		dirs = append([]string{d}, dirs...)
	}
	return dirs
}
