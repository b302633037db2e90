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
	out, err := m.call("apply", map[string]any{"op": "edit", "path": "README.md", "old_string": "readme", "new_string": "edited"})
	if err != nil {
		t.Fatalf("the edit itself is allowed: %v", err)
	}
	if !strings.Contains(out, "not trusted") || !strings.Contains(out, "relay trust") {
		t.Errorf("the result must say the config's commands did not run and that only the user can trust it:\n%s", out)
	}
	if _, err := m.call("apply", map[string]any{"op": "revert"}); err != nil {
		t.Errorf("revert: %v", err)
	}
	noPwned(t, s)
	if entries, _ := os.ReadDir(filepath.Join(s.Relay, "trust")); len(entries) > 0 {
		t.Errorf("a tool call recorded trust: %v", entries)
	}
}
