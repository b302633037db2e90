package attack

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/testsupport"
)

// A hostile repository as `relay install` sees it: host settings files a
// clone carries (.mcp.json, .gemini/, .codex/config.toml) may be links to
// the user's credentials or FIFOs; a user's own settings may be links a
// dotfile manager made, or files the host rewrites while relay edits them.

// installEnv is the sandbox's environment with every host's directory in
// its fake home (no CLAUDE_CONFIG_DIR or CODEX_HOME from the machine).
func installEnv(s *sandbox) {
	s.Env = append(s.Env, "CLAUDE_CONFIG_DIR=", "CODEX_HOME=")
}

// TestInstallProjectLinks (issue 22 row 5): project scope refuses a link
// anywhere on the path, so a clone cannot make relay copy a credential into
// the project or write outside it; user scope writes through a link at its
// target and never replaces the link.
func TestInstallProjectLinks(t *testing.T) {
	cases := []struct {
		name, host string
		plant      func(s *sandbox)
	}{
		{"mcp.json links to claude credentials", "claude", func(s *sandbox) {
			s.WriteFileAbs(filepath.Join(s.Home, ".claude", ".credentials.json"), `{"claudeAiOauth":{"accessToken":"sk-ant-oat-SECRET"}}`, 0o600)
			link(t, filepath.Join(s.Home, ".claude", ".credentials.json"), filepath.Join(s.Project, ".mcp.json"))
		}},
		{"gemini settings link to a home file", "gemini", func(s *sandbox) {
			s.WriteFileAbs(filepath.Join(s.Home, "tokens.json"), `{"token":"SECRET"}`, 0o600)
			s.WriteFile(".gemini/.keep", "", 0o644)
			link(t, filepath.Join(s.Home, "tokens.json"), filepath.Join(s.Project, ".gemini", "settings.json"))
		}},
		{"qwen dir links outside the project", "qwen", func(s *sandbox) {
			s.WriteFileAbs(filepath.Join(s.Home, "outside", "settings.json"), `{"token":"SECRET"}`, 0o600)
			link(t, filepath.Join(s.Home, "outside"), filepath.Join(s.Project, ".qwen"))
		}},
		{"codex dir links to the home codex config", "codex", func(s *sandbox) {
			s.WriteFileAbs(filepath.Join(s.Home, ".codex", "config.toml"), "model = \"o3\"\n", 0o600)
			link(t, filepath.Join(s.Home, ".codex"), filepath.Join(s.Project, ".codex"))
		}},
		{"claude commands dir links to home", "claude", func(s *sandbox) {
			s.WriteFile(".claude/.keep", "", 0o644)
			link(t, s.Home, filepath.Join(s.Project, ".claude", "commands"))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			installEnv(s)
			tc.plant(s)
			world := s.World()
			r := s.Run("", "install", tc.host, "--scope", "project", "--command", "relay")
			if r.Code == 0 || !strings.Contains(r.Stderr, "symbolic link") {
				t.Errorf("install through a project link must be refused, naming the link:\n%s", r)
			}
			SameTree(t, "install "+tc.host, world, s.World())
			noSecretInProject(t, s)
		})
	}

	t.Run("user settings link is written through, not replaced", func(t *testing.T) {
		t.Parallel()
		s := newSandbox(t)
		installEnv(s)
		real := filepath.Join(s.Home, "dotfiles", "claude.json")
		s.WriteFileAbs(real, "{\n  \"theme\": \"dark\"\n}\n", 0o600)
		link(t, real, filepath.Join(s.Home, ".claude.json"))
		if r := s.Run("", "install", "claude", "--command", "relay"); r.Code != 0 {
			t.Fatalf("install:\n%s", r)
		}
		if fi, err := os.Lstat(filepath.Join(s.Home, ".claude.json")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("~/.claude.json is no longer the user's link (%v)", err)
		}
		b, _ := os.ReadFile(real)
		if !strings.Contains(string(b), `"relay"`) || !strings.Contains(string(b), `"theme"`) {
			t.Fatalf("the link's target was not edited in place:\n%s", b)
		}
		if fi, _ := os.Stat(real); fi.Mode().Perm() != 0o600 {
			t.Errorf("target mode %v, want 0600 kept", fi.Mode().Perm())
		}
	})
}

func link(t *testing.T, target, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

// noSecretInProject fails when a bait secret reached a regular file in the project.
func noSecretInProject(t *testing.T, s *sandbox) {
	t.Helper()
	_ = filepath.WalkDir(s.Project, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "SECRET") {
			t.Errorf("a secret was copied into the project: %s", p)
		}
		return nil
	})
}

// TestInstallEditsOnlyRelaysEntry (issue 22 row 10): relay finds its table
// with a TOML parser and removes every copy of a duplicate JSON key.
func TestInstallEditsOnlyRelaysEntry(t *testing.T) {
	toml := []struct{ name, doc, keep string }{
		{"a server named relay.dev is not relay's", "[mcp_servers.\"relay.dev\"]\ncommand = \"theirs\"\nargs = []\n", `[mcp_servers."relay.dev"]`},
		{"an escaped quote in a multi-line string", "[notes]\ntext = \"\"\"a \\\"\"\" b\n[mcp_servers.relay]\nnot = \"a table\"\n\"\"\"\n\n[profiles.fast]\nmodel = \"mini\"\n", "[profiles.fast]"},
		{"relay's table before a multi-line string", "model = \"o3\"\n\n[mcp_servers.relay]\ncommand = \"old\"\n\n[z]\ns = \"\"\"\nq \\\"\"\"\n\"\"\"\n\n[y]\nk = 2\n", "[y]"},
	}
	for _, tc := range toml {
		t.Run("codex: "+tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			installEnv(s)
			cfg := filepath.Join(s.Home, ".codex", "config.toml")
			s.WriteFileAbs(cfg, tc.doc, 0o600)
			if r := s.Run("", "install", "codex", "--command", "relay"); r.Code != 0 {
				t.Fatalf("install:\n%s", r)
			}
			if r := s.Run("", "uninstall", "codex"); r.Code != 0 {
				t.Fatalf("uninstall:\n%s", r)
			}
			b, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatalf("uninstall removed the whole config.toml: %v", err)
			}
			if !strings.Contains(string(b), tc.keep) {
				t.Errorf("%s is gone after install and uninstall:\n%s", tc.keep, b)
			}
			if strings.Contains(string(b), "[mcp_servers.relay]\ncommand = \"relay\"") {
				t.Errorf("relay is still registered after uninstall:\n%s", b)
			}
			if r := s.Run("", "install", "codex", "--command", "relay"); r.Code != 0 {
				t.Fatalf("install again:\n%s", r)
			}
			b, _ = os.ReadFile(cfg)
			if strings.Count(string(b), `command = "relay"`) != 1 {
				t.Errorf("relay's table is not there exactly once:\n%s", b)
			}
		})
	}
	t.Run("claude: duplicate relay keys", func(t *testing.T) {
		t.Parallel()
		s := newSandbox(t)
		installEnv(s)
		cfg := filepath.Join(s.Home, ".claude.json")
		s.WriteFileAbs(cfg, `{"mcpServers": {"relay": {"command": "old-a"}, "other": {"command": "x"}, "relay": {"command": "old-b"}}}`, 0o600)
		if r := s.Run("", "uninstall", "claude"); r.Code != 0 {
			t.Fatalf("uninstall:\n%s", r)
		}
		var v struct {
			MCPServers map[string]any `json:"mcpServers"`
		}
		b, _ := os.ReadFile(cfg)
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		if _, ok := v.MCPServers["relay"]; ok || v.MCPServers["other"] == nil {
			t.Errorf("after uninstall relay must be gone and other kept:\n%s", b)
		}
	})
}

// TestInstallWhileHostWrites (issue 22 row 11): Claude Code rewrites
// ~/.claude.json under its ~/.claude.json.lock while relay installs; relay
// takes the same lock and compares before it renames, so no key the host
// wrote is lost and every install succeeds.
func TestInstallWhileHostWrites(t *testing.T) {
	s := newSandbox(t)
	installEnv(s)
	cfg := filepath.Join(s.Home, ".claude.json")
	s.WriteFileAbs(cfg, `{"numStartups": 1}`, 0o600)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var hostErr error
	written := 0
	wg.Add(1)
	go func() { // the host: lock, read, add a key, write atomically, unlock
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := hostWrite(cfg, fmt.Sprintf("hostKey%d", i)); err != nil {
				hostErr = err
				return
			}
			written = i + 1
			// A busy host writes its settings every few milliseconds, not back to back: a
			// loop that retakes the lock microseconds after freeing it starves every mkdir-lock
			// waiter (Claude Code's own too), and made this test fail 1 run in 24 under load.
			time.Sleep(2 * time.Millisecond)
		}
	}()
	var runs []Result
	for i := range 24 {
		args := []string{"install", "claude", "--command", "relay"}
		if i%2 == 1 {
			args = []string{"uninstall", "claude"}
		}
		runs = append(runs, s.Run("", args...))
	}
	close(stop)
	wg.Wait()
	if hostErr != nil {
		t.Fatal(hostErr)
	}
	for i, r := range runs {
		if r.Code != 0 {
			t.Errorf("run %d failed while the host wrote its settings:\n%s", i, r)
		}
	}
	var v map[string]any
	b, _ := os.ReadFile(cfg)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	lost := 0
	for i := range written {
		if _, ok := v[fmt.Sprintf("hostKey%d", i)]; !ok {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d keys the host wrote were lost", lost, written)
	}
	if written == 0 {
		t.Error("the host never wrote")
	}
}

// hostWrite is one settings write the way Claude Code does it.
func hostWrite(cfg, key string) error {
	lock := cfg + ".lock"
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := os.Mkdir(lock, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || time.Now().After(deadline) {
			return fmt.Errorf("host lock: %v", err)
		}
		time.Sleep(100 * time.Microsecond) // a mkdir lock can only be polled
	}
	defer os.Remove(lock)
	b, err := os.ReadFile(cfg)
	if err != nil {
		return err
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("host read %q: %v", b, err)
	}
	v[key] = true
	out, _ := json.MarshalIndent(v, "", "  ")
	tmp := cfg + ".tmp.host"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, cfg)
}

// TestFIFOsDoNotHang (issue 22 row 12): a FIFO where relay expects a host's
// settings file or .relaycode/thread is refused at once; nothing hangs.
func TestFIFOsDoNotHang(t *testing.T) {
	fifo := func(t *testing.T, p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := testsupport.Mkfifo(t, p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("mcp.json", func(t *testing.T) {
		t.Parallel()
		s := newSandbox(t)
		installEnv(s)
		fifo(t, filepath.Join(s.Project, ".mcp.json"))
		if r := s.RunWithin(20*time.Second, s.Project, "", "install", "claude", "--scope", "project", "--command", "relay"); r.Code == 0 || !strings.Contains(r.Stderr, "not a regular file") {
			t.Errorf("install must refuse a FIFO:\n%s", r)
		}
		if r := s.RunWithin(20*time.Second, s.Project, "", "doctor"); !strings.Contains(r.Stdout, "mcp claude") {
			t.Errorf("doctor must finish and report the host:\n%s", r)
		}
	})
	t.Run("relaycode thread", func(t *testing.T) {
		t.Parallel()
		s := newSandbox(t)
		s.WriteFile("relaycode.config.json", `{"projectId":"attack","core":{"enableNotifications":false}}`, 0o644)
		s.WriteFile("README.md", "readme\n", 0o644)
		fifo(t, filepath.Join(s.Project, ".relaycode", "thread"))
		s.Env = append(s.Env, "RELAY_URL=http://127.0.0.1:9") // no daemon: nothing may wait for one
		if r := s.RunWithin(20*time.Second, s.Project, "", "thread", "use"); r.Code == 0 || !strings.Contains(r.Stderr, "not a regular file") {
			t.Errorf("thread use must refuse a FIFO:\n%s", r)
		}
		ans := Answer(uuidN(1200), FileBlock("README.md", "changed"))
		if r := s.RunWithin(20*time.Second, s.Project, ans, "apply", "-", "-y"); r.Code != 0 {
			t.Errorf("apply must commit and not wait on the FIFO:\n%s", r)
		}
		m := startMCP(t, s, 20*time.Second)
		if _, err := m.call("read", map[string]any{"op": "log"}); err != nil {
			t.Errorf("relay mcp must serve despite the FIFO: %v", err)
		}
	})
}
