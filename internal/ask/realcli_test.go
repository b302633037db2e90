package ask_test

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

// The real-CLI tier: the pinned npm releases of codex, gemini, claude and qwen
// (scripts/install-friend-clis.sh) run under `relay ask` against fakeLLM on
// 127.0.0.1 with a throwaway HOME. It catches a CLI changing its flags, its
// stdin handling or its output format. Opt in with RELAY_REAL_CLIS=1;
// FRIEND_CLIS_BIN overrides where the CLIs are (default .cache/friend-clis/node_modules/.bin).
// Each CLI's settings for the fake LLM are internal/testsupport/realcli's.

func mustWrite(t *testing.T, path, content string) { realcli.Write(t, path, content) }

func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t.invalid", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@t.invalid", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	mustWrite(t, filepath.Join(dir, "main.go"), "package main\n\nfunc main() {}\n")
	run("add", ".")
	run("commit", "-q", "-m", "init")
	mustWrite(t, filepath.Join(dir, "main.go"), "package main\n\nfunc main() { println(\"DIFF-MARKER\") }\n")
	return dir
}

type askOut struct {
	Backend    string `json:"backend"`
	Model      string `json:"model"`
	Answer     string `json:"answer"`
	DurationMS int64  `json:"duration_ms"`
	Tokens     *struct {
		Input  *int64 `json:"input"`
		Output *int64 `json:"output"`
	} `json:"tokens"`
	CostUSD *float64 `json:"cost_usd"`
	Session string   `json:"session"`
}

func TestRealCLIs(t *testing.T) {
	realcli.Skip(t)
	relay := testsupport.BuildRelay(t)
	for _, c := range realcli.All {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			srv := fakellm.New(t, "FAKE-ANSWER from the "+c.Name+" friend.")
			home := t.TempDir()
			repo := gitRepo(t)
			env := append(realcli.Env(t, home, c.Name), c.Setup(t, home, srv.URL)...)

			ask := func(t *testing.T, prompt string, extra ...string) askOut {
				args := []string{"ask", "--to", c.Name, "--prompt", prompt, "--repo", repo, "--json", "--timeout", "120"}
				if c.Model != "" {
					args = append(args, "--model", c.Model)
				}
				args = append(args, extra...)
				ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, relay, args...)
				cmd.Env, cmd.Dir = env, repo
				// relay's own stdin is an open pipe nobody writes to: a friend that
				// inherited it would hang (codex does); relay must feed it the prompt instead
				pr, pw, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer pr.Close()
				defer pw.Close()
				cmd.Stdin = pr
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				start := time.Now()
				err = cmd.Run()
				t.Logf("relay %s: %s, %d requests so far", strings.Join(args[:3], " "), time.Since(start).Round(time.Millisecond), len(srv.Requests()))
				if err != nil {
					for _, r := range srv.Requests() {
						t.Logf("server saw %s %s model=%q stream=%v", r.Method, r.Path, r.Model, r.Stream)
					}
					t.Fatalf("relay ask --to %s: %v\nstdout:\n%s\nstderr:\n%s", c.Name, err, stdout.String(), stderr.String())
				}
				var out askOut
				if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
					t.Fatalf("--json output: %v\n%s", err, stdout.String())
				}
				return out
			}

			prompt := "PROMPT-MARKER-" + c.Name + ": is this change safe?"
			out := ask(t, prompt, "--include-diff")
			if out.Backend != c.Name || out.Answer != srv.Answer {
				t.Errorf("got backend %q answer %q, want %q", out.Backend, out.Answer, srv.Answer)
			}
			for _, want := range []string{"Request:\n" + prompt, "Repository path: " + repo, "Git Diff:\n", "DIFF-MARKER"} {
				if !srv.SawText(want) {
					t.Errorf("the fake LLM never saw %q in a request body", want)
				}
			}
			if out.Tokens == nil || out.Tokens.Output == nil {
				t.Logf("%s reported no output tokens: %+v", c.Name, out)
			}
			t.Logf("%s: model=%q tokens=%v cost=%v duration=%dms", c.Name, out.Model, tokensStr(out), costStr(out.CostUSD), out.DurationMS)

			// a big context goes through stdin intact (one argv element caps at 128 KiB)
			big := filepath.Join(t.TempDir(), "big.txt")
			mustWrite(t, big, strings.Repeat("context line for the friend\n", 7000)+"BIG-CONTEXT-END")
			if out := ask(t, "second question", "--context-file", big); out.Answer != srv.Answer {
				t.Errorf("big context: answer %q", out.Answer)
			}
			if !srv.SawText("BIG-CONTEXT-END") {
				t.Errorf("the end of a 196 KB context never reached the server")
			}

			first := "SESSION-TURN-ONE for " + c.Name
			ask(t, first, "--session", "conv")
			before := len(srv.Requests())
			ask(t, "SESSION-TURN-TWO", "--session", "conv")
			carried := false
			for _, r := range srv.Requests()[before:] {
				if strings.Contains(r.Text, "SESSION-TURN-TWO") && strings.Contains(r.Text, first) {
					carried = true
				}
			}
			if !carried {
				t.Errorf("the second --session turn did not carry the first turn's history")
			}
		})
	}
}

func tokensStr(o askOut) string {
	if o.Tokens == nil {
		return "-"
	}
	f := func(p *int64) string {
		if p == nil {
			return "?"
		}
		return strings.TrimSpace(strings.Repeat(" ", 0) + itoa(*p))
	}
	return f(o.Tokens.Input) + "/" + f(o.Tokens.Output)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func costStr(c *float64) string {
	if c == nil {
		return "-"
	}
	b, _ := json.Marshal(*c)
	return string(b)
}

// TestRealCodexNested: codex (the real CLI) runs `relay ask` itself through
// its shell tool. The nested relay must refuse: the host guard (codex never
// phones codex) and the depth guard (PHONE_A_FRIEND_DEPTH=1), both across a
// real agent, with the refusals reaching the model as the tool's output.
func TestRealCodexNested(t *testing.T) {
	if os.Getenv("RELAY_REAL_CLIS") != "1" {
		t.Skip("set RELAY_REAL_CLIS=1 to run the real friend CLIs")
	}
	bin := testsupport.FriendCLIs(t)
	relay := testsupport.BuildRelay(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node not on PATH")
	}
	srv := fakellm.New(t, "NESTED-DONE", func(s *fakellm.Server) {
		// codex's shell is a login shell that resets PATH, so name relay by its path
		s.ShellCmd = relay + " ask --to codex --max-depth 5 --prompt inner 2>&1; echo host-rc=$?; " +
			relay + " ask --to claude --prompt inner 2>&1; echo depth-rc=$?; env | grep -E '^(PHONE_A_FRIEND|CODEX_SANDBOX)' | sort"
	})
	home := t.TempDir()
	repo := gitRepo(t)
	env := []string{"PATH=" + strings.Join([]string{filepath.Dir(relay), bin, filepath.Dir(node), "/usr/bin", "/bin"}, ":"),
		"HOME=" + home, "RELAY_HOME=" + filepath.Join(home, ".relay"), "TMPDIR=" + t.TempDir(), "LANG=C.UTF-8"}
	env = append(env, realcli.Get(t, "codex").Setup(t, home, srv.URL)...)
	for _, sandbox := range []string{"read-only", "danger-full-access"} {
		before := len(srv.Requests())
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
		cmd := exec.CommandContext(ctx, relay, "ask", "--to", "codex", "--prompt", "run the check", "--repo", repo, "--sandbox", sandbox, "--timeout", "120")
		cmd.Env, cmd.Dir = env, repo
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s: relay ask: %v\n%s", sandbox, err, out)
		}
		var toolOutput string
		for _, r := range srv.Requests()[before:] {
			var body struct {
				Input []struct {
					Type   string          `json:"type"`
					Output json.RawMessage `json:"output"`
				} `json:"input"`
			}
			_ = json.Unmarshal(r.Body, &body)
			for _, in := range body.Input {
				if in.Type == "function_call_output" {
					var sb strings.Builder
					var v any
					_ = json.Unmarshal(in.Output, &v)
					fakellm.CollectStrings(v, &sb)
					toolOutput = sb.String()
				}
			}
		}
		if toolOutput == "" {
			t.Fatalf("%s: codex never returned the tool's output to the model", sandbox)
		}
		for _, want := range []string{
			"codex is already the host of this relay invocation", "host-rc=1",
			"relay depth limit reached; refusing nested relay invocation", "depth-rc=1", // the terminal form: lower case after "Error: "
			"PHONE_A_FRIEND_DEPTH=1", "PHONE_A_FRIEND_HOST=codex",
		} {
			if !strings.Contains(toolOutput, want) {
				t.Errorf("%s: the nested relay's output lacks %q; codex returned:\n%s", sandbox, want, lastN(toolOutput, 3000))
			}
		}
		t.Logf("%s: sandbox markers seen by codex's shell: CODEX_SANDBOX_NETWORK_DISABLED=%v", sandbox, strings.Contains(toolOutput, "CODEX_SANDBOX_NETWORK_DISABLED=1"))
	}
}

func lastN(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestRealClaudeNested: the real claude runs `relay ask --to claude` through
// its Bash tool (danger-full-access). Inside Claude Code, CLAUDECODE=1 marks
// claude as the host, so the nested call is refused even with the depth
// guard raised; with the default depth it is refused by the depth guard.
func TestRealClaudeNested(t *testing.T) {
	if os.Getenv("RELAY_REAL_CLIS") != "1" {
		t.Skip("set RELAY_REAL_CLIS=1 to run the real friend CLIs")
	}
	bin := testsupport.FriendCLIs(t)
	relay := testsupport.BuildRelay(t)
	srv := fakellm.New(t, "NESTED-DONE", func(s *fakellm.Server) {
		s.BashTrigger = "run the claude check"
		// PHONE_A_FRIEND_HOST is cleared so only Claude Code's own marker can name the host
		s.ShellCmd = "env -u PHONE_A_FRIEND_HOST " + relay + " ask --to claude --max-depth 5 --prompt inner 2>&1; echo host-rc=$?; " +
			relay + " ask --to gemini --prompt inner 2>&1; echo depth-rc=$?; env | grep -E '^(PHONE_A_FRIEND|CLAUDECODE)' | sort"
	})
	home := t.TempDir()
	repo := gitRepo(t)
	env := []string{"PATH=" + strings.Join([]string{filepath.Dir(relay), bin, "/usr/bin", "/bin"}, ":"),
		"HOME=" + home, "RELAY_HOME=" + filepath.Join(home, ".relay"), "TMPDIR=" + t.TempDir(), "LANG=C.UTF-8", "IS_SANDBOX=1"}
	env = append(env, realcli.Get(t, "claude").Setup(t, home, srv.URL)...)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, relay, "ask", "--to", "claude", "--prompt", "run the claude check", "--repo", repo,
		"--sandbox", "danger-full-access", "--timeout", "120", "--model", "sonnet")
	cmd.Env, cmd.Dir = env, repo
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("relay ask: %v\n%s", err, out)
	}
	var toolOutput string
	for _, r := range srv.Requests() {
		if strings.Contains(string(r.Body), "tool_result") {
			toolOutput = r.Text
		}
	}
	if toolOutput == "" {
		t.Fatalf("claude never sent the Bash tool's result back; relay printed:\n%s", out)
	}
	for _, want := range []string{
		"claude is already the host of this relay invocation", "host-rc=1",
		"relay depth limit reached; refusing nested relay invocation", "depth-rc=1", // the terminal form: lower case after "Error: "
		"PHONE_A_FRIEND_DEPTH=1", "CLAUDECODE=1",
	} {
		if !strings.Contains(toolOutput, want) {
			t.Errorf("the nested relay's output lacks %q; claude returned:\n%s", want, lastN(toolOutput, 3000))
		}
	}
	for _, line := range strings.Split(toolOutput, "\n") {
		if strings.Contains(line, "rc=") || strings.HasPrefix(line, "Error:") {
			t.Logf("nested: %s", line)
		}
	}
}

// TestRealGeminiDefaultModel: without --model gemini routes the request
// itself (an extra JSON classifier call first); relay must still get the answer.
func TestRealGeminiDefaultModel(t *testing.T) {
	if os.Getenv("RELAY_REAL_CLIS") != "1" {
		t.Skip("set RELAY_REAL_CLIS=1 to run the real friend CLIs")
	}
	bin := testsupport.FriendCLIs(t)
	relay := testsupport.BuildRelay(t)
	srv := fakellm.New(t, "DEFAULT-MODEL-ANSWER")
	home := t.TempDir()
	repo := gitRepo(t)
	env := []string{"PATH=" + strings.Join([]string{bin, "/usr/local/bin", "/usr/bin", "/bin"}, ":"),
		"HOME=" + home, "RELAY_HOME=" + filepath.Join(home, ".relay"), "TMPDIR=" + t.TempDir(), "LANG=C.UTF-8"}
	env = append(env, realcli.Get(t, "gemini").Setup(t, home, srv.URL)...)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, relay, "ask", "--to", "gemini", "--prompt", "which model?", "--repo", repo, "--timeout", "120", "--json")
	cmd.Env, cmd.Dir = env, repo
	out, err := cmd.CombinedOutput()
	if err != nil {
		for _, r := range srv.Requests() {
			t.Logf("server saw %s %s model=%q", r.Method, r.Path, r.Model)
		}
		t.Fatalf("relay ask --to gemini (no --model): %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"answer": "DEFAULT-MODEL-ANSWER"`) {
		t.Fatalf("unexpected output:\n%s", out)
	}
	for _, r := range srv.Requests() {
		t.Logf("server saw %s %s model=%q", r.Method, r.Path, r.Model)
	}
}
