package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/run"
	"github.com/relaydev/relay/internal/testsupport"
)

// Fake friend CLIs for testdata/script/ask_*.txtar: testdata/fakefriend,
// linked as codex, gemini, claude, qwen and opencode in $FAKEBIN, records
// argv, stdin, the prompt, env and cwd in $WORK/calls and answers the way the
// real CLI's JSON mode does. Scripts opt in with `env PATH=$FAKEBIN${:}$PATH`.

var fakeFriends = []string{"codex", "gemini", "claude", "qwen", "opencode", "agy"}

func init() {
	scriptSetups = append(scriptSetups, setupFakeFriends)
	scriptCmds["mkfile"] = cmdMkfile
	scriptCmds["mkprompt"] = cmdMkprompt
	scriptCmds["filesize"] = cmdFilesize
	scriptCmds["gone"] = cmdGone
	scriptCmds["fakeollama"] = cmdFakeOllama
	scriptCmds["marktime"] = cmdMarkTime
	scriptCmds["within"] = cmdWithin
	scriptCmds["waitfor"] = cmdWaitFor
}

// marktime: remember now, for a later `within`.
func cmdMarkTime(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: marktime")
	}
	ts.Setenv("RELAY_TEST_MARK", strconv.FormatInt(time.Now().UnixNano(), 10))
}

// within SECONDS: at most SECONDS have passed since marktime.
func cmdWithin(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: within SECONDS")
	}
	secs, err := strconv.ParseFloat(args[0], 64)
	ts.Check(err)
	mark, err := strconv.ParseInt(ts.Getenv("RELAY_TEST_MARK"), 10, 64)
	if err != nil {
		ts.Fatalf("within needs marktime first")
	}
	if el := time.Since(time.Unix(0, mark)); el > time.Duration(secs*float64(time.Second)) {
		ts.Fatalf("took %s, more than %ss", el.Round(time.Millisecond), args[0])
	}
}

// waitfor FILE REGEXP: FILE comes to match REGEXP (waits up to 30 s), for a
// command running in the background.
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitfor FILE REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(ts.MkAbs(args[0])); err == nil && re.Match(b) {
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(ts.MkAbs(args[0]))
			ts.Fatalf("%s never matched %q; it holds:\n%s", args[0], args[1], b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fakeFriendBin builds testdata/fakefriend once per source version: a small
// binary that starts in a millisecond, unlike this race-instrumented test binary.
var fakeFriendBin = sync.OnceValues(func() (string, error) {
	src, err := os.ReadFile(filepath.Join("testdata", "fakefriend", "main.go"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append(src, runtime.Version()...))
	dir := filepath.Join(os.TempDir(), "relay-fakefriend-"+hex.EncodeToString(sum[:8]))
	bin := filepath.Join(dir, "fakefriend")
	if fileExists(bin) {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, "./testdata/fakefriend")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the fake friend CLI: %v\n%s", err, out)
	}
	return bin, os.Rename(tmp, bin) // atomic: parallel test processes may race here
})

func setupFakeFriends(env *testscript.Env) error {
	dir := filepath.Join(env.WorkDir, ".fakebin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// every script runs this setup: a failed build must only fail the ask_ scripts
	if self, err := fakeFriendBin(); err != nil {
		env.Setenv("FAKEBIN_ERROR", err.Error())
	} else {
		for _, n := range fakeFriends {
			if err := os.Symlink(self, filepath.Join(dir, n)); err != nil {
				return err
			}
		}
	}
	if os.Geteuid() == 0 {
		// lets a script say [exec:relay-test-euid0] once $FAKEBIN is on PATH
		if err := os.WriteFile(filepath.Join(dir, "relay-test-euid0"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			return err
		}
	}
	env.Setenv("FAKEBIN", dir)
	// RELAYBIN holds only relay, so a script can show what happens when no friend is installed
	relayDir := filepath.Join(env.WorkDir, ".relaybin")
	if err := os.MkdirAll(relayDir, 0o755); err != nil {
		return err
	}
	for _, d := range filepath.SplitList(env.Getenv("PATH")) {
		if p := filepath.Join(d, "relay"); fileExists(p) {
			if err := os.Symlink(p, filepath.Join(relayDir, "relay")); err != nil {
				return err
			}
			break
		}
	}
	env.Setenv("RELAYBIN", relayDir)
	env.Setenv("FAKE_LOG", filepath.Join(env.WorkDir, "calls"))
	return nil
}

// mkfile FILE N [CHAR]: write exactly N bytes (default 'a'; a multi-byte CHAR counts its bytes).
func cmdMkfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: mkfile FILE N [CHAR]")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	ch := "a"
	if len(args) == 3 {
		ch = args[2]
	}
	if n%len(ch) != 0 {
		ts.Fatalf("%d is not a multiple of len(%q)", n, ch)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Repeat(ch, n/len(ch))), 0o644))
}

// mkprompt FILE TOTAL REPO: write a prompt whose envelope for REPO is exactly TOTAL bytes.
func cmdMkprompt(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: mkprompt FILE TOTAL REPO")
	}
	total, err := strconv.Atoi(args[1])
	ts.Check(err)
	repo, err := filepath.EvalSymlinks(ts.MkAbs(args[2]))
	ts.Check(err)
	overhead := len(ask.BuildEnvelope(repo, "x", "", "")) - 1
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Repeat("p", total-overhead)), 0o644))
}

// filesize FILE N: FILE has exactly N bytes.
func cmdFilesize(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: filesize FILE N")
	}
	st, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	want, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	if (st.Size() == want) == neg {
		ts.Fatalf("%s has %d bytes, want %s%d", args[0], st.Size(), map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// gone PIDFILE: every pid listed in PIDFILE has exited (waits up to 5 s).
func cmdGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gone PIDFILE")
	}
	raw, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	for _, f := range strings.Fields(string(raw)) {
		pid, err := strconv.Atoi(f)
		ts.Check(err)
		deadline := time.Now().Add(5 * time.Second)
		for run.Alive(pid) {
			if time.Now().After(deadline) {
				_ = testsupport.Signal(pid, syscall.SIGKILL)
				ts.Fatalf("process %d is still running", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// fakeollama [CANNED]: start a loopback Ollama /api/chat server for this
// script and point OLLAMA_HOST at it; requests are logged to $WORK/calls/ollama.json.
func cmdFakeOllama(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! fakeollama")
	}
	answer := "ollama says hello"
	if len(args) > 0 {
		answer = strings.Join(args, " ")
	}
	logDir := ts.Getenv("FAKE_LOG")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/api/version" {
			fmt.Fprint(w, `{"version":"0.0.0-fake"}`)
			return
		}
		if r.URL.Path != "/api/chat" {
			http.NotFound(w, r)
			return
		}
		_ = os.MkdirAll(logDir, 0o755)
		_ = os.WriteFile(filepath.Join(logDir, "ollama.json"), body, 0o644)
		var req struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(body, &req)
		if req.Model == "missing" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":"model \"missing\" not found, try pulling it first"}`)
			return
		}
		b, _ := json.Marshal(map[string]any{"model": req.Model, "message": map[string]any{"role": "assistant", "content": answer},
			"done": true, "prompt_eval_count": 321, "eval_count": 12})
		w.Write(b)
	}))
	ts.Defer(srv.Close)
	ts.Setenv("OLLAMA_HOST", srv.URL)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
