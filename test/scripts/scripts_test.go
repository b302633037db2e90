// Package scripts tests the repository's test and CI scripts: a tier whose tool is missing
// skips locally and fails in CI, and CI runs every tier and reports all failures.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func needBash(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
}

// run runs a bash command line in the repository with extra environment; it returns the
// combined output and the exit code.
func run(t *testing.T, env []string, script string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = root(t)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// Without Chromium the browser tier skips with a message (make test passes on a machine
// without it, as the README says); under RELAY_REQUIRE_ALL=1, as CI runs it, it fails.
func TestSDKScriptBrowserTierWithoutChromium(t *testing.T) {
	needBash(t)
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	env := []string{"CHROMIUM_PATH=" + filepath.Join(t.TempDir(), "no-chromium"), "RELAY_SKIP_BROWSER=", "RELAY_REQUIRE_ALL="}
	out, code := run(t, env, "scripts/test-sdk.sh browser")
	if code != 0 || !strings.Contains(out, "skipped: the browser tier needs Chromium") || !strings.Contains(out, "0 failed, 1 skipped") {
		t.Errorf("without Chromium: exit %d, want 0 with a skip message; output:\n%s", code, out)
	}
	out, code = run(t, append(env, "RELAY_REQUIRE_ALL=1"), "scripts/test-sdk.sh browser")
	if code == 0 || !strings.Contains(out, "FAILED: the browser tier needs Chromium") {
		t.Errorf("without Chromium under RELAY_REQUIRE_ALL=1: exit %d, want a failure; output:\n%s", code, out)
	}
}

// Every tier runs after a failing one, and the summary names each failure.
func TestTiersRunAllAndReportEveryFailure(t *testing.T) {
	needBash(t)
	out, code := run(t, nil, `. scripts/tiers.sh
tier go false
tier sdk true
tier ui sh -c 'exit 3'
tier lint echo linted
tiers_summary`)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"linted", "go         FAIL", "sdk        ok", "ui         FAIL", "lint       ok", "2 of 4 tiers failed."} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, code = run(t, nil, ". scripts/tiers.sh; tier a true; tier b true; tiers_summary")
	if code != 0 || !strings.Contains(out, "all 2 tiers passed.") {
		t.Errorf("all passing: exit %d, output:\n%s", code, out)
	}
}

// .ci/run uses the tier runner for every tier instead of stopping at the first failure.
func TestCIRunsEveryTier(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root(t), ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	ci := string(b)
	for _, want := range []string{"set +e", ". scripts/tiers.sh", "tier go ", "tier sdk ", "tier ui ", "tier browser ", "tier lint ", "tiers_summary"} {
		if !strings.Contains(ci, want) {
			t.Errorf(".ci/run lacks %q", want)
		}
	}
}
