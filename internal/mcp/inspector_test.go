package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/relaydev/relay/internal/testsupport"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The official MCP Inspector in CLI mode (npm @modelcontextprotocol/inspector,
// installed by scripts/install-mcp-inspector.sh into .cache/mcp-inspector)
// lists relay's tools and calls each one against a real daemon.

func inspectorBin(t *testing.T) string {
	if p := os.Getenv("MCP_INSPECTOR_BIN"); p != "" {
		return p
	}
	p := filepath.Join(testsupport.RepoRoot(t), ".cache", "mcp-inspector", "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("MCP Inspector missing at %s in CI: .ci/run installs it (scripts/install-mcp-inspector.sh)", p)
		}
		t.Skipf("MCP Inspector not installed (%s); run scripts/install-mcp-inspector.sh", p)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not on PATH: the MCP Inspector needs it")
	}
	return p
}

func (w *world) inspect(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	full := append([]string{"--cli", w.relay, "mcp"}, args...)
	cmd := exec.CommandContext(ctx, bin, full...)
	node, _ := exec.LookPath("node")
	env := append([]string{}, w.env...)
	for i, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			env[i] = e + ":" + filepath.Dir(node)
		}
	}
	cmd.Dir, cmd.Env = w.project, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}

func TestInspectorCLI(t *testing.T) {
	bin := inspectorBin(t)
	w := newWorld(t)
	out, err := w.inspect(t, bin, "--method", "tools/list")
	if err != nil {
		t.Fatalf("inspector tools/list: %v\n%s", err, out)
	}
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("tools/list output: %v\n%s", err, out)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "apply,ask,memory" {
		t.Fatalf("tools %v", names)
	}
	type result struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	callTool := func(tool string, args ...string) result {
		t.Helper()
		full := []string{"--method", "tools/call", "--tool-name", tool}
		for _, a := range args {
			full = append(full, "--tool-arg", a)
		}
		out, err := w.inspect(t, bin, full...)
		if err != nil {
			t.Fatalf("inspector tools/call %s %v: %v\n%s", tool, args, err, out)
		}
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Content) == 0 {
			t.Fatalf("tools/call %s output: %v\n%s", tool, err, out)
		}
		t.Logf("inspector: %s %v -> isError=%v %s", tool, args, r.IsError, firstN(r.Content[0].Text, 160))
		return r
	}
	if r := callTool("memory", "op=header"); r.IsError || !strings.Contains(r.Content[0].Text, `"t":`) || !strings.Contains(r.Content[0].Text, `"v":1`) {
		t.Fatalf("memory header: %+v", r)
	}
	if r := callTool("memory", "op=put", "content=inspected", "name=i.txt"); r.IsError || !strings.Contains(r.Content[0].Text, `"ref"`) {
		t.Fatalf("memory put: %+v", r)
	}
	if r := callTool("apply", "op=edit", "path=main.go", `old_string=println("hello")`, `new_string=println("inspected")`); r.IsError || !strings.Contains(r.Content[0].Text, `"uuid"`) {
		t.Fatalf("apply edit: %+v", r)
	}
	if r := callTool("apply", "op=log"); r.IsError || !strings.Contains(r.Content[0].Text, "Edit main.go") {
		t.Fatalf("apply log: %+v", r)
	}
	if r := callTool("ask", "prompt=second opinion?"); r.IsError || !strings.Contains(r.Content[0].Text, "FRIEND-SAYS-LGTM") {
		t.Fatalf("ask: %+v", r)
	}
	if r := callTool("memory", "op=nope"); !r.IsError || !strings.Contains(r.Content[0].Text, "Try: ") {
		t.Fatalf("a bad op is not an error result with a hint: %+v", r)
	}
	out, err = w.inspect(t, bin, "--method", "resources/list")
	if err != nil || !strings.Contains(out, "relay://") {
		t.Fatalf("resources/list: %v\n%s", err, out)
	}
}

func firstN(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
