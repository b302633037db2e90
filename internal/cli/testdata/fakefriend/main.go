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
		// a grandchild that would outlive us unless the whole group is killed
		child := exec.Command("sleep", "300")
		if err := child.Start(); err == nil {
			_ = os.WriteFile(pidFile, []byte(fmt.Sprintf("%d\n%d\n", os.Getpid(), child.Process.Pid)), 0o644)
		}
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
	case "claude":
		session := argAfter(args, "--session-id")
		if session == "" {
			session = argAfter(args, "-r")
		}
		if session == "" {
			session = "fake-claude-ephemeral"
		}
		model := argAfter(args, "--model")
		if model == "" {
			model = "claude-fake-default"
		}
		emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": answer, "session_id": session,
			"num_turns": 1, "total_cost_usd": 0.0125, "usage": map[string]any{"input_tokens": inTok, "output_tokens": outTok},
			"modelUsage": map[string]any{model: map[string]any{"costUSD": 0.0125, "outputTokens": outTok}}})
	case "gemini":
		session := argAfter(args, "--session-id")
		if session == "" {
			session = argAfter(args, "--resume")
		}
		model := argAfter(args, "-m")
		if model == "" {
			model = "gemini-fake-default"
		}
		emit(map[string]any{"session_id": session, "response": answer,
			"stats": map[string]any{"models": map[string]any{model: map[string]any{"tokens": map[string]any{"prompt": inTok, "candidates": outTok}}}}})
	case "qwen":
		model := argAfter(args, "-m")
		if model == "" {
			model = "qwen-fake-default"
		}
		evs := []any{
			map[string]any{"type": "system", "subtype": "init", "session_id": "q-1", "model": model},
			map[string]any{"type": "assistant", "message": map[string]any{"content": []any{map[string]any{"type": "text", "text": answer}},
				"usage": map[string]any{"input_tokens": inTok, "output_tokens": outTok}}},
			map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": answer},
		}
		emit(evs)
	case "opencode":
		emit(map[string]any{"type": "step_start", "sessionID": "ses_fake", "part": map[string]any{"type": "step-start"}})
		if answer != "" {
			emit(map[string]any{"type": "text", "sessionID": "ses_fake", "part": map[string]any{"type": "text", "text": answer}})
		}
		emit(map[string]any{"type": "step_finish", "sessionID": "ses_fake", "part": map[string]any{"type": "step-finish", "cost": 0.001,
			"tokens": map[string]any{"input": inTok, "output": outTok}}})
	}
	return 0
}
