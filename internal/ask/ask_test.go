package ask

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/ask/backend"
)

// fakeBackend records what it was asked; it is the unit-level friend.
type fakeBackend struct {
	name      string
	sandboxes []string
	sessions  bool
	answer    string
	err       error
	mu        sync.Mutex
	calls     []backend.Request
}

func (f *fakeBackend) Name() string           { return f.name }
func (f *fakeBackend) Executable() string     { return f.name }
func (f *fakeBackend) InstallHint() string    { return "install " + f.name }
func (f *fakeBackend) Sandboxes() []string    { return f.sandboxes }
func (f *fakeBackend) SupportsSessions() bool { return f.sessions }
func (f *fakeBackend) Run(_ context.Context, req backend.Request) (backend.Result, error) {
	f.mu.Lock()
	f.calls = append(f.calls, req)
	f.mu.Unlock()
	if f.err != nil {
		return backend.Result{}, f.err
	}
	id := req.Session.ID
	if id == "" && req.Session.Persist {
		id = "native-" + f.name
	}
	return backend.Result{Answer: f.answer, SessionID: id}, nil
}

type harness struct {
	asker    *Asker
	friends  map[string]*fakeBackend
	gitCalls [][]string
	gitOut   map[string]string // joined args → stdout
	gitErr   error
}

func newHarness(t *testing.T) *harness {
	h := &harness{friends: map[string]*fakeBackend{}, gitOut: map[string]string{}}
	for _, n := range backend.Names() {
		h.friends[n] = &fakeBackend{name: n, sandboxes: backend.AllSandboxes, sessions: n == "codex" || n == "claude" || n == "gemini" || n == "qwen", answer: n + " answer"}
	}
	h.asker = &Asker{
		Backend: func(name string) (backend.Backend, bool) {
			f, ok := h.friends[name]
			return f, ok
		},
		Git: func(_ context.Context, repo string, args ...string) (string, error) {
			h.gitCalls = append(h.gitCalls, args)
			if h.gitErr != nil {
				return "", h.gitErr
			}
			return h.gitOut[strings.Join(args, " ")], nil
		},
		Sessions: &SessionStore{Dir: t.TempDir()},
		Euid:     1000,
		Now:      time.Now,
	}
	return h
}

func (h *harness) spawned() int {
	n := 0
	for _, f := range h.friends {
		n += len(f.calls)
	}
	return n
}

func okReq(t *testing.T) Request {
	return Request{To: []string{"codex"}, Prompt: "hi", WorkDir: t.TempDir(), TimeoutSeconds: 600, MaxDepth: 1, Env: []string{"PATH=/bin"}}
}

func wantErr(t *testing.T, err error, msg string) {
	t.Helper()
	var ae *Error
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v, want *ask.Error %q", err, msg)
	}
	if ae.Message != msg {
		t.Fatalf("message %q, want %q", ae.Message, msg)
	}
	if ae.Hint == "" {
		t.Errorf("%q has no hint", msg)
	}
}

func TestValidationOrder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	os.WriteFile(file, []byte("x"), 0o644)
	tests := []struct {
		name string
		mod  func(r *Request)
		msg  string
	}{
		{"prompt first", func(r *Request) { r.Prompt, r.TimeoutSeconds, r.Repo, r.To = " \n\t", 0, "/nope", []string{"x"} }, "Prompt is required"},
		{"timeout second", func(r *Request) { r.TimeoutSeconds, r.Repo = -1, "/nope" }, "Timeout must be greater than zero"},
		{"repo missing", func(r *Request) { r.Repo, r.To = "/nope/x", []string{"x"} }, "Repository path does not exist or is not a directory: /nope/x"},
		{"repo is a file", func(r *Request) { r.Repo = file }, "Repository path does not exist or is not a directory: " + file},
		{"backend", func(r *Request) { r.To, r.Sandbox = []string{"codex", "x"}, "bad" }, "Unsupported relay backend: x. Supported: agy, claude, codex, gemini, ollama, opencode, qwen"},
		{"sandbox", func(r *Request) { r.Sandbox, r.ContextFile = "bad", "/nope" }, "Invalid sandbox mode: bad. Allowed values: danger-full-access, read-only, workspace-write"},
		{"both contexts before the file", func(r *Request) { r.ContextFile, r.ContextText = "/nope", "t" }, "Use either context_file or context_text, not both"},
		{"context file missing", func(r *Request) { r.ContextFile, r.IncludeDiff = "/nope/c.txt", true }, "Context file does not exist: /nope/c.txt"},
		{"context path dir", func(r *Request) { r.ContextFile = dir }, "Context path is not a file: " + dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			r := okReq(t)
			tt.mod(&r)
			_, err := h.asker.Prepare(context.Background(), r)
			wantErr(t, err, tt.msg)
			if len(h.gitCalls) != 0 || h.spawned() != 0 {
				t.Errorf("git ran %d times, friends %d times before a validation error", len(h.gitCalls), h.spawned())
			}
		})
	}
}

func TestContextLimits(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name   string
		file   string // content of a context file ("" = use text)
		text   string
		errMsg string
	}{
		{name: "file 200000", file: strings.Repeat("a", 200_000)},
		{name: "file 200001", file: strings.Repeat("a", 200_001), errMsg: "Context file is too large (200001 bytes; max 200000 bytes)"},
		{name: "file stripped before measuring", file: "\n\n  " + strings.Repeat("a", 200_000) + "  \n"},
		{name: "text 200000", text: strings.Repeat("a", 200_000)},
		{name: "text 200001", text: strings.Repeat("a", 200_001), errMsg: "Context text is too large (200001 bytes; max 200000 bytes)"},
		{name: "text bytes not runes", text: strings.Repeat("€", 66_667), errMsg: "Context text is too large (200001 bytes; max 200000 bytes)"},
		{name: "file not UTF-8", file: "\xff\xfe", errMsg: "Failed reading context file: ctx.txt is not valid UTF-8 text"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			r := okReq(t)
			r.WorkDir = dir
			if tt.file != "" {
				os.WriteFile(filepath.Join(dir, "ctx.txt"), []byte(tt.file), 0o644)
				r.ContextFile = "ctx.txt"
			}
			r.ContextText = tt.text
			p, err := h.asker.Prepare(context.Background(), r)
			if tt.errMsg != "" {
				wantErr(t, err, tt.errMsg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p.Envelope, "\n\nAdditional Context:\n"+strings.TrimSpace(tt.file+tt.text)) {
				t.Errorf("context missing from the envelope")
			}
		})
	}
}

func TestDiff(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	r := okReq(t)
	r.IncludeDiff = true
	h.gitOut["diff --no-color --no-ext-diff --no-textconv --"] = "\n" + strings.Repeat("d", 300_000) + "\n"
	p, err := h.asker.Prepare(ctx, r)
	if err != nil {
		t.Fatalf("300,000-byte diff refused: %v", err)
	}
	if !strings.HasSuffix(p.Envelope, "\n\nGit Diff:\n"+strings.Repeat("d", 300_000)) {
		t.Errorf("diff section wrong")
	}

	h.gitOut["diff --no-color --no-ext-diff --no-textconv --"] = strings.Repeat("d", 300_001)
	_, err = h.asker.Prepare(ctx, r)
	wantErr(t, err, "Git diff is too large (300001 bytes; max 300000 bytes)")

	h.gitErr = &gitError{"fatal: not a git repository (or any of the parent directories): .git"}
	_, err = h.asker.Prepare(ctx, r)
	wantErr(t, err, "Failed to collect git diff: fatal: not a git repository (or any of the parent directories): .git")

	// --diff-base: the branch, then everything uncommitted
	h.gitErr = nil
	h.gitCalls = nil
	r.IncludeDiff, r.DiffBase = false, "main"
	h.gitOut["diff --no-color --no-ext-diff --no-textconv main...HEAD --"] = "BRANCH\n"
	h.gitOut["diff --no-color --no-ext-diff --no-textconv HEAD --"] = "UNCOMMITTED\n"
	p, err = h.asker.Prepare(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(p.Envelope, "Git Diff:\nBRANCH\nUNCOMMITTED") || len(h.gitCalls) != 2 {
		t.Errorf("diff-base envelope tail %q, git calls %q", p.Envelope[len(p.Envelope)-40:], h.gitCalls)
	}

	// a base that looks like an option never reaches git
	h.gitCalls = nil
	r.DiffBase = "--output=/tmp/x"
	_, err = h.asker.Prepare(ctx, r)
	wantErr(t, err, "Invalid diff base: --output=/tmp/x (a git ref cannot start with '-')")
	if len(h.gitCalls) != 0 {
		t.Errorf("git ran for an option-like diff base: %q", h.gitCalls)
	}
	r.DiffBase = "main"

	// an empty diff adds no section
	h.gitOut = map[string]string{}
	p, _ = h.asker.Prepare(ctx, r)
	if strings.Contains(p.Envelope, "Git Diff:") {
		t.Errorf("empty diff still produced a section")
	}
}

func TestRealGitDiff(t *testing.T) {
	if _, err := os.Stat("/usr/bin/git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	_, err := runGit(context.Background(), dir, "diff", "--")
	var ge *gitError
	if !errors.As(err, &ge) || ge.detail == "" {
		t.Fatalf("git diff outside a repository: %v", err)
	}
}

func TestEnvelopeExact(t *testing.T) {
	got := BuildEnvelope("/r", "  do it \n", "CTX", "DIFF")
	want := `You are helping another coding agent by reviewing or advising on work in a local repository.
Repository path: /r
Use the repository files for context when needed.
Respond with concise, actionable feedback.

Request:
do it

Additional Context:
CTX

Git Diff:
DIFF`
	if got != want {
		t.Errorf("envelope:\n%s\nwant:\n%s", got, want)
	}
	if got := BuildEnvelope("/r", "q", "", ""); !strings.HasSuffix(got, "Request:\nq") {
		t.Errorf("no optional sections: %q", got)
	}
}

func TestPromptLimit(t *testing.T) {
	h := newHarness(t)
	r := okReq(t)
	repo, _ := filepath.EvalSymlinks(r.WorkDir)
	overhead := len(BuildEnvelope(repo, "x", "", "")) - 1
	r.Prompt = strings.Repeat("p", 500_000-overhead)
	p, err := h.asker.Prepare(context.Background(), r)
	if err != nil || len(p.Envelope) != 500_000 {
		t.Fatalf("500,000-byte envelope: %v", err)
	}
	r.Prompt += "p"
	_, err = h.asker.Prepare(context.Background(), r)
	wantErr(t, err, "Relay prompt is too large (500001 bytes; max 500000 bytes)")
}

func TestParseDepth(t *testing.T) {
	type res struct {
		n  int
		ok bool
	}
	for in, want := range map[string]res{
		"": {0, true}, "0": {0, true}, "1": {1, true}, "7": {7, true}, "0042": {42, true}, "9999": {9999, true},
		// every lenient form an attacker could use to reset the guard counts as over the limit
		"-5": {}, "-1": {}, "-0": {}, "+3": {}, "+0": {}, " 1 ": {}, "\t2\n": {}, " ": {}, "1abc": {}, "abc": {},
		"1.0": {}, "1e3": {}, "0x1": {}, "1_0": {}, "_1": {}, "-": {}, "10000": {},
		"-99999999999999999999999": {}, "99999999999999999999999": {}, "-9223372036854775808": {},
		"\uff11": {}, "\u0661": {}, "\u00b9": {}, "1\x00": {}, "\u200b1": {},
	} {
		n, ok := ParseDepth(in)
		if (res{n, ok}) != want {
			t.Errorf("ParseDepth(%q) = %d, %v; want %d, %v", in, n, ok, want.n, want.ok)
		}
	}
}

func FuzzParseDepth(f *testing.F) {
	for _, s := range []string{"0", " 1 ", "-3", "1abc", "1_0", "+", "", "\uff11", "99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := ParseDepth(s)
		if !ok {
			return
		}
		// whatever is accepted is a small non-negative number written in plain ASCII digits
		if n < 0 || n > 9999 {
			t.Fatalf("%q accepted as %d", s, n)
		}
		if s != "" && strconv.Itoa(n) != strings.TrimLeft(s, "0") && !(n == 0 && strings.Trim(s, "0") == "") {
			t.Fatalf("%q accepted as %d", s, n)
		}
	})
}

func TestDepthGuardRefusesOddValues(t *testing.T) {
	h := newHarness(t)
	for _, v := range []string{"-5", "-99999999999999999999", "99999999999999999999", "\uff10", " 0", "0 ", "+0", "0x0", "1e0"} {
		r := okReq(t)
		r.Env = append(r.Env, "PHONE_A_FRIEND_DEPTH="+v)
		_, err := h.asker.Prepare(context.Background(), r)
		if err == nil || !strings.Contains(err.Error(), "Relay depth limit reached") || !strings.Contains(err.Error(), "not a plain non-negative integer") {
			t.Errorf("PHONE_A_FRIEND_DEPTH=%q: err = %v, want the depth guard to refuse", v, err)
		}
	}
}

func TestHugeContextFileRefusedBeforeReading(t *testing.T) {
	h := newHarness(t)
	r := okReq(t)
	// a sparse 3 GB file: no disk used, but reading it would allocate 3 GB
	path := filepath.Join(r.WorkDir, "huge.txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3_000_000_000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r.ContextFile = path
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = h.asker.Prepare(context.Background(), r)
	runtime.ReadMemStats(&after)
	wantErr(t, err, "Context file is too large (3000000000 bytes; max 200000 bytes)")
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Fatalf("refusing a 3 GB context file allocated %d bytes; it must be refused from its size", got)
	}
	// content just over the limit with little whitespace is still measured after trimming
	if err := os.WriteFile(path, []byte(" "+strings.Repeat("x", MaxContextBytes+1)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = h.asker.Prepare(context.Background(), r)
	wantErr(t, err, "Context file is too large (200001 bytes; max 200000 bytes)")
}

func TestModelMustNotBeAFlag(t *testing.T) {
	h := newHarness(t)
	for _, m := range []string{"-x", "--dangerously-bypass-approvals-and-sandbox", "-c=sandbox=danger-full-access", "a b", "a\nb", "gpt;rm", "$(id)", "\u2212x", strings.Repeat("a", 129)} {
		r := okReq(t)
		r.Model = m
		_, err := h.asker.Prepare(context.Background(), r)
		if err == nil || !strings.Contains(err.Error(), "Invalid model name") {
			t.Errorf("--model %q: err = %v, want it refused", m, err)
		}
	}
	for _, m := range []string{"gpt-5-codex", "gemini-2.5-pro", "qwen2.5-coder:7b", "anthropic/claude-sonnet-4@20250514", "o3"} {
		r := okReq(t)
		r.Model = m
		if _, err := h.asker.Prepare(context.Background(), r); err != nil {
			t.Errorf("--model %q: %v", m, err)
		}
	}
}

func TestDepthAndHostGuards(t *testing.T) {
	h := newHarness(t)
	r := okReq(t)
	r.Env = append(r.Env, "PHONE_A_FRIEND_DEPTH=1")
	_, err := h.asker.Prepare(context.Background(), r)
	wantErr(t, err, "Relay depth limit reached; refusing nested relay invocation")

	r.MaxDepth = 2
	p, err := h.asker.Prepare(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := lookupEnv(p.Targets[0].Env, DepthEnv); v != "2" {
		t.Errorf("child depth %q, want 2", v)
	}
	if v, _ := lookupEnv(p.Targets[0].Env, HostEnv); v != "codex" {
		t.Errorf("child host %q, want codex", v)
	}

	for env, host := range map[string]string{
		"PHONE_A_FRIEND_HOST=Codex": "codex", "CLAUDECODE=1": "claude", "GEMINI_CLI=1": "gemini",
		"CODEX_SANDBOX_NETWORK_DISABLED=1": "codex", "CODEX_HOME=/x": "", "CLAUDECODE=0": "",
	} {
		if got := DetectHost([]string{env}); got != host {
			t.Errorf("DetectHost(%s) = %q, want %q", env, got, host)
		}
	}
	r = okReq(t)
	r.To = []string{"gemini", "claude"}
	r.Env = []string{"CLAUDECODE=1"}
	_, err = h.asker.Prepare(context.Background(), r)
	wantErr(t, err, "claude is already the host of this relay invocation; choose another friend backend such as agy, codex, gemini, ollama, opencode, qwen")
	if h.spawned() != 0 {
		t.Errorf("spawned a friend despite a guard")
	}
}

func TestFanOutAndErrors(t *testing.T) {
	h := newHarness(t)
	h.friends["gemini"].err = &backend.Error{Backend: "gemini", Kind: backend.KindTimeout, Message: "gemini timed out after 1s", Hint: "raise --timeout"}
	r := okReq(t)
	r.To = []string{"codex", "gemini", " claude", "codex", ""}
	answers, err := h.asker.Ask(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(answers) != 3 || answers[0].Backend != "codex" || answers[1].Backend != "gemini" || answers[2].Backend != "claude" {
		t.Fatalf("answers out of --to order or not deduplicated: %+v", answers)
	}
	if answers[0].Text != "codex answer" || answers[2].Text != "claude answer" {
		t.Errorf("answers %+v", answers)
	}
	if e := answers[1].Err; e == nil || e.Message != "gemini timed out after 1s" || e.Hint != "raise --timeout" || e.Kind != backend.KindTimeout {
		t.Errorf("gemini error %+v", e)
	}
	// every friend got the same envelope on the same repo
	if h.friends["codex"].calls[0].Prompt != h.friends["claude"].calls[0].Prompt {
		t.Errorf("friends got different prompts")
	}
}

func TestSessions(t *testing.T) {
	h := newHarness(t)
	r := okReq(t)
	r.To, r.Session = []string{"claude", "codex"}, "s1"
	answers, err := h.asker.Ask(context.Background(), r)
	if err != nil || answers[0].Err != nil || answers[1].Err != nil {
		t.Fatalf("first turn: %v %+v", err, answers)
	}
	if !answers[0].NewSession {
		t.Errorf("first turn not marked new")
	}
	first := h.friends["claude"].calls[0].Session
	if first.ID == "" || first.Resume || !first.Persist {
		t.Errorf("claude first turn session %+v, want a fresh pinned UUID", first)
	}
	if s := h.friends["codex"].calls[0].Session; s.ID != "" || s.Resume || !s.Persist {
		t.Errorf("codex first turn session %+v, want persist without id", s)
	}
	if _, err := h.asker.Ask(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if s := h.friends["claude"].calls[1].Session; s.ID != first.ID || !s.Resume {
		t.Errorf("claude second turn %+v, want resume of %s", s, first.ID)
	}
	if s := h.friends["codex"].calls[1].Session; s.ID != "native-codex" || !s.Resume {
		t.Errorf("codex second turn %+v, want resume of its own thread id", s)
	}
	list, _ := h.asker.Sessions.List()
	if len(list) != 2 || list[0].Turns != 2 {
		t.Errorf("stored sessions %+v", list)
	}
	r.To = []string{"opencode"}
	_, err = h.asker.Prepare(context.Background(), r)
	wantErr(t, err, "opencode cannot continue a conversation; --session works with claude, codex, gemini, qwen")
}

func TestSessionStoreConcurrent(t *testing.T) {
	s := &SessionStore{Dir: t.TempDir()}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Save(SessionEntry{Label: "l", Backend: string(rune('a' + i)), NativeID: "x", UpdatedAt: time.Now()}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	list, err := s.List()
	if err != nil || len(list) != 20 {
		t.Fatalf("%d entries after 20 concurrent saves (err %v)", len(list), err)
	}
	// a corrupt file is set aside, not fatal
	os.WriteFile(filepath.Join(s.Dir, "sessions.json"), []byte("{nope"), 0o600)
	if e, err := s.Lookup("l", "a"); err != nil || e != nil {
		t.Fatalf("corrupt store: %v %v", e, err)
	}
	m, _ := filepath.Glob(filepath.Join(s.Dir, "sessions.json.corrupt-*"))
	if len(m) != 1 {
		t.Errorf("corrupt file not kept aside: %v", m)
	}
}
