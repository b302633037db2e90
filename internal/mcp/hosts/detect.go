package hosts

import (
	"os"
	"path/filepath"
	"strings"
)

// Detection is what Detect found of a host on this machine.
type Detection struct {
	Installed bool
	// Evidence names what was found ("codex on PATH", "~/.gemini"), or what was looked for
	// when nothing was ("no gemini on PATH, no ~/.gemini").
	Evidence string
}

// Detect reports whether host is installed for this user: its command on PATH, or the user
// directory it keeps its settings in. Either is enough; a config relay would write for a
// host that has neither only waits for it to be installed.
func Detect(host string, env Env) Detection {
	var looked []string
	if p := lookPath(host, env.getenv("PATH")); p != "" {
		return Detection{Installed: true, Evidence: host + " on PATH (" + p + ")"}
	}
	looked = append(looked, "no "+host+" on PATH")
	for _, d := range userDirs(host, env) {
		if _, err := os.Stat(d); err == nil {
			return Detection{Installed: true, Evidence: tilde(d, env.Home)}
		}
		looked = append(looked, "no "+tilde(d, env.Home))
	}
	return Detection{Evidence: strings.Join(looked, ", ")}
}

// lookPath is exec.LookPath over the given PATH (Env's, not necessarily the process's).
func lookPath(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// userDirs are where a host keeps its user settings.
func userDirs(host string, env Env) []string {
	switch host {
	case "claude":
		if d := env.getenv("CLAUDE_CONFIG_DIR"); d != "" {
			return []string{d}
		}
		return []string{filepath.Join(env.Home, ".claude"), filepath.Join(env.Home, ".claude.json")}
	case "codex":
		if d := env.getenv("CODEX_HOME"); d != "" {
			return []string{d}
		}
		return []string{filepath.Join(env.Home, ".codex")}
	case "gemini", "qwen":
		return []string{filepath.Join(env.Home, "."+host)}
	}
	return nil
}

// tilde shortens a path under home to ~/….
func tilde(p, home string) string {
	if home != "" {
		if rel, err := filepath.Rel(home, p); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.Join("~", rel)
		}
	}
	return p
}
