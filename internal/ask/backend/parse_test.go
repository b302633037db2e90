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
		{name: "claude stream-json", backend: "claude",
			stdout: `{"type":"system","subtype":"init","session_id":"s-1","model":"claude-sonnet-4"}
{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}
{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi "}}}
{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"there"}}}
{"type":"result","subtype":"success","is_error":false,"result":"hi there","session_id":"s-1","num_turns":1,"total_cost_usd":0.000138,"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":3},"modelUsage":{"claude-haiku":{"costUSD":0.00001,"outputTokens":1},"claude-sonnet-4":{"costUSD":0.0001,"outputTokens":3}}}`,
			answer: "hi there", model: "claude-sonnet-4", session: "s-1", in: 115, out: 3, cost: 0.000138},
		{name: "claude text fallback", backend: "claude", stdout: "just text\n", answer: "just text", in: -1, out: -1},
		{name: "gemini stream-json", backend: "gemini",
			stdout: `{"type":"init","session_id":"g-1","model":"gemini-2.5-flash"}
{"type":"message","role":"user","content":"the prompt"}
{"type":"message","role":"assistant","content":"gem ","delta":true}
{"type":"message","role":"assistant","content":"answer","delta":true}
{"type":"result","status":"success","stats":{"total_tokens":1093,"input_tokens":1050,"output_tokens":43,"models":{"gemini-2.5-flash-lite":{"output_tokens":1},"gemini-2.5-flash":{"output_tokens":42}}}}`,
			answer: "gem answer", model: "gemini-2.5-flash", session: "g-1", in: 1050, out: 43},
		{name: "gemini events after log noise", backend: "gemini",
			stdout: "Ripgrep is not available. Falling back to GrepTool.\n{\"type\":\"init\",\"session_id\":\"g-2\",\"model\":\"m\"}\n{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"ok\",\"delta\":true}\n",
			answer: "ok", model: "m", session: "g-2", in: -1, out: -1},
		{name: "qwen stream-json", backend: "qwen",
			stdout: `{"type":"system","subtype":"init","session_id":"q-1","model":"fake-model"}
{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}
{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"qwen says"}}}
{"type":"assistant","message":{"model":"fake-model","content":[{"type":"text","text":"qwen says"}],"usage":{"input_tokens":30,"output_tokens":4}}}
{"type":"result","subtype":"success","is_error":false,"duration_ms":12,"result":"qwen says","usage":{"input_tokens":30,"output_tokens":4}}`,
			answer: "qwen says", model: "fake-model", session: "q-1", in: 30, out: 4},
		{name: "agy plain text", backend: "agy", stdout: "\nagy answer\nsecond line\n", answer: "agy answer\nsecond line", in: -1, out: -1},
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
		{"gemini empty (seed message)", "gemini", Output{Stdout: []byte(`{"type":"result","status":"success"}`)}, KindEmpty, "gemini completed without producing output", ""},
		{"codex stderr", "codex", Output{ExitCode: 2, Stderr: []byte("  boom\n")}, KindFailed, "boom", "exited with code 2"},
		{"codex error events beat the stderr banner", "codex", Output{ExitCode: 1, Stderr: []byte("model: x\nprovider: y"),
			Stdout: []byte(`{"type":"error","message":"stream disconnected"}` + "\n" + `{"type":"turn.failed","error":{"message":"bad request"}}`)}, KindFailed, "stream disconnected\nbad request", ""},
		{"codex quota ends the run", "codex", Output{ExitCode: 1, Stdout: []byte(`{"type":"turn.failed","error":{"message":"Quota exceeded. Check your plan and billing details."}}`)}, KindQuota, "Quota exceeded. Check your plan and billing details.", "out of quota"},
		{"codex network before any answer", "codex", Output{Stdout: []byte(`{"type":"thread.started","thread_id":"t"}` + "\n" +
			`{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion: failed to lookup address information: Name does not resolve)"}`)},
			KindUnreachable, "Reconnecting... 2/5 (stream disconnected before completion: failed to lookup address information: Name does not resolve)", "network"},
		{"claude connection failures", "claude", Output{Stdout: []byte(`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"error_status":null,"error":"unknown"}` + "\n" +
			`{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"error_status":null,"error":"unknown"}`)},
			KindUnreachable, "API request failed (attempt 2 of 10): no response from claude's API (connection failed)", "network"},
		{"gemini fetch failed on stderr", "gemini", Output{Stderr: []byte("Attempt 1 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request\n    at file:///x.js:1:1")},
			KindUnreachable, "Attempt 1 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request", "network"},
		{"gemini unsupported client", "gemini", Output{ExitCode: 1, Stderr: []byte("Failed to sign in. Message: This client is no longer supported for Gemini Code Assist for individuals. To continue using Gemini, please migrate to the Antigravity suite of products: https://antigravity.google (reasonCode: UNSUPPORTED_CLIENT)")},
			KindUnsupportedClient, "Failed to sign in. Message: This client is no longer supported for Gemini Code Assist for individuals. To continue using Gemini, please migrate to the Antigravity suite of products: https://antigravity.google (reasonCode: UNSUPPORTED_CLIENT)", "--to agy"},
		{"qwen API error is never an answer", "qwen", Output{Stdout: []byte(`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}` + "\n" +
			`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"[API Error: Connection error. (cause: fetch failed)]"}}}` + "\n" +
			`{"type":"assistant","message":{"model":"m","content":[{"type":"text","text":"[API Error: Connection error. (cause: fetch failed)]"}]}}` + "\n" +
			`{"type":"result","subtype":"success","is_error":false,"result":"[API Error: Connection error. (cause: fetch failed)]"}`)},
			KindUnreachable, "[API Error: Connection error. (cause: fetch failed)]", "network"},
		{"codex exit code only (seed)", "codex", Output{ExitCode: 3}, KindFailed, "codex exec exited with code 3", ""},
		{"gemini exit code only (seed)", "gemini", Output{ExitCode: 4}, KindFailed, "gemini exited with code 4", ""},
		{"gemini stdout when no stderr", "gemini", Output{ExitCode: 1, Stdout: []byte("bad things\n")}, KindFailed, "bad things", ""},
		{"gemini auth exit 41", "gemini", Output{ExitCode: 41, Stderr: []byte("Invalid auth method selected.")}, KindNotLoggedIn, "Invalid auth method selected.", "GEMINI_API_KEY"},
		{"gemini unknown session", "gemini", Output{ExitCode: 42, Stderr: []byte(`Error resuming session: Invalid session identifier "x".`)}, KindFailed, `Error resuming session: Invalid session identifier "x".`, "new --session label"},
		{"claude not logged in on stdout", "claude", Output{ExitCode: 1, Stdout: []byte("Not logged in · Please run /login\n")}, KindNotLoggedIn, "Not logged in · Please run /login", "/login"},
		{"claude result is_error", "claude", Output{Stdout: []byte(`{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login"}`)}, KindNotLoggedIn, "Invalid API key · Please run /login", "ANTHROPIC_API_KEY"},
		{"claude root refusal", "claude", Output{ExitCode: 1, Stderr: []byte("--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons")}, KindFailed, "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons", "IS_SANDBOX=1"},
		{"qwen result error", "qwen", Output{Stdout: []byte(`{"type":"result","is_error":true,"result":"rate limited"}`)}, KindFailed, "rate limited", ""},
		{"opencode error event", "opencode", Output{Stdout: []byte(`{"type":"error","error":{"name":"ProviderAuthError","data":{"message":"no provider credentials"}}}`)}, KindFailed, "no provider credentials", ""},
		{"timeout (seed message)", "codex", Output{TimedOut: true, ExitCode: -1}, KindTimeout, "codex exec timed out after 7s\nIt reported nothing in 0s.", "--timeout"},
		{"timeout says what it last did", "codex", Output{TimedOut: true, ExitCode: -1, Stdout: []byte(`{"type":"item.started","item":{"type":"command_execution","command":"go test ./..."}}`)},
			KindTimeout, "codex exec timed out after 7s\nIts last event (0s before it was stopped): running `go test ./...`", "--timeout"},
		{"gemini timeout (seed message)", "gemini", Output{TimedOut: true, ExitCode: -1}, KindTimeout, "gemini timed out after 7s\nIt reported nothing in 0s.", "--timeout"},
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
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"a"}]}}`))
	f.Add([]byte(`{"type":"result","status":"success","stats":{"models":{"m":{"output_tokens":1}}}}`))
	f.Add([]byte("noise\n{\"type\":\"text\",\"part\":{\"text\":\"t\"}}\n"))
	f.Add([]byte(`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"[API"}}}`))
	f.Add([]byte(`{"type":"system","subtype":"api_retry","attempt":3,"error_status":429,"error":"rate"}`))
	f.Fuzz(func(t *testing.T, stdout []byte) {
		for _, spec := range []cliSpec{codexSpec{}, geminiSpec{}, claudeSpec{}, qwenSpec{}, opencodeSpec{}, agySpec{}} {
			for _, stderr := range []bool{false, true} {
				p, st := spec.parser(), newStream(spec.name(), nil)
				out := Output{Stdout: stdout, ExitCode: 1}
				if stderr {
					out = Output{Stderr: stdout, ExitCode: 1}
				}
				replay(p, st, out)
				_, _ = p.result(st, Invocation{}, out)
				_ = p.detail(st, Invocation{}, out)
			}
		}
	})
}
