package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/relaydev/relay/internal/testsupport"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
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
	return w.inspectCLI(t, bin, append([]string{w.relay, "mcp"}, args...)...)
}

// inspectCLI runs the Inspector in CLI mode with args after --cli.
func (w *world) inspectCLI(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	full := append([]string{"--cli"}, args...)
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
			Title       string          `json:"title"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Annotations map[string]any  `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("tools/list output: %v\n%s", err, out)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		for _, k := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint", "title"} {
			if _, ok := tl.Annotations[k]; !ok || tl.Title == "" {
				t.Errorf("%s: title %q, annotations %v: %s missing", tl.Name, tl.Title, tl.Annotations, k)
			}
		}
		t.Logf("inspector: %-12s %-36q %v", tl.Name, tl.Title, tl.Annotations)
	}
	if strings.Join(names, ",") != "ask,edit_files,fetch,read,write_memory" {
		t.Fatalf("tools %v", names)
	}
	type result struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent any  `json:"structuredContent"`
		IsError           bool `json:"isError"`
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
		if !r.IsError {
			var fromText any
			if err := json.Unmarshal([]byte(r.Content[0].Text), &fromText); err != nil || !reflect.DeepEqual(fromText, r.StructuredContent) {
				t.Fatalf("%s: structuredContent %v is not the text %s", tool, r.StructuredContent, r.Content[0].Text)
			}
		}
		t.Logf("inspector: %s %v -> isError=%v %s", tool, args, r.IsError, firstN(r.Content[0].Text, 160))
		return r
	}
	if r := callTool("read", "op=header"); r.IsError || !strings.Contains(r.Content[0].Text, `"t":`) || !strings.Contains(r.Content[0].Text, `"v":1`) {
		t.Fatalf("read header: %+v", r)
	}
	if r := callTool("write_memory", "op=put", "content=inspected", "name=i.txt"); r.IsError || !strings.Contains(r.Content[0].Text, `"ref"`) {
		t.Fatalf("write_memory put: %+v", r)
	}
	if r := callTool("read", "op=search", "query=inspected"); r.IsError || !strings.Contains(r.Content[0].Text, "i.txt") {
		t.Fatalf("read search: %+v", r)
	}
	if r := callTool("edit_files", "op=edit", "path=main.go", `old_string=println("hello")`, `new_string=println("inspected")`); r.IsError || !strings.Contains(r.Content[0].Text, `"uuid"`) {
		t.Fatalf("edit_files edit: %+v", r)
	}
	if r := callTool("read", "op=log"); r.IsError || !strings.Contains(r.Content[0].Text, "Edit main.go") {
		t.Fatalf("read log: %+v", r)
	}
	// the fetch stand-in is the daemon's own /health (RELAY_FETCH_ALLOW lets loopback through)
	if r := callTool("fetch", "url="+w.daemonURL(t)+"/health"); r.IsError || !strings.Contains(r.Content[0].Text, `"artifact_ref"`) {
		t.Fatalf("fetch: %+v", r)
	}
	if r := callTool("ask", "prompt=second opinion?"); r.IsError || !strings.Contains(r.Content[0].Text, "FRIEND-SAYS-LGTM") {
		t.Fatalf("ask: %+v", r)
	}
	if r := callTool("read", "op=nope"); !r.IsError || !strings.Contains(r.Content[0].Text, "Try: ") {
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

// daemonURL is the URL of the daemon relay mcp started for this world.
func (w *world) daemonURL(t *testing.T) string {
	t.Helper()
	var st struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal([]byte(w.run(t, w.relay, "status", "--json")), &st); err != nil || st.URL == "" {
		t.Fatalf("relay status --json: %v", err)
	}
	return st.URL
}
