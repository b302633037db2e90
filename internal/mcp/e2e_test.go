package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relaydev/relay/internal/testsupport"
)

// End to end: the real relay binary as `relay mcp`, a real daemon it starts
// itself, a real git project, and the official Go SDK client over stdio.

// bins builds relay and the fake friend CLI (as codex, in a directory of its own that
// goes on $PATH) once per test binary.
func bins(t testing.TB) (relay, friendDir string) {
	t.Helper()
	return testsupport.BuildRelay(t), filepath.Dir(testsupport.Build(t, "./internal/cli/testdata/fakefriend", "codex"))
}

func TestMain(m *testing.M) { testsupport.Main(m) }

// world is a throwaway HOME with a relay project in a git repository.
type world struct {
	relay, home, project string
	env                  []string
}

func newWorld(t *testing.T) *world {
	relay, friends := bins(t)
	w := &world{relay: relay, home: t.TempDir(), project: t.TempDir()}
	if real, err := filepath.EvalSymlinks(w.project); err == nil {
		w.project = real
	}
	w.env = []string{"HOME=" + w.home, "RELAY_HOME=" + filepath.Join(w.home, ".relay"), "PATH=" + friends + ":/usr/local/bin:/usr/bin:/bin",
		"NO_COLOR=1", "TMPDIR=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t.invalid",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t.invalid", "FAKE_ANSWER=FRIEND-SAYS-LGTM", "RELAY_FETCH_ALLOW=127.0.0.0/8"}
	w.run(t, "git", "init", "-q", "-b", "main")
	w.write(t, "main.go", "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n")
	w.run(t, "git", "add", ".")
	w.run(t, "git", "commit", "-q", "-m", "init")
	w.run(t, relay, "init")
	t.Cleanup(func() {
		cmd := exec.Command(relay, "down")
		cmd.Env = w.env
		_ = cmd.Run()
	})
	return w
}

func (w *world) write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(w.project, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (w *world) run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = w.project, w.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s%s", name, args, err, out.String(), errb.String())
	}
	return out.String()
}

func (w *world) connect(t *testing.T, opts *sdk.ClientOptions, session ...*sdk.ClientSessionOptions) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(w.relay, "mcp")
	cmd.Dir, cmd.Env = w.project, w.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	c := sdk.NewClient(&sdk.Implementation{Name: "relay-e2e", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var so *sdk.ClientSessionOptions
	if len(session) > 0 {
		so = session[0]
	}
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, so)
	if err != nil {
		t.Fatalf("connect to relay mcp: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func mustOK(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	text, isErr := call(t, cs, tool, args)
	if isErr {
		t.Fatalf("%s %v: %s", tool, args, text)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("%s %v: not a JSON object: %s", tool, args, text)
	}
	return v
}

func TestStdioEveryTool(t *testing.T) {
	w := newWorld(t)
	updated := make(chan string, 16)
	// resources/subscribe answers once the server has registered the subscription, so the
	// patch below is heard. Under 2026-07-28 the SDK's Subscribe opens subscriptions/listen
	// and returns before the server registers it: a change made at once can go unheard
	// (the server's log shows it sent to no subscriber), so this test pins the last version
	// with a synchronous subscribe.
	cs := w.connect(t, &sdk.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
		updated <- r.Params.URI
	}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})

	// memory: the project's thread is made on first use and remembered
	h := mustOK(t, cs, "read", map[string]any{"op": "header"})
	short, _ := h["t"].(string) // the header names its thread by the id's first 8 characters
	b, err := os.ReadFile(filepath.Join(w.project, ".relaycode", "thread"))
	thread := strings.TrimSpace(string(b))
	if err != nil || short == "" || !strings.HasPrefix(thread, short) {
		t.Fatalf(".relaycode/thread = %q (%v), header thread %q", b, err, short)
	}
	if err := cs.Subscribe(context.Background(), &sdk.SubscribeParams{URI: "relay://" + thread + "/state"}); err != nil {
		t.Fatal(err)
	}
	p := mustOK(t, cs, "write_memory", map[string]any{"op": "patch", "version": 1, "patch": []any{map[string]any{"op": "add", "path": "/facts", "value": []any{map[string]any{"id": "f1", "key": "mcp", "value": "MCP-FACT"}}}}})
	if p["version"] != float64(2) {
		t.Fatalf("patch: %v", p)
	}
	waitUpdated(t, updated, "relay://"+thread+"/state")
	text, isErr := call(t, cs, "write_memory", map[string]any{"op": "patch", "version": 1, "patch": []any{map[string]any{"op": "add", "path": "/x", "value": 1}}})
	if !isErr || !strings.Contains(text, "current version: 2") || !strings.Contains(text, `"version":2`) {
		t.Fatalf("stale patch: %v %s", isErr, text)
	}
	if st := mustOK(t, cs, "read", map[string]any{"op": "state"}); !strings.Contains(mustJSON(st), "MCP-FACT") {
		t.Fatalf("state: %v", st)
	}
	// the delta since v1: a patch that adds the fact (or the full header when smaller)
	if d := mustJSON(mustOK(t, cs, "read", map[string]any{"op": "header", "since": 1})); !strings.Contains(d, "MCP-FACT") {
		t.Fatalf("header since 1: %s", d)
	} else {
		t.Logf("header since v1: %s", d)
	}
	put := mustOK(t, cs, "write_memory", map[string]any{"op": "put", "content": "retry policy: three attempts with backoff\n", "name": "notes.md", "type": "markdown"})
	ref, _ := put["ref"].(string)
	g := mustOK(t, cs, "read", map[string]any{"op": "get", "ref": ref, "offset": 6, "length": 6})
	if g["content"] != "policy" || g["more"] != true {
		t.Fatalf("get range: %v", g)
	}
	s := mustOK(t, cs, "read", map[string]any{"op": "search", "query": "backoff"})
	if !strings.Contains(mustJSON(s), ref) {
		t.Fatalf("search: %v", s)
	}
	searchRef, _ := s["artifact_ref"].(string)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("FETCHED-PAGE")) }))
	defer page.Close()
	f := mustOK(t, cs, "fetch", map[string]any{"url": page.URL + "/doc.txt"})
	if !strings.Contains(mustJSON(f), "FETCHED-PAGE") {
		t.Fatalf("fetch: %v", f)
	}
	fetchRef, _ := f["artifact_ref"].(string)
	if searchRef == "" || fetchRef == "" {
		t.Fatalf("no artifact_ref in the search (%v) or the fetch (%v) answer", s, f)
	}
	// the header's recent artifacts name the note and the page, not the search's result list
	if h := mustJSON(mustOK(t, cs, "read", map[string]any{"op": "header"})); !strings.Contains(h, ref+" notes.md") || !strings.Contains(h, fetchRef) || strings.Contains(h, searchRef) {
		t.Fatalf("header %s: want %s notes.md and %s, not the search result %s", h, ref, fetchRef, searchRef)
	}
	if ev := mustOK(t, cs, "read", map[string]any{"op": "events", "after": 0}); !strings.Contains(mustJSON(ev), "artifact.stored") {
		t.Fatalf("events: %v", ev)
	}
	nt := mustOK(t, cs, "write_memory", map[string]any{"op": "new_thread", "name": "side"})
	if id, _ := nt["thread_id"].(string); id == "" || id == thread {
		t.Fatalf("new_thread: %v", nt)
	}

	// resources: the stored artifact is listed and readable. The session learns
	// of it from the thread's event stream, asynchronously; events are handled
	// in order, so once the update of a later state patch has arrived the
	// artifact.stored before it has been listed (no polling, no sleeping).
	ctx := context.Background()
	mustOK(t, cs, "write_memory", map[string]any{"op": "patch", "version": 2, "patch": []any{map[string]any{"op": "add", "path": "/facts/-", "value": map[string]any{"id": "f2", "key": "listed", "value": "yes"}}}})
	waitUpdated(t, updated, "relay://"+thread+"/state")
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, r := range res.Resources {
		listed[r.URI] = true
	}
	if !listed["relay://"+thread+"/artifacts/"+ref] {
		t.Fatal("the artifact never appeared in resources/list")
	}
	// a fetched page is listed; a search's result list is not (it would crowd out the rest)
	if !listed["relay://"+thread+"/artifacts/"+fetchRef] || listed["relay://"+thread+"/artifacts/"+searchRef] {
		t.Fatalf("fetch result %s listed: %v, search result %s listed: %v (want true, false)",
			fetchRef, listed["relay://"+thread+"/artifacts/"+fetchRef], searchRef, listed["relay://"+thread+"/artifacts/"+searchRef])
	}
	if rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "relay://" + thread + "/artifacts/" + searchRef}); err != nil || !strings.Contains(rr.Contents[0].Text, ref) {
		t.Fatalf("the search result is not readable through the template: %v %+v", err, rr)
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "relay://" + thread + "/artifacts/" + ref})
	if err != nil || !strings.HasPrefix(rr.Contents[0].Text, "retry policy") {
		t.Fatalf("read resource: %v %+v", err, rr)
	}

	// apply: an edit is a transaction in relay log, and revertable
	dry := mustOK(t, cs, "edit_files", map[string]any{"op": "edit", "path": "main.go", "old_string": `println("hello")`, "new_string": `println("hi")`, "dry_run": true})
	if dry["dry_run"] != true || readFile(t, w, "main.go") != "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n" {
		t.Fatalf("dry run changed the file or said %v", dry)
	}
	ed := mustOK(t, cs, "edit_files", map[string]any{"op": "edit", "path": "main.go", "old_string": `println("hello")`, "new_string": `println("hi")`})
	uuid, _ := ed["uuid"].(string)
	if !strings.Contains(readFile(t, w, "main.go"), `println("hi")`) || uuid == "" || ed["summary"] != "Edit main.go; committed: 1 file(s) changed, +1 -1" {
		t.Fatalf("edit: %v", ed)
	}
	if out := w.run(t, w.relay, "log", "--json"); !strings.Contains(out, uuid) {
		t.Fatalf("relay log lacks %s:\n%s", uuid, out)
	}
	text, isErr = call(t, cs, "edit_files", map[string]any{"op": "edit", "path": "main.go", "old_string": "no such text", "new_string": "x"})
	if !isErr || !strings.Contains(text, "Try: ") {
		t.Fatalf("failed edit: %v %s", isErr, text)
	}
	text, isErr = call(t, cs, "edit_files", map[string]any{"op": "edit", "path": "../outside.go", "old_string": "", "new_string": "x"})
	if !isErr || fileExists(filepath.Join(filepath.Dir(w.project), "outside.go")) {
		t.Fatalf("edit outside the project: %v %s", isErr, text)
	}
	lg := mustOK(t, cs, "read", map[string]any{"op": "log"})
	if !strings.Contains(mustJSON(lg), uuid) {
		t.Fatalf("log: %v", lg)
	}
	rv := mustOK(t, cs, "edit_files", map[string]any{"op": "revert", "ref": uuid})
	if rv["reverted"] != uuid || rv["summary"] != "Revert of "+uuid+"; committed: 1 file(s) changed, +1 -1" || !strings.Contains(readFile(t, w, "main.go"), `println("hello")`) {
		t.Fatalf("revert: %v", rv)
	}
	answer := "```go // hello.go\npackage main\n```\n\n```yaml\nprojectId: \"" + projectID(t, w) + "\"\nuuid: 8e1c1f4e-9b0a-4c55-9f43-4a1b2c3d4e5f\nchangeSummary:\n  - new: hello.go\ngitCommitMsg: add hello\npromptSummary: add hello\n```\n"
	an := mustOK(t, cs, "edit_files", map[string]any{"op": "answer", "answer": answer})
	if an["uuid"] != "8e1c1f4e-9b0a-4c55-9f43-4a1b2c3d4e5f" || !fileExists(filepath.Join(w.project, "hello.go")) {
		t.Fatalf("answer: %v", an)
	}

	// ask: the friend CLI (a stand-in for codex) answers through relay
	text, isErr = call(t, cs, "ask", map[string]any{"prompt": "is this safe?", "to": []string{"codex"}})
	if isErr || !strings.Contains(text, "FRIEND-SAYS-LGTM") {
		t.Fatalf("ask: %v %s", isErr, text)
	}
	text, isErr = call(t, cs, "ask", map[string]any{"prompt": "x", "to": []string{"nosuch"}})
	if !isErr {
		t.Fatalf("ask an unknown friend: %s", text)
	}
}

// waitUpdated waits for notifications/resources/updated of uri. The bound
// only turns a lost notification into a failure; it is far above any delay
// a loaded machine adds.
func waitUpdated(t *testing.T, updated <-chan string, uri string) {
	t.Helper()
	select {
	case got := <-updated:
		if got != uri {
			t.Fatalf("updated %s, want %s", got, uri)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("no notifications/resources/updated after the patch")
	}
}

func TestStdioHostileThreadFile(t *testing.T) {
	w := newWorld(t)
	if err := os.MkdirAll(filepath.Join(w.project, ".relaycode"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.write(t, ".relaycode/thread", "../../etc/passwd\n")
	cs := w.connect(t, nil)
	text, isErr := call(t, cs, "read", map[string]any{"op": "header"})
	if !isErr || !strings.Contains(text, "does not hold a thread id") || !strings.Contains(text, "Try: ") {
		t.Fatalf("hostile thread file: %v %s", isErr, text)
	}
	// an explicit thread still works
	nt := mustOK(t, cs, "write_memory", map[string]any{"op": "new_thread", "name": "x"})
	if h := mustOK(t, cs, "read", map[string]any{"op": "header", "thread": nt["thread_id"]}); h["t"] == "" || !strings.HasPrefix(fmt.Sprint(nt["thread_id"]), fmt.Sprint(h["t"])) {
		t.Fatalf("header: %v", h)
	}
	// a well-formed id of a thread this daemon never had is replaced by a new one
	w.write(t, ".relaycode/thread", "0b7a1c52-2a64-4b8e-9c1d-5e6f7a8b9c0d\n")
	cs2 := w.connect(t, nil)
	h := mustOK(t, cs2, "read", map[string]any{"op": "header"})
	if nowID := strings.TrimSpace(readFile(t, w, ".relaycode/thread")); h["t"] == "0b7a1c52" || nowID == "0b7a1c52-2a64-4b8e-9c1d-5e6f7a8b9c0d" || !strings.HasPrefix(nowID, fmt.Sprint(h["t"])) {
		t.Fatalf("unknown thread id: header %v, file %q", h, readFile(t, w, ".relaycode/thread"))
	}
}

func readFile(t *testing.T, w *world, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.project, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func projectID(t *testing.T, w *world) string {
	var cfg struct {
		ProjectID string `json:"projectId"`
	}
	if err := json.Unmarshal([]byte(readFile(t, w, "relaycode.config.json")), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg.ProjectID
}

// TestStdioAskVerdictAndSchema: the ask tool's verdict and schema options reach the friend
// and come back as checked JSON, and a bad schema is refused before any friend runs.
func TestStdioAskVerdictAndSchema(t *testing.T) {
	w := newWorld(t)
	answerFile := filepath.Join(t.TempDir(), "answer")
	w.env = append(w.env, "FAKE_ANSWER_FILE="+answerFile)
	cs := w.connect(t, nil)
	w.write(t, "main.go", "package main\n\nfunc main() {\n\tprintln(\"bye\")\n}\n") // the change a verdict judges

	if err := os.WriteFile(answerFile, []byte(`{"verdict":"approve","summary":"VERDICT-OK","findings":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	v := mustOK(t, cs, "ask", map[string]any{"verdict": true, "to": []string{"codex"}})
	if got := mustJSON(v); !strings.Contains(got, `"verdict":{"findings":[],"summary":"VERDICT-OK","verdict":"approve"}`) {
		t.Fatalf("ask verdict: %s", got)
	}

	if err := os.WriteFile(answerFile, []byte(`{"n":42}`), 0o600); err != nil {
		t.Fatal(err)
	}
	schema := map[string]any{"type": "object", "required": []string{"n"}, "properties": map[string]any{"n": map[string]any{"type": "integer"}}}
	s := mustOK(t, cs, "ask", map[string]any{"prompt": "how many?", "to": []string{"codex"}, "schema": schema})
	if got := mustJSON(s); !strings.Contains(got, `"json":{"n":42}`) {
		t.Fatalf("ask schema: %s", got)
	}

	text, isErr := call(t, cs, "ask", map[string]any{"prompt": "x", "to": []string{"codex"}, "schema": map[string]any{"type": 7}})
	if !isErr {
		t.Fatalf("ask with a bad schema: %s", text)
	}
	text, isErr = call(t, cs, "ask", map[string]any{"review": true, "diff": true, "to": []string{"codex"}})
	if !isErr || !strings.Contains(text, "drop diff") {
		t.Fatalf("ask review with diff: %v %s", isErr, text)
	}
}

// A full thread id goes to the daemon without a lookup first; every op on a missing one
// still answers the daemon's "thread … not found" with the next step, and leaves nothing.
func TestStdioMissingThreadByFullID(t *testing.T) {
	w := newWorld(t)
	cs := w.connect(t, nil)
	const missing = "0b7c6f5e-1d2a-4c3b-9e8f-7a6b5c4d3e2f"
	content := "x"
	for _, args := range []map[string]any{
		{"op": "header"}, {"op": "state"}, {"op": "events"}, {"op": "search", "query": "retry"},
		{"op": "get", "ref": "abcdef"},
	} {
		args["thread"] = strings.ToUpper(missing) // ids are matched case-blind, as Resolve did
		text, isErr := call(t, cs, "read", args)
		if !isErr || !strings.Contains(text, "thread "+missing+" not found") || !strings.Contains(text, `Try: omit thread to use this project's thread`) {
			t.Errorf("read %v: error %v\n%s", args, isErr, text)
		}
	}
	for _, args := range []map[string]any{
		{"op": "put", "content": content, "name": "n.md"},
		{"op": "patch", "patch": []any{map[string]any{"op": "add", "path": "/facts/-", "value": map[string]any{"key": "k", "value": "v"}}}, "version": 1},
	} {
		args["thread"] = missing
		text, isErr := call(t, cs, "write_memory", args)
		if !isErr || !strings.Contains(text, "thread "+missing+" not found") || !strings.Contains(text, `Try: omit thread to use this project's thread`) {
			t.Errorf("write_memory %v: error %v\n%s", args, isErr, text)
		}
	}
	if out := w.run(t, w.relay, "runs", "--json"); strings.Contains(out, missing) {
		t.Errorf("a call on a missing thread made it:\n%s", out)
	}
}

// $RELAY_THREAD is looked up once a session, not before every call: the daemon's request
// log (every request at debug level) shows one GET /threads/{id} for many searches.
func TestStdioRelayThreadLookedUpOnce(t *testing.T) {
	w := newWorld(t)
	w.env = append(w.env, "RELAY_LOG_LEVEL=debug")
	cs := w.connect(t, nil)
	thread, _ := mustOK(t, cs, "write_memory", map[string]any{"op": "new_thread", "name": "by-env"})["thread_id"].(string)
	w.env = append(w.env, "RELAY_THREAD="+thread)
	cs = w.connect(t, nil)
	mustOK(t, cs, "write_memory", map[string]any{"op": "put", "content": "retry policy: three attempts", "name": "n.md"})
	for range 5 {
		if r := mustOK(t, cs, "read", map[string]any{"op": "search", "query": "retry"}); r["thread_id"] != thread {
			t.Fatalf("search ran in %v, want the thread $RELAY_THREAD names (%s)", r["thread_id"], thread)
		}
	}
	b, err := os.ReadFile(filepath.Join(w.home, ".relay", "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), "path=/cap/invoke ") < 5 {
		t.Fatalf("the daemon logged no requests:\n%s", b)
	}
	if n := strings.Count(string(b), "path=/threads/"+thread+" "); n > 1 {
		t.Errorf("%d lookups of the thread for 6 calls, want at most 1:\n%s", n, b)
	}
}
