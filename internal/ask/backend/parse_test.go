package backend

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// canned runs a backend against a runner that returns out (and writes the
// codex last-message file when lastMsg is set).
func canned(t *testing.T, name string, out Output, lastMsg string) (Result, error) {
	t.Helper()
	b, _ := New(name, Options{LookPath: fakeLookPath, Runner: func(_ context.Context, inv Invocation) (Output, error) {
		if lastMsg != "" && inv.OutputFile != "" {
			if err := os.WriteFile(inv.OutputFile, []byte(lastMsg), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return out, nil
	}})
	req := baseReq(ReadOnly, "")
	req.Timeout = 7 * time.Second
	return b.Run(context.Background(), req)
}

func TestParseSuccess(t *testing.T) {
	tests := []struct {
		name, backend, stdout, lastMsg string
		answer, model, session         string
		in, out                        int64
		cost                           float64
	}{
		{name: "codex jsonl + last message", backend: "codex",
			stdout: `{"type":"thread.started","thread_id":"th-9"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"from stream"}}
{"type":"turn.completed","usage":{"input_tokens":120,"cached_input_tokens":0,"output_tokens":7}}
`, lastMsg: "from file\n", answer: "from file", session: "th-9", in: 120, out: 7},
		{name: "codex stream fallback", backend: "codex",
			stdout: `{"type":"thread.started","thread_id":"th-1"}
{"type":"item.completed","item":{"type":"agent_message","text":"from stream"}}
`, answer: "from stream", session: "th-1", in: -1, out: -1},
		{name: "codex plain stdout fallback (seed)", backend: "codex", stdout: "  plain answer \n", answer: "plain answer", in: -1, out: -1},
		{name: "claude json", backend: "claude",
			stdout: `{"type":"result","subtype":"success","is_error":false,"result":"hi there","session_id":"s-1","num_turns":1,"total_cost_usd":0.000138,"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":3},"modelUsage":{"claude-haiku":{"costUSD":0.00001,"outputTokens":1},"claude-sonnet-4":{"costUSD":0.0001,"outputTokens":3}}}`,
			answer: "hi there", model: "claude-sonnet-4", session: "s-1", in: 115, out: 3, cost: 0.000138},
		{name: "claude text fallback", backend: "claude", stdout: "just text\n", answer: "just text", in: -1, out: -1},
		{name: "gemini json", backend: "gemini",
			stdout: `{"session_id":"g-1","response":"gem answer","stats":{"models":{"gemini-2.5-flash-lite":{"tokens":{"prompt":50,"candidates":1}},"gemini-2.5-flash":{"tokens":{"input":900,"prompt":1000,"candidates":42}}}}}`,
			answer: "gem answer", model: "gemini-2.5-flash", session: "g-1", in: 1050, out: 43},
		{name: "gemini json after log noise", backend: "gemini",
			stdout: "Ripgrep is not available. Falling back to GrepTool.\n{\"session_id\":\"g-2\",\"response\":\"ok\"}\n", answer: "ok", session: "g-2", in: -1, out: -1},
		{name: "qwen json array", backend: "qwen",
			stdout: `[{"type":"system","subtype":"init","session_id":"q-1","model":"fake-model"},{"type":"assistant","message":{"content":[{"type":"text","text":"qwen says"}],"usage":{"input_tokens":30,"output_tokens":4}}},{"type":"result","subtype":"success","is_error":false,"duration_ms":12,"result":"qwen says"}]`,
			answer: "qwen says", model: "fake-model", session: "q-1", in: 30, out: 4},
		{name: "opencode ndjson", backend: "opencode",
			stdout: `{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}
{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"open answer"}}
{"type":"step_finish","sessionID":"ses_1","part":{"type":"step-finish","cost":0.002,"tokens":{"input":11,"output":5}}}
`, answer: "open answer", session: "ses_1", in: 11, out: 5, cost: 0.002},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := canned(t, tt.backend, Output{Stdout: []byte(tt.stdout)}, tt.lastMsg)
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if res.Answer != tt.answer || res.Model != tt.model || res.SessionID != tt.session {
				t.Errorf("got answer=%q model=%q session=%q; want %q %q %q", res.Answer, res.Model, res.SessionID, tt.answer, tt.model, tt.session)
			}
			checkInt(t, "input", res.InputTokens, tt.in)
			checkInt(t, "output", res.OutputTokens, tt.out)
			if tt.cost == 0 && res.CostUSD != nil || tt.cost != 0 && (res.CostUSD == nil || *res.CostUSD != tt.cost) {
				t.Errorf("cost = %v, want %v", res.CostUSD, tt.cost)
			}
		})
	}
}

func checkInt(t *testing.T, what string, got *int64, want int64) {
	t.Helper()
	switch {
	case want < 0 && got != nil:
		t.Errorf("%s tokens = %d, want absent", what, *got)
	case want >= 0 && (got == nil || *got != want):
		t.Errorf("%s tokens = %v, want %d", what, got, want)
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name, backend string
		out           Output
		kind          Kind
		msg, hint     string
	}{
		{"codex empty (seed message)", "codex", Output{}, KindEmpty, "codex exec completed without producing feedback", ""},
		{"gemini empty (seed message)", "gemini", Output{Stdout: []byte(`{"response":"  "}`)}, KindEmpty, "gemini completed without producing output", ""},
		{"codex stderr", "codex", Output{ExitCode: 2, Stderr: []byte("  boom\n")}, KindFailed, "boom", "exited with code 2"},
		{"codex error events beat the stderr banner", "codex", Output{ExitCode: 1, Stderr: []byte("model: x\nprovider: y"),
			Stdout: []byte(`{"type":"error","message":"stream disconnected"}` + "\n" + `{"type":"turn.failed","error":{"message":"quota exceeded"}}`)}, KindFailed, "stream disconnected\nquota exceeded", ""},
		{"codex exit code only (seed)", "codex", Output{ExitCode: 3}, KindFailed, "codex exec exited with code 3", ""},
		{"gemini exit code only (seed)", "gemini", Output{ExitCode: 4}, KindFailed, "gemini exited with code 4", ""},
		{"gemini stdout when no stderr", "gemini", Output{ExitCode: 1, Stdout: []byte("bad things\n")}, KindFailed, "bad things", ""},
		{"gemini auth exit 41", "gemini", Output{ExitCode: 41, Stderr: []byte("Invalid auth method selected.")}, KindNotLoggedIn, "Invalid auth method selected.", "GEMINI_API_KEY"},
		{"gemini unknown session", "gemini", Output{ExitCode: 42, Stderr: []byte(`Error resuming session: Invalid session identifier "x".`)}, KindFailed, `Error resuming session: Invalid session identifier "x".`, "new --session label"},
		{"claude not logged in on stdout", "claude", Output{ExitCode: 1, Stdout: []byte("Not logged in · Please run /login\n")}, KindNotLoggedIn, "Not logged in · Please run /login", "/login"},
		{"claude json is_error", "claude", Output{Stdout: []byte(`{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login"}`)}, KindNotLoggedIn, "Invalid API key · Please run /login", "ANTHROPIC_API_KEY"},
		{"claude root refusal", "claude", Output{ExitCode: 1, Stderr: []byte("--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons")}, KindFailed, "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons", "IS_SANDBOX=1"},
		{"qwen result error", "qwen", Output{Stdout: []byte(`[{"type":"result","is_error":true,"result":"rate limited"}]`)}, KindFailed, "rate limited", ""},
		{"opencode error event", "opencode", Output{Stdout: []byte(`{"type":"error","error":{"name":"ProviderAuthError","data":{"message":"no provider credentials"}}}`)}, KindFailed, "no provider credentials", ""},
		{"timeout (seed message)", "codex", Output{TimedOut: true, ExitCode: -1}, KindTimeout, "codex exec timed out after 7s", "--timeout"},
		{"gemini timeout (seed message)", "gemini", Output{TimedOut: true, ExitCode: -1}, KindTimeout, "gemini timed out after 7s", "--timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := canned(t, tt.backend, tt.out, "")
			var be *Error
			if !asError(err, &be) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if be.Kind != tt.kind || be.Message != tt.msg {
				t.Errorf("got kind %d %q, want kind %d %q", be.Kind, be.Message, tt.kind, tt.msg)
			}
			if be.Hint == "" || !strings.Contains(be.Hint, tt.hint) {
				t.Errorf("hint %q, want one containing %q", be.Hint, tt.hint)
			}
		})
	}
}

func TestFailureDetailBounded(t *testing.T) {
	huge := strings.Repeat("x", 100_000) + "THE CAUSE"
	_, err := canned(t, "gemini", Output{ExitCode: 1, Stderr: []byte(huge)}, "")
	var be *Error
	if !asError(err, &be) || len(be.Message) > maxDetail+10 || !strings.HasSuffix(be.Message, "THE CAUSE") {
		t.Fatalf("message len %d, suffix kept: %v", len(be.Message), strings.HasSuffix(be.Message, "THE CAUSE"))
	}
}

func TestCodexUnreadableLastMessage(t *testing.T) {
	b, _ := New("codex", Options{LookPath: fakeLookPath, Runner: func(_ context.Context, inv Invocation) (Output, error) {
		return Output{}, os.Mkdir(inv.OutputFile, 0o700) // a directory cannot be read as the message
	}})
	_, err := b.Run(context.Background(), baseReq(ReadOnly, ""))
	var be *Error
	if !asError(err, &be) || !strings.HasPrefix(be.Message, "Failed reading Codex output file: ") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzParsers(f *testing.F) {
	f.Add([]byte(`{"type":"thread.started","thread_id":"x"}`))
	f.Add([]byte(`{"type":"result","result":"a","usage":{"input_tokens":1}}`))
	f.Add([]byte(`[{"type":"assistant","message":{"content":[{"type":"text","text":"a"}]}}]`))
	f.Add([]byte(`{"response":"r","stats":{"models":{"m":{"tokens":{"prompt":1}}}}}`))
	f.Add([]byte("noise\n{\"type\":\"text\",\"part\":{\"text\":\"t\"}}\n"))
	f.Fuzz(func(t *testing.T, stdout []byte) {
		for _, spec := range []cliSpec{codexSpec{}, geminiSpec{}, claudeSpec{}, qwenSpec{}, opencodeSpec{}} {
			_, _ = spec.parse(Invocation{}, Output{Stdout: stdout})
			_ = spec.detail(Invocation{}, Output{Stdout: stdout, ExitCode: 1})
		}
	})
}
