// Package attack runs the real relay binary against hostile inputs: a cloned
// repository, an LLM answer, a bundle, an API request, a fetched URL, and an
// agent calling relay's tools. Each file holds one family of attacks, and
// every test asserts what relay promises in docs/security.md: nothing is
// written, run or reached outside the box the input came in.
//
//	repo_test.go     the person's door: records, links, hooks a clone carries
//	project_test.go  the project's root, its config's commands (trust), its
//	                 thread file, the git config an archive carries
//	install_test.go  relay install against a clone's and a host's files
//	agent_test.go    the agent's door: relay mcp over stdio, as a host drives it
//	answer_test.go   an LLM answer; bundle_test.go, api_test.go, fetch_test.go,
//	                 terminal_test.go: the memory daemon's inputs
package attack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/relaydev/relay/internal/testsupport"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// relayBin is the relay binary built once for the whole suite.
var relayBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	defer testsupport.RemoveBinaries()
	var err error
	if relayBin, err = testsupport.RelayBinary(); err != nil {
		fmt.Fprintln(os.Stderr, "attack:", err)
		return 1
	}
	return m.Run()
}

// sandbox is one attack's world: a fake home (with files an attacker would
// like to reach) and a project directory that is a git repository.
type sandbox struct {
	t       *testing.T
	Home    string // $HOME; holds .bashrc and secret.txt as bait
	Relay   string // $RELAY_HOME
	Project string // the project, a git work tree
	Env     []string
}

// newSandbox makes a fresh home and an initialised git project in it.
func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	base := t.TempDir()
	s := &sandbox{
		t:       t,
		Home:    filepath.Join(base, "home"),
		Relay:   filepath.Join(base, "home", ".relay"),
		Project: filepath.Join(base, "home", "project"),
	}
	for _, d := range []string{s.Home, s.Project} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s.WriteFileAbs(filepath.Join(s.Home, ".bashrc"), "# bait: must never change\n", 0o644)
	s.WriteFileAbs(filepath.Join(s.Home, "secret.txt"), "bait secret\n", 0o600)
	s.Env = append(os.Environ(),
		"HOME="+s.Home,
		"RELAY_HOME="+s.Relay,
		"NO_COLOR=1",
		"GIT_AUTHOR_NAME=relay attack", "GIT_AUTHOR_EMAIL=attack@relay.invalid",
		"GIT_COMMITTER_NAME=relay attack", "GIT_COMMITTER_EMAIL=attack@relay.invalid",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"RELAY_DEBUG=",
	)
	s.Git("init", "-q", "-b", "main")
	return s
}

// Git runs git in the project and fails the test on error.
func (s *sandbox) Git(args ...string) string {
	s.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = s.Project
	cmd.Env = s.Env
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// WriteFile writes a project file (slash path), creating directories.
func (s *sandbox) WriteFile(rel, content string, mode os.FileMode) {
	s.t.Helper()
	s.WriteFileAbs(filepath.Join(s.Project, filepath.FromSlash(rel)), content, mode)
}

// WriteFileAbs writes any file, creating directories.
func (s *sandbox) WriteFileAbs(p, content string, mode os.FileMode) {
	s.t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		s.t.Fatal(err)
	}
}

// Result is one run of relay.
type Result struct {
	Stdout, Stderr string
	Code           int
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// Run runs relay in the project with stdin (may be empty) and returns its
// result; it never blocks longer than a minute.
func (s *sandbox) Run(stdin string, args ...string) Result {
	s.t.Helper()
	return s.RunIn(s.Project, stdin, args...)
}

// RunIn runs relay in dir.
func (s *sandbox) RunIn(dir, stdin string, args ...string) Result {
	s.t.Helper()
	return s.RunWithin(time.Minute, dir, stdin, args...)
}

// RunWithin runs relay in dir and fails the test when it has not finished
// within d (an attack that makes relay hang).
func (s *sandbox) RunWithin(d time.Duration, dir, stdin string, args ...string) Result {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, relayBin, args...)
	cmd.Dir = dir
	cmd.Env = s.Env
	cmd.Stdin = strings.NewReader(stdin)
	cmd.WaitDelay = 5 * time.Second // a killed relay's children must not keep the pipes open
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errOut.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	default:
		s.t.Fatalf("run relay %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		s.t.Fatalf("relay %s did not finish within %s\n%s", strings.Join(args, " "), d, r)
	}
	return r
}

// Snapshot records every file under dir (path -> mode and content), so an
// attack can assert that nothing outside its box changed.
func Snapshot(t *testing.T, dir string, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		for _, s := range skip {
			if p == s {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "symlink -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if len(b) > 200 {
				out[rel] = fmt.Sprintf("%v %d bytes sha256 %x", fi.Mode(), len(b), sha256.Sum256(b))
			} else {
				out[rel] = fmt.Sprintf("%v %q", fi.Mode(), b)
			}
		case fi.IsDir():
			out[rel] = fi.Mode().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// SameTree fails the test when two snapshots differ, naming each difference.
func SameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %s changed:\n  before %s\n  after  %s", what, k, v, after[k])
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: %s appeared: %s", what, k, v)
		}
	}
}

// Answer builds an LLM answer in relay's format from blocks and a uuid.
func Answer(uuid string, blocks ...string) string {
	return strings.Join(blocks, "\n") + "\n```yaml\nprojectId: attack\nuuid: " + uuid + "\n```\n"
}

// FileBlock is a whole-file write of content to path.
func FileBlock(path, content string) string {
	return "```text // " + path + "\n" + content + "\n```\n"
}

// DeleteBlock deletes path.
func DeleteBlock(path string) string {
	return "```text // " + path + "\n//TODO: delete this file\n```\n"
}

// RenameBlock renames from to to.
func RenameBlock(from, to string) string {
	return fmt.Sprintf("```json // rename-file\n{\"from\": %q, \"to\": %q}\n```\n", from, to)
}

// GitRename is a whole answer holding only a git diff that renames from to
// to ("rename from", "rename to", no content change).
func GitRename(from, to string) string {
	return fmt.Sprintf("```diff\ndiff --git a/%s b/%s\nsimilarity index 100%%\nrename from %s\nrename to %s\n```\n", from, to, from, to)
}

// uuidN is a fixed, valid uuid numbered n, so each attack's answer is new.
func uuidN(n int) string {
	return fmt.Sprintf("a77ac000-0000-4000-8000-%012d", n)
}

// World snapshots everything an attack could reach (home, project, its
// .git), leaving out only relay's own lock and records, $RELAY_HOME and
// git's index (a cache git status rewrites).
func (s *sandbox) World() map[string]string {
	s.t.Helper()
	return Snapshot(s.t, filepath.Dir(s.Home), filepath.Join(s.Project, ".relaycode"), s.Relay, filepath.Join(s.Project, ".git", "index"))
}
