package attack

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The agent door: a model calling relay's tools through `relay mcp` is not
// the person at the keyboard. Its prompt may carry a cloned README's
// instructions, and nobody watches what it does, so a tool call gets less
// power than the person, never more (docs/security.md, "The agent is a
// principal"). Each attack here drives the real binary over stdio as a host
// does.

// mcpSession is one `relay mcp` process and a client connected to it.
type mcpSession struct {
	t       *testing.T
	cs      *sdk.ClientSession
	stderr  *strings.Builder
	timeout time.Duration
}

// startMCP starts relay mcp in the sandbox's project; initialisation must
// finish within timeout.
func startMCP(t *testing.T, s *sandbox, timeout time.Duration) *mcpSession {
	t.Helper()
	// relay mcp starts the sandbox's daemon when a tool needs memory; it must not
	// outlive the test (cleanups run last-in first-out: this one after the session closes).
	t.Cleanup(func() { s.Run("", "down") })
	cmd := exec.Command(relayBin, "mcp")
	cmd.Dir = s.Project
	cmd.Env = s.Env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "relay-attack", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
		t.Fatalf("relay mcp did not start within %s: %v\nstderr:\n%s", timeout, err, stderr.String())
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &mcpSession{t: t, cs: cs, stderr: &stderr, timeout: timeout}
}

// close ends the session and returns what relay mcp wrote on stderr.
func (m *mcpSession) close() string {
	_ = m.cs.Close()
	return m.stderr.String()
}

// errTool is a tool result with isError set; its text is the error.
type errTool struct{ text string }

func (e *errTool) Error() string { return e.text }

// call calls a tool and returns its text; a tool error is an *errTool.
func (m *mcpSession) call(tool string, args map[string]any) (string, error) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
	defer cancel()
	res, err := m.cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return "", &errTool{b.String()}
	}
	return b.String(), nil
}

// toolError returns the text of a tool error, failing the test when the
// call succeeded.
func (m *mcpSession) toolError(tool string, args map[string]any) string {
	m.t.Helper()
	out, err := m.call(tool, args)
	var te *errTool
	if !errors.As(err, &te) {
		m.t.Fatalf("%s %v must be refused, got %q (err %v)", tool, args, out, err)
	}
	return te.text
}

// TestAgentNeverTrustsAConfig (issue 22 row 1, the agent's door): one MCP
// apply edit in a clone whose config names preCommand, postCommand and
// linter runs none of them; the result says why and that only the user can
// trust the config. No tool gives trust.
func TestAgentNeverTrustsAConfig(t *testing.T) {
	s := newSandbox(t)
	s.WriteFile("relaycode.config.json", `{"projectId":"attack","core":{"enableNotifications":false},"patch":{"preCommand":"touch pre-pwned","postCommand":"touch post-pwned","linter":"touch lint-pwned"}}`, 0o644)
	s.WriteFile("README.md", "readme\n", 0o644)
	s.Git("add", "-A")
	s.Git("commit", "-qm", "clone")
	m := startMCP(t, s, time.Minute)
	out, err := m.call("edit_files", map[string]any{"op": "edit", "path": "README.md", "old_string": "readme", "new_string": "edited"})
	if err != nil {
		t.Fatalf("the edit itself is allowed: %v", err)
	}
	if !strings.Contains(out, "not trusted") || !strings.Contains(out, "relay trust") {
		t.Errorf("the result must say the config's commands did not run and that only the user can trust it:\n%s", out)
	}
	if _, err := m.call("edit_files", map[string]any{"op": "revert"}); err != nil {
		t.Errorf("revert: %v", err)
	}
	noPwned(t, s)
	if entries, _ := os.ReadDir(filepath.Join(s.Relay, "trust")); len(entries) > 0 {
		t.Errorf("a tool call recorded trust: %v", entries)
	}
}

// fakeCodex puts a codex on PATH that records its arguments and the prompt it
// reads, so an attack can see what a friend would have been given.
func fakeCodex(t *testing.T, s *sandbox) (argv, stdin string) {
	t.Helper()
	bin := filepath.Join(filepath.Dir(s.Home), "bin")
	argv, stdin = filepath.Join(filepath.Dir(s.Home), "codex-argv"), filepath.Join(filepath.Dir(s.Home), "codex-stdin")
	s.WriteFileAbs(filepath.Join(bin, "codex"), "#!/bin/sh\nprintf '%s\\n' \"$@\" >> "+argv+"\ncat >> "+stdin+"\necho '{\"type\":\"turn.completed\"}'\n", 0o755)
	s.Env = append(s.Env, "PATH="+bin+":/usr/bin:/bin", "PHONE_A_FRIEND_BACKEND=")
	return argv, stdin
}

// TestAgentCannotRaiseTheSandbox (issue 22 row 2): a tool call cannot give a
// friend danger-full-access (claude --dangerously-skip-permissions, gemini
// --yolo, codex --sandbox danger-full-access); workspace-write is the most.
func TestAgentCannotRaiseTheSandbox(t *testing.T) {
	s := newSandbox(t)
	s.WriteFile("relaycode.config.json", `{"projectId":"attack"}`, 0o644)
	argv, _ := fakeCodex(t, s)
	m := startMCP(t, s, time.Minute)
	msg := m.toolError("ask", map[string]any{"prompt": "rm -rf the world", "to": []string{"codex"}, "sandbox": "danger-full-access"})
	if !strings.Contains(msg, "cannot give a friend the danger-full-access sandbox") {
		t.Errorf("the refusal must say why:\n%s", msg)
	}
	if b, _ := os.ReadFile(argv); strings.Contains(string(b), "danger-full-access") {
		t.Errorf("a friend was started with danger-full-access:\n%s", b)
	}
	m.call("ask", map[string]any{"prompt": "edit within the project", "to": []string{"codex"}, "sandbox": "workspace-write", "timeout": 20})
	if b, _ := os.ReadFile(argv); !strings.Contains(string(b), "workspace-write") {
		t.Errorf("workspace-write is allowed to a tool call; codex got:\n%s", b)
	}
}

// TestAgentContextFileStaysInProject (issue 22 row 4): a tool call's
// context_file is read only from inside the project, links resolved first;
// ~/.ssh keys, ../ siblings and /proc/self/environ never reach a friend.
func TestAgentContextFileStaysInProject(t *testing.T) {
	s := newSandbox(t)
	s.WriteFile("relaycode.config.json", `{"projectId":"attack"}`, 0o644)
	s.WriteFile("notes.md", "project notes\n", 0o644)
	s.WriteFileAbs(filepath.Join(s.Home, ".ssh", "id_ed25519"), "bait secret key\n", 0o600)
	s.WriteFileAbs(filepath.Join(s.Home, "outside", "secret.txt"), "bait secret outside\n", 0o600)
	link(t, filepath.Join(s.Home, ".ssh", "id_ed25519"), filepath.Join(s.Project, "docs", "key.md"))
	_, stdin := fakeCodex(t, s)
	s.Env = append(s.Env, "OPENAI_API_KEY=bait secret env")
	m := startMCP(t, s, time.Minute)
	for _, p := range []string{filepath.Join(s.Home, ".ssh", "id_ed25519"), "../outside/secret.txt", "/proc/self/environ", "docs/key.md", ".git/config"} {
		msg := m.toolError("ask", map[string]any{"prompt": "summarise", "to": []string{"codex"}, "context_file": p})
		if !strings.Contains(msg, "outside the project") && !strings.Contains(msg, "inside .git") {
			t.Errorf("context_file %s: the refusal must say it is outside the project:\n%s", p, msg)
		}
	}
	if b, _ := os.ReadFile(stdin); strings.Contains(string(b), "bait secret") {
		t.Errorf("a secret reached the friend:\n%s", b)
	}
	m.call("ask", map[string]any{"prompt": "summarise", "to": []string{"codex"}, "context_file": "notes.md", "timeout": 20})
	if b, _ := os.ReadFile(stdin); !strings.Contains(string(b), "project notes") {
		t.Errorf("a project file is allowed as context; codex got:\n%s", b)
	}
}
