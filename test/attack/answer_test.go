package attack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A hostile answer: paths an LLM (or whoever wrote the text on the
// clipboard) chose to reach outside the project, into git's or relay's own
// records, or through links. Each is refused before anything is written, and
// the project and home stay byte-identical.
func TestAnswerPathEscapes(t *testing.T) {
	attacks := []struct {
		name, path, want string
	}{
		{"dotdot", "../outside.txt", `".." is not allowed`},
		{"dotdot to home bashrc", "../.bashrc", `".." is not allowed`},
		{"dotdot deep", "a/b/../../../outside.txt", `".." is not allowed`},
		{"dotdot backslash", `..\outside.txt`, `".." is not allowed`},
		{"absolute", "/tmp/relay-attack-abs.txt", "absolute paths are not allowed"},
		{"absolute home", "~/.bashrc", ""},
		{"backslash absolute", `\tmp\x.txt`, "absolute paths are not allowed"},
		{"drive letter", `C:\x.txt`, "absolute paths are not allowed"},
		{"git config", ".git/config", "files inside .git/"},
		{"git hook", ".git/hooks/pre-commit", "files inside .git/"},
		{"git upper case", ".GIT/config", "files inside .git/"},
		{"nested git", "sub/.git/config", "files inside .git/"},
		{"dot slash git", "./.git/config", "files inside .git/"},
		{"relaycode record", ".relaycode/11111111-1111-4111-8111-111111111111.pending.yml", "relay's own records"},
		{"relaycode dir", ".relaycode/x", "relay's own records"},
		{"relaycode upper", ".RelayCode/x", "relay's own records"},
	}
	for i, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			s := newSandbox(t)
			s.WriteFile("relaycode.config.json", `{"projectId":"attack","core":{"enableNotifications":false}}`, 0o644)
			s.WriteFile("README.md", "readme\n", 0o644)
			s.Git("add", "-A")
			s.Git("commit", "-qm", "base")
			home := s.World()
			ans := Answer(uuidN(100+i), FileBlock(a.path, "pwned"))
			r := s.Run(ans, "apply", "-", "-y")
			if strings.HasPrefix(a.path, "~") {
				// "~" is an ordinary file name inside the project, never the home directory.
				if r.Code != 0 {
					t.Fatalf("want a project file named %q, got\n%s", a.path, r)
				}
				if _, err := os.Stat(filepath.Join(s.Project, "~", ".bashrc")); err != nil {
					t.Fatalf("want ~/.bashrc inside the project: %v", err)
				}
				return
			}
			if r.Code == 0 || !strings.Contains(r.Stderr, a.want) {
				t.Fatalf("want refusal %q, got\n%s", a.want, r)
			}
			SameTree(t, "home and project", home, s.World())
		})
	}
}
