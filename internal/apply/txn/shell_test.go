package txn

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// git prints some refusals on stdout; the error must carry them.
func TestGitRunnerKeepsStdoutMessage(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	ctx := context.Background()
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("HOME", dir)
	if _, err := gitRunner(ctx, dir, nil, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	_, err := gitRunner(ctx, dir, []byte("msg\n"), "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-F", "-")
	if err == nil || !strings.Contains(err.Error(), "nothing to commit") {
		t.Fatalf("err = %v, want git's own \"nothing to commit\"", err)
	}
}
