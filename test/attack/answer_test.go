package attack

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/testsupport"
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
		{"git dir itself", ".git", "files inside .git/"},
		{"relaycode dir itself", ".relaycode", "relay's own records"},
		{"nested upper git hook", "sub/.GIT/hooks/pre-push", "files inside .git/"},
		{"dot dotdot mix", "a/./../../outside.txt", `".." is not allowed`},
		{"trailing dotdot", "a/..", `"a/.." is not a file`},
		{"backslash git", `.git\config`, "files inside .git/"},
		{"double slash absolute", "//etc/relay-attack", "absolute paths are not allowed"},
		{"proc self", "/proc/self/mem", "absolute paths are not allowed"},
	}
	for i, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			s := newCommittedProject(t, map[string]string{"README.md": "readme\n"})
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

// TestAnswerConfigChanges: the config names the commands relay runs
// (preCommand, postCommand, linter). An answer that touches it would choose
// what runs on the next apply, so -y and automatic approval never cover it:
// with no terminal to ask on relay refuses and names --allow-config-change.
func TestAnswerConfigChanges(t *testing.T) {
	evil := `{"projectId":"attack","core":{"enableNotifications":false},"patch":{"preCommand":"touch pre-pwned","postCommand":"touch post-pwned","linter":"touch lint-pwned"}}`
	attacks := []struct {
		name   string
		blocks []string
		args   []string
		config string // the project's config before; "" uses the plain one
	}{
		{"edit relaycode.config.json with -y", []string{FileBlock("relaycode.config.json", evil)}, []string{"-y"}, ""},
		{"edit relaycode.config.json with auto approval", []string{FileBlock("relaycode.config.json", evil)}, nil, ""},
		{"edit relaycode.config.json with approval yes", []string{FileBlock("relaycode.config.json", evil)}, nil, `{"projectId":"attack","approval":"yes","core":{"enableNotifications":false}}`},
		{"create relay.config.json", []string{FileBlock("relay.config.json", evil)}, []string{"-y"}, ""},
		{"create a config in a subdirectory", []string{FileBlock("sub/relaycode.config.json", evil)}, []string{"-y"}, ""},
		{"create an upper-case config name", []string{FileBlock("sub/RelayCode.Config.JSON", evil)}, []string{"-y"}, ""},
		{"delete the config", []string{DeleteBlock("relaycode.config.json")}, []string{"-y"}, ""},
		{"rename the config away", []string{RenameBlock("relaycode.config.json", "old.json")}, []string{"-y"}, ""},
		{"rename a file into a config", []string{FileBlock("x.json", evil), RenameBlock("x.json", "sub/relaycode.config.json")}, []string{"-y"}, ""},
		{"write a config through a file symlink", []string{FileBlock("cfg.json", evil)}, []string{"-y"}, ""},
		{"write a config through a directory symlink", []string{FileBlock("root/relaycode.config.json", evil)}, []string{"-y"}, ""},
		{"patch the config", []string{"```json // relaycode.config.json multi-search-replace\n<<<<<<< SEARCH\n{\"projectId\":\"attack\",\"core\":{\"enableNotifications\":false}}\n=======\n" + evil + "\n>>>>>>> REPLACE\n```\n"}, []string{"-y"}, ""},
	}
	for i, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			cfg := a.config
			if cfg == "" {
				cfg = `{"projectId":"attack","core":{"enableNotifications":false}}`
			}
			s.WriteFile("relaycode.config.json", cfg, 0o644)
			s.WriteFile("README.md", "readme\n", 0o644)
			symlink(t, "relaycode.config.json", filepath.Join(s.Project, "cfg.json"))
			symlink(t, ".", filepath.Join(s.Project, "root"))
			s.Git("add", "-A")
			s.Git("commit", "-qm", "base")
			world := s.World()
			r := s.Run(Answer(uuidN(600+i), a.blocks...), append([]string{"apply", "-"}, a.args...)...)
			refused := strings.Contains(r.Stderr, "names the commands relay runs") && strings.Contains(r.Stderr, "--allow-config-change") ||
				strings.Contains(a.name, "file symlink") && strings.Contains(r.Stderr, "it is a symbolic link")
			if r.Code == 0 || !refused {
				t.Errorf("want the config change refused without a person, naming --allow-config-change; got\n%s", r)
			}
			SameTree(t, "home and project", world, s.World())
			// The next apply runs nothing the answer chose.
			r = s.Run(Answer(uuidN(650+i), FileBlock("README.md", "next")), "apply", "-", "-y")
			if r.Code != 0 {
				t.Errorf("the next apply failed:\n%s", r)
			}
			noPwned(t, s)
		})
	}
}

// TestAnswerConfigChangeExplicit: with --allow-config-change the change is
// applied, and the commands of that very transaction still come from the
// config as it was when it started.
func TestAnswerConfigChangeExplicit(t *testing.T) {
	s := newSandbox(t)
	s.WriteFile("relaycode.config.json", `{"projectId":"attack","core":{"enableNotifications":false},"patch":{"postCommand":"echo old >> post-ran"}}`, 0o644)
	if r := s.Run("", "trust"); r.Code != 0 { // the person trusts this config: its command is theirs
		t.Fatalf("relay trust:\n%s", r)
	}
	s.Git("add", "-A")
	s.Git("commit", "-qm", "base")
	evil := `{"projectId":"attack","core":{"enableNotifications":false},"patch":{"postCommand":"touch post-pwned","linter":"touch lint-pwned"}}`
	r := s.Run(Answer(uuidN(700), FileBlock("relaycode.config.json", evil)), "apply", "-", "-y", "--allow-config-change")
	if r.Code != 0 {
		t.Fatalf("want the explicitly allowed config change applied:\n%s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(s.Project, "post-ran")); string(b) != "old\n" {
		t.Errorf("post-ran = %q; the transaction must run the old config's postCommand once", b)
	}
	for _, f := range []string{"post-pwned", "lint-pwned"} {
		if _, err := os.Stat(filepath.Join(s.Project, f)); err == nil {
			t.Errorf("%s exists: the new config's commands ran inside the transaction that introduced them", f)
		}
	}
}

// TestAnswerRenames: a rename onto an existing file would lose that file
// without a word. It is refused unless the answer deletes the target first,
// whatever format says "rename": relay's rename-file block or a git diff's
// "rename to". (A codex "*** Move to:" is different: codex defines it as
// replacing the target, so relay does too; see TestAnswerCodexMoveReplaces.)
func TestAnswerRenames(t *testing.T) {
	attacks := []struct {
		name   string
		blocks []string
		ok     bool
		diff   string // a bare git diff sent as the whole answer, instead of blocks
	}{
		{"rename onto an existing file", []string{RenameBlock("a.txt", "b.txt")}, false, ""},
		{"rename onto the config", []string{RenameBlock("a.txt", "README.md")}, false, ""},
		{"rename onto a file the answer just wrote", []string{FileBlock("new.txt", "n"), RenameBlock("a.txt", "new.txt")}, false, ""},
		{"rename onto an existing file in another case dir", []string{RenameBlock("a.txt", "dir/c.txt")}, false, ""},
		{"git diff rename to an existing file", nil, false, GitRename("a.txt", "b.txt")},
		{"rename onto a deleted file", []string{DeleteBlock("b.txt"), RenameBlock("a.txt", "b.txt")}, true, ""},
		{"rename to a new name", []string{RenameBlock("a.txt", "fresh.txt")}, true, ""},
	}
	for i, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			s := renameSandbox(t)
			world := s.World()
			answer := a.diff
			if answer == "" {
				answer = Answer(uuidN(800+i), a.blocks...)
			}
			r := s.Run(answer, "apply", "-", "-y")
			if a.ok {
				if r.Code != 0 {
					t.Fatalf("want applied:\n%s", r)
				}
				return
			}
			if r.Code == 0 || !strings.Contains(r.Stderr, "which exists; relay does not replace a file by renaming onto it") {
				t.Errorf("want the rename refused, got\n%s", r)
			}
			SameTree(t, "home and project", world, s.World())
		})
	}
}

// TestAnswerCodexMoveReplaces: codex's apply_patch defines "*** Move to:"
// onto an existing file as replacing it (issue 24). The attack is that the
// replaced file is lost; relay's answer is that the transaction keeps it, so
// relay revert brings back both files byte for byte.
func TestAnswerCodexMoveReplaces(t *testing.T) {
	s := renameSandbox(t)
	world := s.World()
	move := "```diff // a.txt apply_patch\n*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-a\n+a2\n*** End Patch\n```\n"
	r := s.Run(Answer(uuidN(850), move), "apply", "-", "-y")
	if r.Code != 0 {
		t.Fatalf("want the codex move applied:\n%s", r)
	}
	if !strings.Contains(r.Stdout+r.Stderr, "replacing the b.txt that was there") {
		t.Errorf("want the replacement said out loud, got\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(s.Project, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a.txt still exists after the move: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(s.Project, "b.txt")); string(b) != "a2\n" {
		t.Errorf("b.txt = %q, want the moved and edited a.txt", b)
	}
	if r := s.Run("", "revert", "-y"); r.Code != 0 {
		t.Fatalf("revert failed:\n%s", r)
	}
	SameTree(t, "home and project after revert", world, s.World())
}

// renameSandbox is a committed project with a.txt, b.txt, README.md and
// dir/c.txt for a rename to land on.
func renameSandbox(t *testing.T) *sandbox {
	t.Helper()
	s := newCommittedProject(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "README.md": "readme\n", "dir/c.txt": "c\n"})
	return s
}

// TestAnswerInputBounds: relay apply reads its input under a limit it
// states, checking a file's size before reading it, and Ctrl-C interrupts a
// read that never ends (a FIFO with no writer, a stdin that stalls).
func TestAnswerInputBounds(t *testing.T) {
	s := newSandbox(t)
	s.WriteFile("relaycode.config.json", `{"projectId":"attack","core":{"enableNotifications":false}}`, 0o644)

	t.Run("sparse 3 GB file", func(t *testing.T) {
		big := filepath.Join(s.Home, "big.md")
		f, err := os.Create(big)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(3 << 30); err != nil { // sparse: costs no disk
			t.Fatal(err)
		}
		f.Close()
		r := s.Run("", "apply", big)
		if r.Code == 0 || !strings.Contains(r.Stderr, "over the 64 MiB limit") {
			t.Errorf("want the size refused with the limit:\n%s", r)
		}
	})
	t.Run("stdin over the limit", func(t *testing.T) {
		cmd := exec.Command(relayBin, "apply", "-")
		cmd.Dir, cmd.Env = s.Project, s.Env
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errOut strings.Builder
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range 65 {
			if _, err := in.Write(chunk); err != nil {
				break // relay stopped reading: fine
			}
		}
		in.Close()
		err = cmd.Wait()
		if err == nil || !strings.Contains(errOut.String(), "over the 64 MiB limit") {
			t.Errorf("want the size refused: %v\n%s", err, errOut.String())
		}
	})
	t.Run("fifo with no writer and Ctrl-C", func(t *testing.T) {
		fifo := filepath.Join(s.Home, "answer.fifo")
		if err := testsupport.Mkfifo(t, fifo, 0o600); err != nil {
			t.Skip("no FIFOs here:", err)
		}
		cmd := exec.Command(relayBin, "apply", fifo)
		cmd.Dir, cmd.Env = s.Project, s.Env
		var errOut strings.Builder
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// relay is blocked opening the FIFO once a thread waits for a writer.
		waitFor(t, "relay to block opening the FIFO", func() bool { return blockedIn(cmd.Process.Pid, "fifo_open", "wait_for_partner") })
		interrupt(t, cmd, &errOut)
	})
	t.Run("stalled stdin and Ctrl-C", func(t *testing.T) {
		cmd := exec.Command(relayBin, "apply", "-")
		cmd.Dir, cmd.Env = s.Project, s.Env
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		var errOut strings.Builder
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := in.Write([]byte("```text // a.txt\nhalf an answer")); err != nil {
			t.Fatal(err)
		}
		// relay has read what was sent once the pipe is empty: it is in its read loop.
		w := in.(*os.File)
		if _, err := pipeQueued(w); err != nil {
			t.Skip("cannot see how much of a pipe is unread here:", err)
		}
		waitFor(t, "relay to drain stdin", func() bool { n, err := pipeQueued(w); return err == nil && n == 0 })
		interrupt(t, cmd, &errOut)
	})
}

// interrupt sends SIGINT and expects relay to stop with exit 130 and a message.
func interrupt(t *testing.T, cmd *exec.Cmd, errOut *strings.Builder) {
	t.Helper()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(errOut.String(), "interrupted while reading the response") {
			t.Errorf("want exit 130 and a message, got %v\n%s", err, errOut.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("relay ignored Ctrl-C while reading its input\n%s", errOut.String())
	}
}

// waitFor polls a condition (never a fixed delay) for up to a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 6000 {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// blockedIn reports whether any thread of pid sleeps in one of the kernel
// functions named. Where the kernel hides wchan ("0"), a thread sitting in
// openat(2) past relay's start-up counts instead.
func blockedIn(pid int, fns ...string) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	hidden := true
	for _, task := range tasks {
		b, _ := os.ReadFile(filepath.Join(task, "wchan"))
		if len(b) > 0 && string(b) != "0" {
			hidden = false
		}
		for _, fn := range fns {
			if string(b) == fn {
				return true
			}
		}
	}
	if !hidden {
		return false
	}
	openat := map[string]string{"amd64": "257", "arm64": "56", "386": "295", "riscv64": "56"}[runtime.GOARCH]
	for _, task := range tasks {
		b, _ := os.ReadFile(filepath.Join(task, "syscall"))
		if f := strings.Fields(string(b)); len(f) > 0 && f[0] == openat {
			return true
		}
	}
	return false
}

// TestAnswerLeadingWhitespaceRevertable: files that begin with a tab (a Makefile
// fragment), with spaces or with a blank line were applied and recorded, but the record
// could not be read back (yaml.v3 writes such text as a block it cannot parse): relay log
// left the transaction out and relay revert could not undo it. Both must work, and the
// revert must bring every byte back.
func TestAnswerLeadingWhitespaceRevertable(t *testing.T) {
	s := newCommittedProject(t, map[string]string{"rules.mk": "\tgo build ./...\n\tgo vet ./...\n",
		"indented.txt": "    four spaces\nthen none\n", "blank.txt": "\nafter a blank line\n"})
	world := s.World()
	r := s.Run(Answer(uuidN(870),
		FileBlock("rules.mk", "\tgo build ./...\n\tgo test ./..."),
		FileBlock("indented.txt", "    four spaces\nthen one more line"),
		FileBlock("blank.txt", "\nafter a blank line, changed")), "apply", "-", "-y")
	if r.Code != 0 {
		t.Fatalf("want the answer applied:\n%s", r)
	}
	if r := s.Run("", "log"); r.Code != 0 || !strings.Contains(r.Stdout, uuidN(870)[:8]) {
		t.Fatalf("want the transaction in relay log:\n%s", r)
	}
	if r := s.Run("", "revert", "-y"); r.Code != 0 {
		t.Fatalf("revert failed:\n%s", r)
	}
	SameTree(t, "home and project after revert", world, s.World())
}

// newCommittedProject is a sandbox whose project holds relay's plain config and files
// (mode 0644), all committed as "base".
func newCommittedProject(t *testing.T, files map[string]string) *sandbox {
	t.Helper()
	s := newSandbox(t)
	s.WriteFile("relaycode.config.json", `{"projectId":"attack","core":{"enableNotifications":false}}`, 0o644)
	for name, content := range files {
		s.WriteFile(name, content, 0o644)
	}
	s.Git("add", "-A")
	s.Git("commit", "-qm", "base")
	return s
}

// TestLegacyTabRecordRevertable: a record written by a relay from before texts starting
// with white space were quoted holds a Makefile's tab-first text as a literal block
// yaml.v3 cannot parse. relay log must list that transaction and relay revert undo it,
// byte for byte (before the mend, log left it out and revert found nothing to undo).
func TestLegacyTabRecordRevertable(t *testing.T) {
	s := newCommittedProject(t, map[string]string{"rules.mk": "\tgo build ./...\n\tgo vet ./...\n"})
	world := s.World()
	id := uuidN(871)
	if r := s.Run(Answer(id, FileBlock("rules.mk", "\tgo build ./...\n\tgo test ./...")), "apply", "-", "-y"); r.Code != 0 {
		t.Fatalf("want the answer applied:\n%s", r)
	}
	// Rewrite the record as the older relay wrote it: the quoted texts as literal blocks,
	// sealed with this machine's key as relay seals what it writes.
	rec := filepath.Join(s.Project, ".relaycode", id+".yml")
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	key, err := txn.ReadRecordKey(s.Relay)
	if err != nil || key == nil {
		t.Fatalf("the record key: %v", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	body := doc.Content[0]
	for i := 0; i+1 < len(body.Content); i += 2 {
		if body.Content[i].Value == "seal" { // the seal of the record as it is now
			body.Content = append(body.Content[:i], body.Content[i+2:]...)
			break
		}
	}
	unquoted := 0
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && n.Style == yaml.DoubleQuotedStyle && strings.HasPrefix(n.Value, "\t") && strings.Contains(n.Value, "\n") {
			n.Style = yaml.LiteralStyle
			unquoted++
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)
	var out strings.Builder
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	if unquoted == 0 || yaml.Unmarshal([]byte(out.String()), new(any)) == nil {
		t.Fatalf("want a record yaml.v3 cannot read (%d texts unquoted):\n%s", unquoted, out.String())
	}
	if err := os.WriteFile(rec, txn.SealRecord(key, []byte(out.String())), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := s.Run("", "log"); r.Code != 0 || !strings.Contains(r.Stdout, id[:8]) {
		t.Fatalf("want the older record's transaction in relay log:\n%s", r)
	}
	if r := s.Run("", "revert", "-y"); r.Code != 0 {
		t.Fatalf("revert failed:\n%s", r)
	}
	SameTree(t, "home and project after revert", world, s.World())
}
