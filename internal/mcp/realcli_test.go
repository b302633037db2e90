package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/testsupport"
	"github.com/relaydev/relay/internal/testsupport/fakellm"
	"github.com/relaydev/relay/internal/testsupport/realcli"
)

// The real agent CLIs (scripts/install-friend-clis.sh) configured by
// `relay install` into a throwaway HOME, driven by the fake LLM on 127.0.0.1,
// which answers with a call of a relay tool. The test checks the effect in
// relay and that the tool's result reached the model in the next turn.
// Opt in with RELAY_REAL_CLIS=1 (make test does when the CLIs are installed).

type hostRun struct {
	name string
	cli  string // the CLI to run when it is not name
	tool string
	args map[string]any
	// setup writes the host's own settings (before relay install adds relay)
	// and returns its environment.
	setup func(t *testing.T, home, url string) []string
	argv  func(project, prompt string) []string
	// check asserts the effect in relay and returns what the tool result must contain.
	check func(t *testing.T, w *world, srv *fakellm.Server) string
	// write: the tool changes something, so after a plain relay install the host's own
	// approval refuses it (refused is the host's message the model gets; "" for Gemini CLI,
	// which leaves such a tool out of the request), and it runs after --allow-writes.
	write   bool
	refused string
	// allowWrites installs with --allow-writes from the start (no refusal run).
	allowWrites bool
}

var hostRuns = []hostRun{
	// a read-only tool runs headless with no allow flag and no --allow-writes
	{name: "codex-read", cli: "codex", tool: "read", args: map[string]any{"op": "header"}, setup: codexSetup,
		argv: func(project, prompt string) []string {
			return []string{"codex", "exec", "-C", project, "--skip-git-repo-check", "--ephemeral", "--json", prompt}
		},
		check: func(t *testing.T, w *world, _ *fakellm.Server) string { return `"v":1` }},
	{name: "qwen-read", cli: "qwen", tool: "read", args: map[string]any{"op": "header"}, setup: qwenSetup,
		argv:  qwenArgv,
		check: func(t *testing.T, w *world, _ *fakellm.Server) string { return `"v":1` }},
	// codex's own approval lets a non-destructive write (write_memory) through; it refuses
	// the destructive edit_files until relay install --allow-writes
	{name: "codex", tool: "edit_files", write: true, refused: "requires approval",
		args:  map[string]any{"op": "edit", "path": "main.go", "old_string": `println("hello")`, "new_string": `println("from codex")`},
		setup: codexSetup,
		argv: func(project, prompt string) []string {
			return []string{"codex", "exec", "-C", project, "--skip-git-repo-check", "--ephemeral", "--json", prompt}
		},
		check: func(t *testing.T, w *world, _ *fakellm.Server) string {
			if !strings.Contains(readFile(t, w, "main.go"), `println("from codex")`) {
				t.Errorf("main.go was not edited:\n%s", readFile(t, w, "main.go"))
			}
			return `"summary":"Editmain.go`
		}},
	{name: "claude", tool: "edit_files", write: true, refused: "haven't granted",
		args:  map[string]any{"op": "edit", "path": "main.go", "old_string": `println("hello")`, "new_string": `println("from claude")`},
		setup: func(t *testing.T, home, url string) []string { return claudeEnv(t, url) },
		argv:  claudeArgv,
		check: func(t *testing.T, w *world, _ *fakellm.Server) string {
			if !strings.Contains(readFile(t, w, "main.go"), `println("from claude")`) {
				t.Errorf("main.go was not edited:\n%s", readFile(t, w, "main.go"))
			}
			var log []struct {
				UUID          string `json:"uuid"`
				PromptSummary string `json:"promptSummary"`
			}
			if err := json.Unmarshal([]byte(w.run(t, w.relay, "log", "--json")), &log); err != nil || len(log) != 1 || log[0].PromptSummary != "Edit main.go" {
				t.Fatalf("relay log: %v %+v", err, log)
			}
			return log[0].UUID
		}},
	{name: "gemini", tool: "write_memory", write: true,
		args:  map[string]any{"op": "put", "content": "GEMINI-ARTIFACT body", "name": "gemini-note.txt"},
		setup: func(t *testing.T, home, url string) []string { return realcli.Get(t, "gemini").Setup(t, home, url) },
		argv: func(project, prompt string) []string {
			return []string{"gemini", "--skip-trust", "-m", "gemini-2.5-flash", "-o", "stream-json", "-p", prompt}
		},
		check: func(t *testing.T, w *world, _ *fakellm.Server) string {
			out := w.runThread(t, "artifact", "ls", "--json")
			if !strings.Contains(out, "gemini-note.txt") {
				t.Fatalf("the artifact is not in the thread:\n%s", out)
			}
			var list []struct {
				Ref  string `json:"ref"`
				Name string `json:"name"`
			}
			_ = json.Unmarshal([]byte(out), &list)
			for _, a := range list {
				if a.Name == "gemini-note.txt" {
					return a.Ref
				}
			}
			return "gemini-note.txt"
		}},
	{name: "qwen", tool: "write_memory", write: true, refused: "permission",
		args:  map[string]any{"op": "patch", "patch": []any{map[string]any{"op": "add", "path": "/facts", "value": []any{map[string]any{"id": "q1", "key": "host", "value": "QWEN-FACT"}}}}},
		setup: qwenSetup,
		argv:  qwenArgv,
		check: func(t *testing.T, w *world, _ *fakellm.Server) string {
			if st := w.state(t); !strings.Contains(st, "QWEN-FACT") {
				t.Errorf("the patch did not land: %s", st)
			}
			return `"version":2`
		}},
	// a friend through relay: claude calls relay's ask, relay asks the real codex
	{name: "claude-asks-codex", cli: "claude", tool: "ask", allowWrites: true,
		args: map[string]any{"prompt": "QUESTION-FOR-CODEX: is this change safe?", "to": []string{"codex"}},
		setup: func(t *testing.T, home, url string) []string {
			return append(codexSetup(t, home, url), claudeEnv(t, url)...)
		},
		argv: claudeArgv,
		check: func(t *testing.T, w *world, srv *fakellm.Server) string {
			codexSaw := false
			for _, r := range srv.Requests() {
				codexSaw = codexSaw || strings.HasSuffix(r.Path, "/responses") && strings.Contains(r.Text, "QUESTION-FOR-CODEX")
			}
			if !codexSaw {
				t.Fatal("codex never got the question relay ask sent it")
			}
			return `"backend":"codex","answer":"DONE:relayansweredMCP-E2E-CLAUDE-ASKS-CODEX"`
		}},
}

func codexSetup(t *testing.T, home, url string) []string {
	return realcli.Get(t, "codex").Setup(t, home, url)
}

// qwenSetup: as a host, qwen runs with a terminal type (its friend setup has none).
func qwenSetup(t *testing.T, home, url string) []string {
	return append(realcli.Get(t, "qwen").Setup(t, home, url), "TERM=xterm-256color")
}

func qwenArgv(project, prompt string) []string {
	return []string{"qwen", "--auth-type", "openai", "-m", "fake-model", "-o", "text", prompt}
}

func claudeEnv(t *testing.T, url string) []string { return realcli.Get(t, "claude").Setup(t, "", url) }

func claudeArgv(project, prompt string) []string {
	return []string{"claude", "-p", prompt, "--max-turns", "5", "--model", "sonnet",
		"--output-format", "stream-json", "--verbose"}
}

// runThread runs a relay command against the project's thread.
func (w *world) runThread(t *testing.T, args ...string) string {
	t.Helper()
	id := strings.TrimSpace(readFile(t, w, ".relaycode/thread"))
	cmd := exec.Command(w.relay, args...)
	cmd.Dir, cmd.Env = w.project, append(append([]string{}, w.env...), "RELAY_THREAD="+id)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("relay %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (w *world) state(t *testing.T) string { return w.runThread(t, "state", "get") }

func TestRealCLIsCallRelay(t *testing.T) {
	if os.Getenv("RELAY_REAL_CLIS") != "1" {
		t.Skip("set RELAY_REAL_CLIS=1 (after scripts/install-friend-clis.sh) to run the real agent CLIs against relay mcp")
	}
	bin := testsupport.FriendCLIs(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node not on PATH: the agent CLIs need it")
	}
	for _, h := range hostRuns {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			cli := h.cli
			if cli == "" {
				cli = h.name
			}
			if _, err := os.Stat(filepath.Join(bin, cli)); err != nil {
				t.Fatalf("%s not installed in %s: run scripts/install-friend-clis.sh", cli, bin)
			}
			w := newWorld(t)
			marker := "MCP-E2E-" + strings.ToUpper(h.name)
			srv := fakellm.New(t, "DONE: relay answered "+marker, func(s *fakellm.Server) {
				s.Tool = &fakellm.ToolCall{Server: "relay", Name: h.tool, Args: h.args, Trigger: marker}
			})
			for i, e := range w.env {
				if strings.HasPrefix(e, "PATH=") {
					w.env[i] = "PATH=" + bin + ":" + filepath.Dir(node) + ":" + strings.TrimPrefix(e, "PATH=")
				}
			}
			w.env = append(w.env, h.setup(t, w.home, srv.URL)...)
			// the host's config comes from relay install, as a user's would; no allow flag anywhere
			w.run(t, w.relay, "install", cli)

			prompt := marker + ": use the relay " + h.tool + " tool"
			argv := h.argv(w.project, prompt)
			runHost := func() (stdout, stderr bytes.Buffer, err error) {
				ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, filepath.Join(bin, argv[0]), argv[1:]...)
				cmd.Dir, cmd.Env = w.project, w.env
				cmd.Stdin = nil
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				return stdout, stderr, cmd.Run()
			}
			if h.write {
				// the host's own approval refuses a write tool, and says so to the model
				out, errb, err := runHost()
				refusedSeen := false
				for _, r := range srv.Results() {
					refusedSeen = refusedSeen || h.refused != "" && strings.Contains(r, h.refused)
				}
				switch {
				case err != nil:
					t.Fatalf("%s (no --allow-writes): %v\n%s\n%s", h.name, err, lastN(out.String(), 3000), lastN(errb.String(), 3000))
				case h.refused == "" && srv.Calls() != 0:
					t.Fatalf("%s offered the write tool %s without --allow-writes", h.name, h.tool)
				case h.refused != "" && !refusedSeen:
					t.Fatalf("%s ran the write tool %s without --allow-writes, or its refusal %q never reached the model: %q", h.name, h.tool, h.refused, srv.Results())
				}
				t.Logf("%s without --allow-writes: refused by the host (%d tool call(s)): %s", h.name, srv.Calls(), firstN(strings.Join(srv.Results(), " | "), 300))
				// a fresh model for the second run: its first turn must not see the first run's results
				srv = fakellm.New(t, "DONE: relay answered "+marker, func(s *fakellm.Server) {
					s.Tool = &fakellm.ToolCall{Server: "relay", Name: h.tool, Args: h.args, Trigger: marker}
				})
				w.env = append(w.env, h.setup(t, w.home, srv.URL)...) // later entries win
			}
			if h.write || h.allowWrites {
				w.run(t, w.relay, "install", cli, "--allow-writes")
			}
			callsBefore := srv.Calls()
			start := time.Now()
			stdout, stderr, err := runHost()
			t.Logf("%s: %s, exit %v, %d LLM requests, %d tool call(s)", h.name, time.Since(start).Round(time.Millisecond), err, len(srv.Requests()), srv.Calls())
			for _, r := range srv.Requests() {
				t.Logf("  LLM saw %s %s model=%q", r.Method, r.Path, r.Model)
			}
			if err != nil || srv.Calls() == callsBefore {
				t.Fatalf("%s: %v (tool calls %d)\nstdout:\n%s\nstderr:\n%s", h.name, err, srv.Calls(), lastN(stdout.String(), 4000), lastN(stderr.String(), 4000))
			}
			want := h.check(t, w, srv)
			results := srv.Results()
			if len(results) == 0 {
				t.Fatalf("%s never sent the relay tool's result back to the model\nstdout:\n%s", h.name, lastN(stdout.String(), 4000))
			}
			found := false
			for _, r := range results {
				found = found || strings.Contains(strings.ReplaceAll(r, " ", ""), want)
			}
			if !found {
				t.Fatalf("the tool result the model got lacks %q:\n%s", want, results[0])
			}
			t.Logf("%s: the model called %s %s and got back: %s", h.name, h.tool, mustJSON(h.args), firstN(strings.TrimSpace(results[0]), 400))
			t.Logf("%s stdout (transcript):\n%s", h.name, lastN(stdout.String(), 6000))
		})
	}
}

func lastN(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
