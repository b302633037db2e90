// Package realcli points the real agent CLIs (the pinned npm releases of codex, claude,
// gemini and qwen that scripts/install-friend-clis.sh installs) at a fake LLM on
// 127.0.0.1 in a throwaway HOME: the one preamble of every real-CLI tier (internal/ask's
// friends under relay ask, internal/mcp's hosts calling relay mcp).
package realcli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/testsupport"
)

// CLI is one real agent CLI.
type CLI struct {
	Name string
	// Model is what relay ask passes with --model ("" = the CLI's configured default).
	Model string
	// Setup writes the CLI's settings into home, pointed at the fake LLM at url, and
	// returns the environment that selects them.
	Setup func(t testing.TB, home, url string) []string
}

// All are the four CLIs, in the order the tiers run them.
var All = []CLI{
	{Name: "codex", Setup: func(t testing.TB, home, url string) []string {
		codexHome := filepath.Join(home, ".codex")
		Write(t, filepath.Join(codexHome, "config.toml"), `model = "fake-model"
model_provider = "fakeprov"

[model_providers.fakeprov]
name = "fakeprov"
base_url = "`+url+`/v1"
env_key = "FAKE_OPENAI_KEY"
wire_api = "responses"
`)
		return []string{"CODEX_HOME=" + codexHome, "FAKE_OPENAI_KEY=sk-fake"}
	}},
	{Name: "claude", Model: "sonnet", Setup: func(t testing.TB, home, url string) []string {
		return []string{"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-ant-fake", "DISABLE_TELEMETRY=1",
			"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "TERM=dumb"}
	}},
	{Name: "gemini", Model: "gemini-2.5-flash", Setup: func(t testing.TB, home, url string) []string {
		Write(t, filepath.Join(home, ".gemini", "settings.json"), `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`)
		return []string{"GEMINI_API_KEY=fake-key", "GOOGLE_GEMINI_BASE_URL=" + url, "TERM=xterm-256color"}
	}},
	{Name: "qwen", Model: "fake-model", Setup: func(t testing.TB, home, url string) []string {
		Write(t, filepath.Join(home, ".qwen", "settings.json"), `{"security":{"auth":{"selectedType":"openai"}}}`)
		return []string{"OPENAI_API_KEY=sk-fake", "OPENAI_BASE_URL=" + url + "/v1", "OPENAI_MODEL=fake-model"}
	}},
}

// Get returns the named CLI.
func Get(t testing.TB, name string) CLI {
	t.Helper()
	for _, c := range All {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no real CLI %q", name)
	return CLI{}
}

// Skip skips the test unless the real-CLI tier is asked for.
func Skip(t testing.TB) {
	t.Helper()
	if os.Getenv("RELAY_REAL_CLIS") != "1" {
		t.Skip("set RELAY_REAL_CLIS=1 (after scripts/install-friend-clis.sh) to run the real friend CLIs")
	}
}

// Env is the base environment of a run in HOME home: the CLIs, node and git on PATH,
// relay's home inside it, no colour. It fails the test when a CLI or node is missing.
func Env(t testing.TB, home string, names ...string) []string {
	t.Helper()
	bin := testsupport.FriendCLIs(t)
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(bin, n)); err != nil {
			t.Fatalf("%s not installed in %s: run scripts/install-friend-clis.sh", n, bin)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node not on PATH: the friend CLIs need it")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git not on PATH")
	}
	return []string{
		"PATH=" + strings.Join([]string{bin, filepath.Dir(node), filepath.Dir(git), "/usr/bin", "/bin"}, ":"),
		"HOME=" + home, "RELAY_HOME=" + filepath.Join(home, ".relay"), "TMPDIR=" + t.TempDir(),
		"NO_COLOR=1", "CI=1", "LANG=C.UTF-8",
	}
}

// Write writes a settings file, making its directory.
func Write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
