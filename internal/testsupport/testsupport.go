// Package testsupport is what relay's tests share and the product never imports: the
// repository root, and the relay binary built once per test binary. Its sub-packages run
// real servers for tests (pgtest: PostgreSQL, s3test: an S3 server, fakellm: an LLM API)
// and find the shared conformance corpus (corpus).
package testsupport

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// FindRepoRoot returns the directory holding go.mod at or above the working directory.
func FindRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("go.mod not found above " + dir)
		}
	}
}

// RepoRoot is FindRepoRoot for a test: it fails t when there is no go.mod above.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

var (
	buildMu  sync.Mutex
	buildDir string
	built    = map[string]builtBin{}
)

type builtBin struct {
	path string
	err  error
}

// Binary builds the module's package pkg (e.g. "./cmd/relay") once per test binary, the
// way a user builds it, with -race when the tests run with it, and returns its path in a
// directory of its own named name, so that a directory holding one binary can go on
// $PATH. A failed build is not retried.
func Binary(pkg, name string) (string, error) {
	var flags []string
	if RaceEnabled {
		flags = append(flags, "-race")
	}
	return binary(pkg, name, nil, flags)
}

func binary(pkg, name string, env, flags []string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	key := strings.Join(append(append([]string{pkg}, env...), flags...), "\x00")
	if b, ok := built[key]; ok {
		return b.path, b.err
	}
	b := build(pkg, name, env, flags)
	built[key] = b
	return b.path, b.err
}

func build(pkg, name string, env, flags []string) builtBin {
	root, err := FindRepoRoot()
	if err != nil {
		return builtBin{err: err}
	}
	if buildDir == "" {
		if buildDir, err = os.MkdirTemp("", "relay-test-bin-"); err != nil {
			return builtBin{err: err}
		}
	}
	dir, err := os.MkdirTemp(buildDir, "bin-")
	if err != nil {
		return builtBin{err: err}
	}
	out := filepath.Join(dir, name)
	args := append(append([]string{"build", "-o", out}, flags...), pkg)
	cmd := exec.Command(goTool(), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return builtBin{err: fmt.Errorf("go build %s %s: %v\n%s", strings.Join(flags, " "), pkg, err, msg)}
	}
	return builtBin{path: out}
}

// RelayBinary builds ./cmd/relay once per test binary and returns its path.
func RelayBinary() (string, error) { return Binary("./cmd/relay", "relay") }

// BuildRelay is RelayBinary for a test: the tests run the real binary, exactly what a
// user runs. It fails t when the build fails.
func BuildRelay(t testing.TB) string {
	t.Helper()
	p, err := RelayBinary()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Build is Binary for a test.
func Build(t testing.TB, pkg, name string) string {
	t.Helper()
	p, err := Binary(pkg, name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// BuildWith is Build with env added to the go command's environment and flags before the
// package (e.g. CGO_ENABLED=0 and -buildmode=pie: relay as a packager builds it), never
// with -race, which such builds cannot take. Each env and flags builds once.
func BuildWith(t testing.TB, pkg, name string, env []string, flags ...string) string {
	t.Helper()
	p, err := binary(pkg, name, env, flags)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// RemoveBinaries deletes what Binary built; TestMain calls it after m.Run.
func RemoveBinaries() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
		buildDir = ""
		built = map[string]builtBin{}
	}
}

// Main runs a package's tests and then removes the binaries they built: use it as
// `func TestMain(m *testing.M) { testsupport.Main(m) }`.
func Main(m *testing.M) {
	code := m.Run()
	RemoveBinaries()
	os.Exit(code)
}

// goTool is the go command that runs the tests, also when it is not on $PATH.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// FriendCLIs is the directory holding the pinned agent CLIs (codex, claude, gemini, qwen)
// for the real-CLI tiers: $FRIEND_CLIS_BIN, or .cache/friend-clis/node_modules/.bin in
// the repository, where scripts/install-friend-clis.sh puts them.
func FriendCLIs(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("FRIEND_CLIS_BIN"); bin != "" {
		return bin
	}
	return filepath.Join(RepoRoot(t), ".cache", "friend-clis", "node_modules", ".bin")
}
