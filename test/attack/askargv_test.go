package attack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 22 row 7: gemini and qwen got the whole prompt (context file, diff,
// header) in argv, up to 100 KB, where any local user reads it in
// /proc/<pid>/cmdline. Every friend must get it on stdin (from a file only
// the user can read), never in argv. Each fake friend below records its own
// /proc cmdline, the mode of what its stdin is, and what it read there.
func TestAskPromptNeverInArgv(t *testing.T) {
	const secret = "SECRET-IN-THE-PROMPT-7f3a"
	for _, friend := range []string{"codex", "claude", "gemini", "qwen", "opencode", "agy"} {
		t.Run(friend, func(t *testing.T) {
			s := newSandbox(t)
			bin := filepath.Join(s.Home, "bin")
			rec := filepath.Join(s.Home, "rec")
			s.WriteFileAbs(filepath.Join(bin, friend), fmt.Sprintf(`#!/bin/sh
tr '\0' '\n' < /proc/$$/cmdline > %[1]s/argv
stat -L -c '%%a %%F' /proc/$$/fd/0 > %[1]s/stdin-mode
readlink /proc/$$/fd/0 > %[1]s/stdin-link
cat > %[1]s/stdin
exit 3
`, rec), 0o755)
			if err := os.MkdirAll(rec, 0o700); err != nil {
				t.Fatal(err)
			}
			s.Env = append(s.Env, "PATH="+bin+":/usr/bin:/bin")
			// every way the prompt can carry a secret: the question, inline context, a context file
			s.WriteFile("notes.md", "context file with "+secret+"\n", 0o644)
			r := s.Run("", "ask", "--to", friend, "--prompt", "review "+secret, "--context-file", "notes.md", "--timeout", "30")
			if r.Code == 0 {
				t.Fatalf("the fake %s fails; relay ask succeeded: %s", friend, r)
			}
			argv, err := os.ReadFile(filepath.Join(rec, "argv"))
			if err != nil {
				t.Fatalf("%s never ran: %v\n%s", friend, err, r)
			}
			if strings.Contains(string(argv), secret) || strings.Contains(string(argv), "Request:") {
				t.Errorf("%s got the prompt in argv, readable by any local user in /proc/<pid>/cmdline:\n%s", friend, argv)
			}
			stdin, _ := os.ReadFile(filepath.Join(rec, "stdin"))
			if strings.Count(string(stdin), secret) != 2 {
				t.Errorf("%s did not get the whole prompt on stdin (%d bytes)", friend, len(stdin))
			}
			// A 0600 file, or (Linux) a memfd: it has no path another user could open, only
			// /proc/<pid>/fd, which needs the right to trace the friend.
			mode, _ := os.ReadFile(filepath.Join(rec, "stdin-mode"))
			link, _ := os.ReadFile(filepath.Join(rec, "stdin-link"))
			memfd := strings.HasPrefix(string(link), "/memfd:")
			if got := strings.TrimSpace(string(mode)); got != "600 regular file" && !memfd {
				t.Errorf("%s's stdin is %q (%s), want a 0600 regular file or a memfd", friend, got, strings.TrimSpace(string(link)))
			}
		})
	}
}
