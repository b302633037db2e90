package backend

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func fakeLookPath(name string) (string, error) { return "/bin/" + name, nil }

func planFor(t *testing.T, name string, req Request) Invocation {
	t.Helper()
	b, ok := New(name, Options{LookPath: fakeLookPath})
	if !ok {
		t.Fatalf("no backend %q", name)
	}
	inv, err := b.(*cliBackend).Plan(req, "/tmp/paf")
	if err != nil {
		t.Fatalf("Plan(%s): %v", name, err)
	}
	return inv
}

func baseReq(sandbox, model string) Request {
	return Request{Prompt: "PROMPT\nwith lines", Repo: "/work/repo", Sandbox: sandbox, Model: model,
		Env: []string{"PATH=/bin", "PHONE_A_FRIEND_DEPTH=1", "CLAUDECODE=1", "CLAUDE_CODE_SESSION=x"}, Euid: 1000}
}

// TestPlanArgv pins the argv of every CLI backend for every sandbox × model.
func TestPlanArgv(t *testing.T) {
	const lm = "/tmp/paf/codex-last-message.txt"
	const P = "PROMPT\nwith lines"
	tests := []struct {
		backend, sandbox, model string
		want                    []string
	}{
		{"codex", ReadOnly, "", []string{"exec", "-C", "/work/repo", "--skip-git-repo-check", "--sandbox", "read-only", "--ephemeral", "--json", "--output-last-message", lm, "-"}},
		{"codex", WorkspaceWrite, "", []string{"exec", "-C", "/work/repo", "--skip-git-repo-check", "--sandbox", "workspace-write", "--ephemeral", "--json", "--output-last-message", lm, "-"}},
		{"codex", DangerFullAccess, "", []string{"exec", "-C", "/work/repo", "--skip-git-repo-check", "--sandbox", "danger-full-access", "--ephemeral", "--json", "--output-last-message", lm, "-"}},
		{"codex", ReadOnly, "gpt-5", []string{"exec", "-C", "/work/repo", "--skip-git-repo-check", "--sandbox", "read-only", "--ephemeral", "--json", "--output-last-message", lm, "-m", "gpt-5", "-"}},
		{"codex", WorkspaceWrite, "gpt-5", []string{"exec", "-C", "/work/repo", "--skip-git-repo-check", "--sandbox", "workspace-write", "--ephemeral", "--json", "--output-last-message", lm, "-m", "gpt-5", "-"}},
		{"codex", DangerFullAccess, "gpt-5", []string{"exec", "-C", "/work/repo", "--skip-git-repo-check", "--sandbox", "danger-full-access", "--ephemeral", "--json", "--output-last-message", lm, "-m", "gpt-5", "-"}},

		{"gemini", ReadOnly, "", []string{"--skip-trust", "--approval-mode", "plan", "--include-directories", "/work/repo", "--output-format", "stream-json", "--prompt", "(end of request)"}},
		{"gemini", WorkspaceWrite, "", []string{"--skip-trust", "--approval-mode", "auto_edit", "--include-directories", "/work/repo", "--output-format", "stream-json", "--prompt", "(end of request)"}},
		{"gemini", DangerFullAccess, "", []string{"--skip-trust", "--yolo", "--include-directories", "/work/repo", "--output-format", "stream-json", "--prompt", "(end of request)"}},
		{"gemini", ReadOnly, "gemini-2.5-flash", []string{"--skip-trust", "--approval-mode", "plan", "--include-directories", "/work/repo", "--output-format", "stream-json", "-m", "gemini-2.5-flash", "--prompt", "(end of request)"}},
		{"gemini", WorkspaceWrite, "gemini-2.5-flash", []string{"--skip-trust", "--approval-mode", "auto_edit", "--include-directories", "/work/repo", "--output-format", "stream-json", "-m", "gemini-2.5-flash", "--prompt", "(end of request)"}},
		{"gemini", DangerFullAccess, "gemini-2.5-flash", []string{"--skip-trust", "--yolo", "--include-directories", "/work/repo", "--output-format", "stream-json", "-m", "gemini-2.5-flash", "--prompt", "(end of request)"}},

		{"claude", ReadOnly, "", []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--add-dir", "/work/repo", "--max-turns", "10", "--tools", "Read,Grep,Glob,LS", "--allowedTools", "Read,Grep,Glob,LS", "--disable-slash-commands", "--disallowedTools", "Task", "--no-session-persistence"}},
		{"claude", WorkspaceWrite, "", []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--add-dir", "/work/repo", "--max-turns", "10", "--tools", "Read,Grep,Glob,LS,Edit,Write", "--allowedTools", "Read,Grep,Glob,LS,Edit,Write", "--disable-slash-commands", "--disallowedTools", "Task", "--no-session-persistence"}},
		{"claude", DangerFullAccess, "", []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--add-dir", "/work/repo", "--max-turns", "10", "--dangerously-skip-permissions", "--disable-slash-commands", "--disallowedTools", "Task", "--no-session-persistence"}},
		{"claude", ReadOnly, "sonnet", []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--add-dir", "/work/repo", "--model", "sonnet", "--max-turns", "10", "--tools", "Read,Grep,Glob,LS", "--allowedTools", "Read,Grep,Glob,LS", "--disable-slash-commands", "--disallowedTools", "Task", "--no-session-persistence"}},
		{"claude", WorkspaceWrite, "sonnet", []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--add-dir", "/work/repo", "--model", "sonnet", "--max-turns", "10", "--tools", "Read,Grep,Glob,LS,Edit,Write", "--allowedTools", "Read,Grep,Glob,LS,Edit,Write", "--disable-slash-commands", "--disallowedTools", "Task", "--no-session-persistence"}},
		{"claude", DangerFullAccess, "sonnet", []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--add-dir", "/work/repo", "--model", "sonnet", "--max-turns", "10", "--dangerously-skip-permissions", "--disable-slash-commands", "--disallowedTools", "Task", "--no-session-persistence"}},

		{"qwen", ReadOnly, "", []string{"--approval-mode", "plan", "--output-format", "stream-json", "--include-partial-messages"}},
		{"qwen", WorkspaceWrite, "", []string{"--approval-mode", "auto-edit", "--output-format", "stream-json", "--include-partial-messages"}},
		{"qwen", DangerFullAccess, "", []string{"--approval-mode", "yolo", "--output-format", "stream-json", "--include-partial-messages"}},
		{"qwen", ReadOnly, "qwen3-coder", []string{"--approval-mode", "plan", "--output-format", "stream-json", "--include-partial-messages", "-m", "qwen3-coder"}},
		{"qwen", WorkspaceWrite, "qwen3-coder", []string{"--approval-mode", "auto-edit", "--output-format", "stream-json", "--include-partial-messages", "-m", "qwen3-coder"}},
		{"qwen", DangerFullAccess, "qwen3-coder", []string{"--approval-mode", "yolo", "--output-format", "stream-json", "--include-partial-messages", "-m", "qwen3-coder"}},

		{"opencode", ReadOnly, "", []string{"run", "--format", "json", "--dir", "/work/repo"}},
		{"opencode", WorkspaceWrite, "", []string{"run", "--format", "json", "--dir", "/work/repo"}},
		{"opencode", DangerFullAccess, "", []string{"run", "--format", "json", "--dir", "/work/repo"}},
		{"opencode", ReadOnly, "ollama/qwen3", []string{"run", "--format", "json", "--dir", "/work/repo", "--model", "ollama/qwen3"}},
		{"opencode", WorkspaceWrite, "ollama/qwen3", []string{"run", "--format", "json", "--dir", "/work/repo", "--model", "ollama/qwen3"}},
		{"opencode", DangerFullAccess, "ollama/qwen3", []string{"run", "--format", "json", "--dir", "/work/repo", "--model", "ollama/qwen3"}},

		{"agy", ReadOnly, "", []string{"--add-dir", "/work/repo", "--print-timeout", "595s", "--sandbox", "--mode", "plan"}},
		{"agy", ReadOnly, "gemini-3-pro", []string{"--add-dir", "/work/repo", "--print-timeout", "595s", "--sandbox", "--mode", "plan", "--model", "gemini-3-pro"}},
	}
	seen := map[string]int{}
	for _, tt := range tests {
		seen[tt.backend]++
		t.Run(tt.backend+"/"+tt.sandbox+"/"+tt.model, func(t *testing.T) {
			inv := planFor(t, tt.backend, baseReq(tt.sandbox, tt.model))
			if diff := cmp.Diff(tt.want, inv.Args); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}
			if inv.Path != "/bin/"+tt.backend {
				t.Errorf("path = %q", inv.Path)
			}
			if inv.Dir != "/work/repo" {
				t.Errorf("dir = %q, want the repo", inv.Dir)
			}
			// every friend gets the prompt on stdin, never in argv, where any
			// local user reads it in /proc/<pid>/cmdline (and argv caps at 128 KiB)
			if inv.Stdin != P {
				t.Errorf("stdin = %q", inv.Stdin)
			}
			for _, a := range inv.Args {
				if strings.Contains(a, "PROMPT") {
					t.Errorf("prompt leaked into argv: %q", a)
				}
			}
			if v, _ := lookupEnv(inv.Env, "PHONE_A_FRIEND_DEPTH"); v != "1" {
				t.Errorf("PHONE_A_FRIEND_DEPTH = %q, want the caller's value passed through", v)
			}
		})
	}
	for _, n := range []string{"codex", "gemini", "claude", "qwen", "opencode"} {
		if seen[n] != 6 {
			t.Errorf("%s has %d argv cases, want 3 sandboxes × 2 models", n, seen[n])
		}
	}
	if seen["agy"] != 2 {
		t.Errorf("agy has %d argv cases, want read-only × 2 models", seen["agy"])
	}
}

func TestPlanEnv(t *testing.T) {
	claude := planFor(t, "claude", baseReq(ReadOnly, ""))
	for _, k := range []string{"CLAUDECODE", "CLAUDE_CODE_SESSION"} {
		if _, ok := lookupEnv(claude.Env, k); ok {
			t.Errorf("claude env keeps %s; its nested-session guard would fire", k)
		}
	}
	codex := planFor(t, "codex", baseReq(ReadOnly, ""))
	if v, _ := lookupEnv(codex.Env, "CLAUDECODE"); v != "1" {
		t.Errorf("codex env lost CLAUDECODE (only claude drops it)")
	}
	if codex.OutputFile != "/tmp/paf/codex-last-message.txt" {
		t.Errorf("codex output file = %q", codex.OutputFile)
	}
	wantPerm := map[string]string{
		ReadOnly:         `"edit":"deny","bash":"deny"`,
		WorkspaceWrite:   `"edit":"allow","bash":"deny"`,
		DangerFullAccess: `{"permission":"allow"}`,
	}
	for mode, frag := range wantPerm {
		oc := planFor(t, "opencode", baseReq(mode, ""))
		v, ok := lookupEnv(oc.Env, "OPENCODE_CONFIG_CONTENT")
		if !ok || !strings.Contains(v, frag) {
			t.Errorf("opencode %s: OPENCODE_CONFIG_CONTENT = %q, want it to contain %s", mode, v, frag)
		}
	}
	req := baseReq(ReadOnly, "")
	req.Env = append(req.Env, "CLAUDE_MAX_TURNS=3")
	if c := planFor(t, "claude", req); !slices.Contains(c.Args, "3") {
		t.Errorf("CLAUDE_MAX_TURNS ignored: %q", c.Args)
	}
}

func TestPlanSessions(t *testing.T) {
	tests := []struct {
		backend string
		session Session
		want    []string // must appear in this order (not necessarily adjacent)
		absent  []string
	}{
		{"codex", Session{Persist: true}, []string{"exec", "-C", "--sandbox"}, []string{"--ephemeral", "resume"}},
		{"codex", Session{ID: "th-1", Resume: true, Persist: true}, []string{"exec", "resume", "th-1", "--skip-git-repo-check", "-c", `sandbox_mode="read-only"`, "--json", "-"}, []string{"-C", "--sandbox", "--ephemeral"}},
		{"claude", Session{ID: "u-1", Persist: true}, []string{"--add-dir", "--session-id", "u-1"}, []string{"-r", "--no-session-persistence"}},
		{"claude", Session{ID: "u-1", Resume: true, Persist: true}, []string{"-r", "u-1"}, []string{"--add-dir", "--session-id", "--no-session-persistence"}},
		{"gemini", Session{ID: "g-1", Persist: true}, []string{"--session-id", "g-1", "--prompt"}, []string{"--resume"}},
		{"gemini", Session{ID: "g-1", Resume: true, Persist: true}, []string{"--resume", "g-1", "--prompt"}, []string{"--session-id"}},
		{"qwen", Session{ID: "q-1", Persist: true}, []string{"--session-id", "q-1"}, []string{"-r"}},
		{"qwen", Session{ID: "q-1", Resume: true, Persist: true}, []string{"-r", "q-1"}, []string{"--session-id"}},
	}
	for _, tt := range tests {
		req := baseReq(ReadOnly, "")
		req.Session = tt.session
		inv := planFor(t, tt.backend, req)
		i := 0
		for _, a := range inv.Args {
			if i < len(tt.want) && a == tt.want[i] {
				i++
			}
		}
		if i != len(tt.want) {
			t.Errorf("%s %+v: argv %q lacks %q in order", tt.backend, tt.session, inv.Args, tt.want)
		}
		for _, a := range tt.absent {
			if slices.Contains(inv.Args, a) {
				t.Errorf("%s %+v: argv %q must not contain %q", tt.backend, tt.session, inv.Args, a)
			}
		}
		if inv.Dir != "/work/repo" {
			t.Errorf("%s resume must still run in the repo, dir = %q", tt.backend, inv.Dir)
		}
	}
}

func TestClaudeRootDangerRefused(t *testing.T) {
	b, _ := New("claude", Options{LookPath: fakeLookPath})
	req := baseReq(DangerFullAccess, "")
	req.Euid = 0
	_, err := b.(*cliBackend).Plan(req, t.TempDir())
	var be *Error
	if err == nil || !asError(err, &be) || be.Kind != KindRefused || !strings.Contains(be.Hint, "IS_SANDBOX=1") {
		t.Fatalf("root + danger without IS_SANDBOX: err = %v", err)
	}
	req.Env = append(req.Env, "IS_SANDBOX=1")
	if _, err := b.(*cliBackend).Plan(req, t.TempDir()); err != nil {
		t.Fatalf("root + danger with IS_SANDBOX=1 refused: %v", err)
	}
}

func TestNotFoundMessage(t *testing.T) {
	for _, name := range []string{"codex", "gemini", "claude", "qwen", "opencode"} {
		b, _ := New(name, Options{LookPath: func(string) (string, error) { return "", os.ErrNotExist }})
		_, err := b.Run(t.Context(), baseReq(ReadOnly, ""))
		var be *Error
		if !asError(err, &be) || be.Kind != KindNotFound {
			t.Fatalf("%s: err = %v", name, err)
		}
		want := name + " CLI not found in PATH. Install it: " + b.InstallHint()
		if be.Message != want {
			t.Errorf("%s: message %q, want %q", name, be.Message, want)
		}
	}
	// the seed's exact texts for its two backends
	if got := InstallHint("codex"); got != "npm install -g @openai/codex" {
		t.Errorf("codex hint %q", got)
	}
	if got := InstallHint("gemini"); got != "npm install -g @google/gemini-cli" {
		t.Errorf("gemini hint %q", got)
	}
}

func TestTempDirRemoved(t *testing.T) {
	var seen string
	b, _ := New("codex", Options{LookPath: fakeLookPath, Runner: func(_ context.Context, inv Invocation) (Output, error) {
		seen = filepath.Dir(inv.OutputFile)
		if err := os.WriteFile(inv.OutputFile, []byte("  the answer \n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return Output{}, nil
	}})
	res, err := b.Run(t.Context(), baseReq(ReadOnly, ""))
	if err != nil || res.Answer != "the answer" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if !strings.HasPrefix(filepath.Base(seen), "phone-a-friend-") {
		t.Errorf("temp dir %q lacks the seed's prefix", seen)
	}
	if _, err := os.Stat(seen); !os.IsNotExist(err) {
		t.Errorf("temp dir %s left behind", seen)
	}
}

func asError(err error, target **Error) bool { return errors.As(err, target) }

// TestLargePromptOnStdin: a prompt of any size goes on stdin, for every
// friend; argv holds no element near the 128 KiB cap.
func TestLargePromptOnStdin(t *testing.T) {
	req := baseReq(ReadOnly, "")
	req.Prompt = strings.Repeat("x", 500_000)
	for _, name := range Names() {
		b, _ := New(name, Options{LookPath: fakeLookPath})
		cb, ok := b.(*cliBackend)
		if !ok {
			continue // ollama: HTTP
		}
		inv, err := cb.Plan(req, "/tmp/paf")
		if err != nil {
			t.Fatal(err)
		}
		if inv.Stdin != req.Prompt || slices.Contains(inv.Args, req.Prompt) {
			t.Errorf("%s: stdin %d bytes, prompt in argv %v", name, len(inv.Stdin), slices.Contains(inv.Args, req.Prompt))
		}
		for _, a := range inv.Args {
			if len(a) > 4096 {
				t.Errorf("%s: argv element of %d bytes", name, len(a))
			}
		}
	}
}
