// Command fakefriend stands in for codex, gemini, claude, qwen and opencode in
// relay's testscript tests (testdata/script/ask_*.txtar). Linked under one of
// those names, it records argv, stdin, the prompt, env and cwd in $FAKE_LOG
// and answers the way the real CLI's JSON mode does. It is built once per
// test run by internal/cli/ask_script_test.go; it is not part of relay.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() { os.Exit(fakeFriendMain(filepath.Base(os.Args[0]))) }

// fakeEnv reads FAKE_<KEY>_<NAME> first, then FAKE_<KEY>.
func fakeEnv(name, key string) string {
	if v, ok := os.LookupEnv("FAKE_" + key + "_" + strings.ToUpper(name)); ok {
		return v
	}
	return os.Getenv("FAKE_" + key)
}

func argAfter(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func fakeFriendMain(name string) int {
	args := os.Args[1:]
	if len(args) == 1 && args[0] == "--version" {
		fmt.Printf("%s 9.9.9-fake\n", name)
		return 0
	}
	if out, code, ok := loginStatus(name, args); ok {
		fmt.Print(out)
		return code
	}
	stdin, _ := io.ReadAll(os.Stdin)
	// the prompt as the real CLI would see it: stdin, or (gemini, qwen) an argv element
	prompt := stdin
	for _, a := range args {
		if strings.Contains(a, "\n") {
			prompt = []byte(a)
		}
	}
	logDir := os.Getenv("FAKE_LOG")
	if logDir != "" {
		_ = os.MkdirAll(logDir, 0o755)
		wd, _ := os.Getwd()
		env := os.Environ()
		sort.Strings(env)
		shown := slices.Clone(args)
		for i, a := range shown {
			// the temp path is random; record it apart so scripts can compare argv exactly
			if i > 0 && shown[i-1] == "--output-last-message" {
				shown[i] = "<last-message-file>"
				_ = os.WriteFile(filepath.Join(logDir, name+".lastmsg"), []byte(a), 0o644)
			}
			if strings.Contains(a, "\n") { // the envelope itself; its text is in .prompt
				shown[i] = "<prompt>"
			}
		}
		_ = os.WriteFile(filepath.Join(logDir, name+".argv"), []byte(strings.Join(shown, "\n")+"\n"), 0o644)
		_ = os.WriteFile(filepath.Join(logDir, name+".stdin"), stdin, 0o644)
		// .prompt ends in a newline so scripts can cmp it with a txtar file
		_ = os.WriteFile(filepath.Join(logDir, name+".prompt"), append(slices.Clone(prompt), '\n'), 0o644)
		_ = os.WriteFile(filepath.Join(logDir, name+".env"), []byte(strings.Join(env, "\n")+"\n"), 0o644)
		_ = os.WriteFile(filepath.Join(logDir, name+".cwd"), []byte(wd+"\n"), 0o644)
		if f, err := os.OpenFile(filepath.Join(logDir, "order"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, name)
			f.Close()
		}
	}
	if pidFile := fakeEnv(name, "PIDFILE"); pidFile != "" {
		// a grandchild that ignores SIGTERM and would outlive us unless the whole group is killed
		child := exec.Command("sh", "-c", "trap '' TERM; sleep 300 & wait; sleep 300")
		if err := child.Start(); err == nil {
			_ = os.WriteFile(pidFile, []byte(fmt.Sprintf("%d\n%d\n", os.Getpid(), child.Process.Pid)), 0o644)
		}
	}
	if sc := fakeEnv(name, "SCENARIO"); sc != "" {
		return scenario(name, sc, args)
	}
	if s := fakeEnv(name, "SLEEP"); s != "" {
		secs, _ := strconv.ParseFloat(s, 64)
		time.Sleep(time.Duration(secs * float64(time.Second)))
	}
	answer := fmt.Sprintf("%s says: received %d bytes on stdin", name, len(stdin))
	if len(stdin) == 0 && len(prompt) > 0 {
		answer = fmt.Sprintf("%s says: received %d bytes in argv", name, len(prompt))
	}
	if v := fakeEnv(name, "ANSWER"); v != "" {
		answer = v
	}
	if f := fakeEnv(name, "ANSWER_FILE"); f != "" {
		if b, err := os.ReadFile(f); err == nil {
			answer = string(b)
		}
	}
	if fakeEnv(name, "EMPTY") == "1" {
		answer = ""
	}
	if nested := fakeEnv(name, "NESTED"); nested != "" {
		// the depth guard across a real exec: this friend phones another one
		cmd := exec.Command("relay", "ask", "--to", nested, "--prompt", "nested question")
		out, err := cmd.CombinedOutput()
		rc := 0
		if ee, ok := err.(*exec.ExitError); ok {
			rc = ee.ExitCode()
		} else if err != nil {
			rc = -1
		}
		_ = os.WriteFile(filepath.Join(logDir, "nested.out"), out, 0o644)
		answer += fmt.Sprintf("; nested relay exited %d", rc)
	}
	if fakeEnv(name, "DEREF") == "1" {
		// a friend that follows the envelope's refs: it runs the relay artifact get lines
		// it was given (not the REF placeholder) and quotes what it read
		for _, line := range strings.Split(string(prompt), "\n") {
			f := strings.Fields(line)
			if len(f) < 4 || f[0] != "relay" || f[1] != "artifact" || f[2] != "get" || f[3] == "REF" {
				continue
			}
			out, err := exec.Command(f[0], f[1:]...).CombinedOutput()
			if err != nil {
				answer += fmt.Sprintf("; %s failed: %v: %s", strings.Join(f, " "), err, out)
				continue
			}
			answer += "; read " + f[3] + ": " + strings.TrimSpace(string(out))
		}
	}
	if s := fakeEnv(name, "STDERR"); s != "" {
		fmt.Fprintln(os.Stderr, s)
	}
	if code, _ := strconv.Atoi(fakeEnv(name, "EXIT")); code != 0 {
		fmt.Print(fakeEnv(name, "STDOUT"))
		return code
	}
	if s, ok := os.LookupEnv("FAKE_STDOUT_" + strings.ToUpper(name)); ok {
		fmt.Print(s)
		return 0
	}
	if s, ok := os.LookupEnv("FAKE_STDOUT"); ok {
		fmt.Print(s)
		return 0
	}
	emit := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Println(string(b))
	}
	inTok, outTok := len(prompt)/4, len(answer)/4
	switch name {
	case "codex":
		thread := "fake-thread-0001"
		if len(args) > 2 && args[1] == "resume" {
			thread = args[2]
		}
		emit(map[string]any{"type": "thread.started", "thread_id": thread})
		emit(map[string]any{"type": "turn.started"})
		if answer != "" {
			emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_0", "type": "agent_message", "text": answer}})
			if f := argAfter(args, "--output-last-message"); f != "" {
				_ = os.WriteFile(f, []byte(answer+"\n"), 0o644)
			}
		}
		emit(map[string]any{"type": "turn.completed", "usage": map[string]any{"input_tokens": inTok, "cached_input_tokens": 0, "output_tokens": outTok}})
	case "claude", "qwen":
		session := argAfter(args, "--session-id")
		if session == "" {
			session = argAfter(args, "-r")
		}
		if session == "" {
			session = "fake-" + name + "-ephemeral"
		}
		model := argAfter(args, "--model")
		if name == "qwen" {
			model = argAfter(args, "-m")
		}
		if model == "" {
			model = name + "-fake-default"
		}
		emit(map[string]any{"type": "system", "subtype": "init", "session_id": session, "model": model})
		emit(map[string]any{"type": "stream_event", "event": map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}})
		for _, part := range halves(answer) {
			emit(map[string]any{"type": "stream_event", "event": map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": part}}})
		}
		emit(map[string]any{"type": "stream_event", "event": map[string]any{"type": "content_block_stop", "index": 0}})
		emit(map[string]any{"type": "assistant", "message": map[string]any{"model": model, "content": []any{map[string]any{"type": "text", "text": answer}}}})
		res := map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": answer, "session_id": session,
			"num_turns": 1, "usage": map[string]any{"input_tokens": inTok, "output_tokens": outTok}}
		if name == "claude" {
			res["total_cost_usd"] = 0.0125
			res["modelUsage"] = map[string]any{model: map[string]any{"costUSD": 0.0125, "outputTokens": outTok}}
		}
		emit(res)
	case "gemini":
		session := argAfter(args, "--session-id")
		if session == "" {
			session = argAfter(args, "--resume")
		}
		model := argAfter(args, "-m")
		if model == "" {
			model = "gemini-fake-default"
		}
		emit(map[string]any{"type": "init", "session_id": session, "model": model})
		emit(map[string]any{"type": "message", "role": "user", "content": "(the prompt)"})
		for _, part := range halves(answer) {
			emit(map[string]any{"type": "message", "role": "assistant", "content": part, "delta": true})
		}
		emit(map[string]any{"type": "result", "status": "success", "stats": map[string]any{"input_tokens": inTok, "output_tokens": outTok,
			"models": map[string]any{model: map[string]any{"input_tokens": inTok, "output_tokens": outTok}}}})
	case "opencode":
		emit(map[string]any{"type": "step_start", "sessionID": "ses_fake", "part": map[string]any{"type": "step-start"}})
		if answer != "" {
			emit(map[string]any{"type": "text", "sessionID": "ses_fake", "part": map[string]any{"type": "text", "text": answer}})
		}
		emit(map[string]any{"type": "step_finish", "sessionID": "ses_fake", "part": map[string]any{"type": "step-finish", "cost": 0.001,
			"tokens": map[string]any{"input": inTok, "output": outTok}}})
	case "agy":
		fmt.Println(answer)
	}
	return 0
}

// halves splits an answer so a stream carries more than one delta.
func halves(s string) []string {
	if len(s) < 2 {
		return []string{s}
	}
	return []string{s[:len(s)/2], s[len(s)/2:]}
}

// scenario plays one way a real friend CLI behaves badly (FAKE_SCENARIO):
// the event it prints, then what it does next (usually: nothing, forever).
func scenario(name, sc string, args []string) int {
	emit := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Println(string(b))
	}
	silence := func() int { time.Sleep(300 * time.Second); return 0 }
	start := map[string]func(){
		"codex": func() {
			emit(map[string]any{"type": "thread.started", "thread_id": "fake-thread-0001"})
			emit(map[string]any{"type": "turn.started"})
		},
		"claude": func() {
			emit(map[string]any{"type": "system", "subtype": "init", "session_id": "s", "model": "claude-fake"})
		},
		"qwen": func() {
			emit(map[string]any{"type": "system", "subtype": "init", "session_id": "s", "model": "qwen-fake"})
		},
		"gemini": func() { emit(map[string]any{"type": "init", "session_id": "s", "model": "gemini-fake"}) },
	}
	if f := start[name]; f != nil {
		f()
	}
	switch sc {
	case "network": // the network is down: the CLI says so once, then retries quietly
		switch name {
		case "codex":
			emit(map[string]any{"type": "error", "message": "Reconnecting... 2/5 (stream disconnected before completion: failed to lookup address information: Name does not resolve)"})
		case "claude":
			for i := 1; i <= 2; i++ {
				emit(map[string]any{"type": "system", "subtype": "api_retry", "attempt": i, "max_retries": 10, "error_status": nil, "error": "unknown"})
			}
		case "qwen":
			t := "[API Error: Connection error. (cause: fetch failed)]"
			emit(map[string]any{"type": "stream_event", "event": map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}})
			emit(map[string]any{"type": "stream_event", "event": map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": t}}})
			emit(map[string]any{"type": "assistant", "message": map[string]any{"model": "qwen-fake", "content": []any{map[string]any{"type": "text", "text": t}}}})
		case "gemini":
			fmt.Fprintln(os.Stderr, "Attempt 1 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request")
		case "opencode":
			emit(map[string]any{"type": "error", "error": map[string]any{"name": "APIError", "data": map[string]any{"message": "Unable to connect. Is the computer able to access the url? (ECONNREFUSED)"}}})
		case "agy":
			fmt.Fprintln(os.Stderr, "Error: dial tcp: lookup generativelanguage.googleapis.com: no such host")
		}
		return silence()
	case "login": // no credentials
		switch name {
		case "claude":
			emit(map[string]any{"type": "assistant", "message": map[string]any{"model": "<synthetic>", "content": []any{map[string]any{"type": "text", "text": "Not logged in · Please run /login"}}}})
			emit(map[string]any{"type": "result", "subtype": "success", "is_error": true, "result": "Not logged in · Please run /login"})
			return 1
		case "codex":
			emit(map[string]any{"type": "error", "message": "unexpected status 401 Unauthorized: Missing bearer or basic authentication in header"})
		case "gemini":
			fmt.Fprintln(os.Stderr, "Please set an Auth method in your /root/.gemini/settings.json or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA")
			return 41
		default:
			fmt.Fprintln(os.Stderr, "Error: not authenticated: 401 Unauthorized")
		}
		return silence()
	case "unsupported": // Gemini CLI with a personal Google account since 2026-06-18
		fmt.Fprintln(os.Stderr, "Failed to sign in. Message: This client is no longer supported for Gemini Code Assist for individuals. To continue using Gemini, please migrate to the Antigravity suite of products: https://antigravity.google (reasonCode: UNSUPPORTED_CLIENT)")
		return silence()
	case "quota":
		emit(map[string]any{"type": "error", "message": "Quota exceeded. Check your plan and billing details."})
		return silence()
	case "hang": // started, then silence: only the timeout ends it
		return silence()
	case "slow", "gated": // the answer in pieces; "gated" waits for $FAKE_GATE to exist before the rest
		words := strings.Fields(fakeEnv(name, "ANSWER"))
		if len(words) == 0 {
			words = strings.Fields("the slow answer arrives word by word")
		}
		for i, w := range words {
			if i > 0 {
				w = " " + w
			}
			piece(name, w)
			if sc == "gated" && i == 0 {
				gate := os.Getenv("FAKE_GATE")
				for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					if _, err := os.Stat(gate); err == nil {
						break
					}
				}
			} else if sc == "slow" {
				time.Sleep(150 * time.Millisecond)
			}
		}
		finish(name, strings.Join(words, " "), args)
		return 0
	case "huge": // an answer of $FAKE_HUGE_BYTES bytes (default 5,000,000), in one piece
		n, _ := strconv.Atoi(os.Getenv("FAKE_HUGE_BYTES"))
		if n <= 0 {
			n = 5_000_000
		}
		line := strings.Repeat("x", 99) + "\n"
		big := strings.Repeat(line, n/len(line)) + "HUGE-END"
		piece(name, big)
		finish(name, big, args)
		return 0
	}
	fmt.Fprintln(os.Stderr, "fakefriend: unknown FAKE_SCENARIO "+sc)
	return 2
}

// piece prints one piece of the answer the way the CLI streams it.
func piece(name, text string) {
	emit := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Println(string(b))
	}
	switch name {
	case "claude", "qwen":
		emit(map[string]any{"type": "stream_event", "event": map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}}})
	case "gemini":
		emit(map[string]any{"type": "message", "role": "assistant", "content": text, "delta": true})
	case "codex":
		emit(map[string]any{"type": "item.completed", "item": map[string]any{"type": "agent_message", "text": text}})
	case "opencode":
		emit(map[string]any{"type": "text", "part": map[string]any{"type": "text", "text": text}})
	case "agy":
		fmt.Println(text)
	}
}

// finish ends a streamed answer the way the CLI does.
func finish(name, answer string, args []string) {
	emit := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Println(string(b))
	}
	switch name {
	case "claude", "qwen":
		emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": answer, "session_id": "s"})
	case "gemini":
		emit(map[string]any{"type": "result", "status": "success"})
	case "codex":
		if f := argAfter(args, "--output-last-message"); f != "" {
			_ = os.WriteFile(f, []byte(answer+"\n"), 0o644)
		}
		emit(map[string]any{"type": "turn.completed", "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}})
	}
}

// loginStatus answers the login-status commands relay backends runs, without
// touching $FAKE_LOG: logged in unless FAKE_LOGGED_OUT(_NAME)=1.
func loginStatus(name string, args []string) (string, int, bool) {
	out := fakeEnv(name, "LOGGED_OUT") == "1"
	switch {
	case name == "codex" && slices.Equal(args, []string{"login", "status"}):
		if out {
			return "WARNING: proceeding, even though we could not create PATH aliases\nNot logged in\n", 1, true
		}
		return "Logged in using an API key - sk-fake***\n", 0, true
	case name == "claude" && slices.Equal(args, []string{"auth", "status", "--json"}):
		if out {
			return `{"loggedIn": false, "authMethod": "none", "apiProvider": "firstParty"}` + "\n", 1, true
		}
		return `{"loggedIn": true, "authMethod": "api_key", "apiProvider": "firstParty", "apiKeySource": "ANTHROPIC_API_KEY"}` + "\n", 0, true
	}
	return "", 0, false
}
