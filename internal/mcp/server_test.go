package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/tokens"
)

// fakeMemory is an in-memory daemon: enough for the protocol layer's tests.
type fakeMemory struct {
	mu        sync.Mutex
	version   int
	artifacts map[string]string
	calls     []string
	events    chan Event
	sinceSeen int
}

func newFakeMemory() *fakeMemory {
	return &fakeMemory{version: 1, artifacts: map[string]string{}, events: make(chan Event, 16)}
}

var errNotFound = errors.New("artifact not found")

func (f *fakeMemory) log(s string) { f.mu.Lock(); f.calls = append(f.calls, s); f.mu.Unlock() }

func (f *fakeMemory) NewThread(ctx context.Context, name string) (json.RawMessage, error) {
	return json.RawMessage(`{"thread_id":"22222222-2222-4222-8222-222222222222","name":"` + name + `"}`), nil
}
func (f *fakeMemory) Resolve(ctx context.Context, thread string) (string, error) {
	if thread == "missing" {
		return "", &ArgError{Msg: "no thread \"missing\"", Hint: "omit thread"}
	}
	return thread, nil
}
func (f *fakeMemory) Header(ctx context.Context, thread string, since int) (json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sinceSeen = since
	return json.RawMessage(fmt.Sprintf(`{"thread_id":%q,"version":%d}`, thread, f.version)), nil
}
func (f *fakeMemory) State(ctx context.Context, thread string, version int) (json.RawMessage, error) {
	return json.RawMessage(`{"facts":["a"]}`), nil
}
func (f *fakeMemory) Patch(ctx context.Context, thread string, p json.RawMessage, version int) (json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if version != 0 && version != f.version {
		return nil, &ArgError{Msg: fmt.Sprintf("version conflict (current version: %d)", f.version), Hint: "re-read"}
	}
	f.version++
	return json.RawMessage(fmt.Sprintf(`{"version":%d}`, f.version)), nil
}
func (f *fakeMemory) Put(ctx context.Context, thread string, a NewArtifact) (json.RawMessage, error) {
	f.mu.Lock()
	ref := fmt.Sprintf("a%d", len(f.artifacts)+1)
	f.artifacts[ref] = a.Content
	f.mu.Unlock()
	f.events <- Event{ID: int64(len(f.artifacts)), Type: "artifact.stored", Data: json.RawMessage(fmt.Sprintf(`{"ref":%q,"name":%q,"type":%q,"size":%d}`, ref, a.Name, a.Type, len(a.Content)))}
	return json.RawMessage(`{"ref":"` + ref + `"}`), nil
}
func (f *fakeMemory) Artifact(ctx context.Context, thread, ref string) (Artifact, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.artifacts[ref]
	if !ok {
		return Artifact{}, errNotFound
	}
	return Artifact{Ref: ref, Type: "text", Mime: "text/plain", Size: int64(len(c))}, nil
}
func (f *fakeMemory) Content(ctx context.Context, thread, ref string, offset, length int64) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.artifacts[ref]
	end := min(int64(len(c)), offset+length)
	return []byte(c[offset:end]), nil
}
func (f *fakeMemory) Artifacts(ctx context.Context, thread string, limit int) ([]Artifact, error) {
	return nil, nil
}
func (f *fakeMemory) Invoke(ctx context.Context, thread, capability string, args json.RawMessage) (json.RawMessage, error) {
	f.log(capability + " " + string(args))
	return json.RawMessage(`{"artifact_ref":"s1","preview":{"count":0}}`), nil
}
func (f *fakeMemory) Events(ctx context.Context, thread string, after int64, limit int) (json.RawMessage, error) {
	f.log(fmt.Sprintf("events %d %d", after, limit))
	return json.RawMessage(`{"events":[]}`), nil
}
func (f *fakeMemory) Watch(ctx context.Context, thread string, after int64, fn func(Event)) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e := <-f.events:
			fn(e)
		}
	}
}

const testThread = "11111111-1111-4111-8111-111111111111"

type harness struct {
	mem     *fakeMemory
	session *sdk.ClientSession
	updated chan string
	listed  chan struct{}
	askArgs chan AskArgs
}

func start(t *testing.T, jobs Jobs) *harness {
	t.Helper()
	h := &harness{mem: newFakeMemory(), updated: make(chan string, 16), listed: make(chan struct{}, 16), askArgs: make(chan AskArgs, 4)}
	if jobs.Memory == nil {
		jobs.Memory = h.mem
	}
	if jobs.DefaultThread == nil {
		jobs.DefaultThread = func(ctx context.Context, create bool) (string, error) { return testThread, nil }
	}
	if jobs.Backends == nil {
		jobs.Backends = []string{"codex", "claude", "gemini", "qwen"}
	}
	if jobs.Ask == nil {
		jobs.Ask = func(ctx context.Context, a AskArgs) ([]Answer, error) {
			h.askArgs <- a
			return []Answer{{Backend: "codex", Answer: "short answer"}}, nil
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := sdk.NewInMemoryTransports()
	s := New(jobs)
	go func() { _ = s.Run(ctx, st) }()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			h.updated <- r.Params.URI
		},
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { h.listed <- struct{}{} },
	})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	h.session = cs
	return h
}

func (h *harness) call(t *testing.T, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := h.session.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: protocol error %v (tool failures must be results)", tool, args, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// TestToolListBudget: every host pays for tools/list in every session; the whole list
// (names, titles, descriptions, schemas, annotations) stays under 1,500 o200k tokens.
func TestToolListBudget(t *testing.T) {
	const budget = 1500
	h := start(t, Jobs{Backends: []string{"claude", "codex", "gemini", "ollama", "opencode", "qwen"}})
	res, err := h.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "ask,edit_files,fetch,read,write_memory" {
		t.Fatalf("tools %v", names)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tokens.New(tokens.O200k)
	if err != nil {
		t.Fatal(err)
	}
	n := c.Count(b)
	t.Logf("tools/list: %d tools, %d bytes, %d o200k tokens (budget %d)", len(res.Tools), len(b), n, budget)
	for _, tool := range res.Tools {
		tb, _ := json.Marshal(tool)
		t.Logf("  %-12s %4d tokens", tool.Name, c.Count(tb))
	}
	if n > budget {
		t.Fatalf("tools/list costs %d o200k tokens, over the %d budget", n, budget)
	}
}

// Every tool has a title and one honest annotation profile: reads are read-only, file
// changes destructive, fetch and ask reach the open world.
func TestToolAnnotations(t *testing.T) {
	h := start(t, Jobs{})
	res, err := h.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type profile struct{ readOnly, destructive, idempotent, openWorld bool }
	want := map[string]profile{
		"read":         {readOnly: true, idempotent: true},
		"write_memory": {},
		"edit_files":   {destructive: true},
		"fetch":        {openWorld: true},
		"ask":          {destructive: true, openWorld: true},
	}
	for _, tl := range res.Tools {
		a := tl.Annotations
		if a == nil || tl.Title == "" || a.Title != tl.Title || a.DestructiveHint == nil || a.OpenWorldHint == nil {
			t.Fatalf("%s: title %q, annotations %+v: want a title and every hint set", tl.Name, tl.Title, a)
		}
		got := profile{a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, *a.OpenWorldHint}
		if got != want[tl.Name] {
			t.Errorf("%s: annotations %+v, want %+v", tl.Name, got, want[tl.Name])
		}
		if tl.OutputSchema == nil {
			t.Errorf("%s has no outputSchema", tl.Name)
		}
		if slices.Contains(ReadOnlyTools, tl.Name) != a.ReadOnlyHint || slices.Contains(WriteTools, tl.Name) == a.ReadOnlyHint {
			t.Errorf("%s: ReadOnlyTools/WriteTools disagree with its readOnlyHint", tl.Name)
		}
	}
	if h.session.InitializeResult().Instructions != Instructions || !strings.Contains(Instructions, "edit_files") {
		t.Fatalf("instructions: %q", h.session.InitializeResult().Instructions)
	}
	if strings.Contains(editDescription, "revertable transaction") == false {
		t.Fatal("edit_files must say every change is a logged, revertable transaction")
	}
}

// Every result is structuredContent (an object) and the same JSON as text.
func TestStructuredContentEqualsText(t *testing.T) {
	h := start(t, Jobs{Ask: func(ctx context.Context, a AskArgs) ([]Answer, error) {
		return []Answer{{Backend: "codex", Answer: "ok"}}, nil
	}})
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"read", map[string]any{"op": "header"}},
		{"write_memory", map[string]any{"op": "put", "content": "x"}},
		{"fetch", map[string]any{"url": "https://example.com/"}},
		{"ask", map[string]any{"prompt": "q"}},
	} {
		res, err := h.session.CallTool(context.Background(), &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("%s: %v %+v", c.tool, err, res)
		}
		sc, _ := json.Marshal(res.StructuredContent)
		text := res.Content[0].(*sdk.TextContent).Text
		var fromText any
		if json.Unmarshal([]byte(text), &fromText) != nil || !strings.HasPrefix(text, "{") || !reflect.DeepEqual(fromText, res.StructuredContent) {
			t.Errorf("%s: structuredContent %s, text %s", c.tool, sc, text)
		}
	}
}

// A result over the budget is stored and returned as ref + preview + how to page.
func TestLargeResultIsStoredAndPaged(t *testing.T) {
	mem := newFakeMemory()
	big := strings.Repeat(`{"id":"f","key":"k","value":"v"},`, 2000)
	h := start(t, Jobs{Memory: &bigState{fakeMemory: mem, doc: `{"facts":[` + big + `{}]}`}})
	text, isErr := h.call(t, "read", map[string]any{"op": "state"})
	if isErr {
		t.Fatal(text)
	}
	var r struct {
		Stored   bool   `json:"stored"`
		Ref      string `json:"ref"`
		Bytes    int    `json:"bytes"`
		Preview  string `json:"preview"`
		Continue string `json:"continue"`
	}
	if err := json.Unmarshal([]byte(text), &r); err != nil || !r.Stored || r.Ref == "" || r.Bytes <= ResultBudget || len(r.Preview) > previewBytes || !strings.Contains(r.Continue, `"op":"get"`) {
		t.Fatalf("large result: %v %s", err, text)
	}
	if len(text) > ResultBudget {
		t.Fatalf("the stand-in is %d bytes", len(text))
	}
	page, _ := h.call(t, "read", map[string]any{"op": "get", "ref": r.Ref, "length": 1 << 20})
	var g getResult
	if err := json.Unmarshal([]byte(page), &g); err != nil || g.Length == 0 || g.Length > maxRead || !g.More || len(page) > ResultBudget {
		t.Fatalf("a page: %v, %d bytes, length %d more %v", err, len(page), g.Length, g.More)
	}
}

type bigState struct {
	*fakeMemory
	doc string
}

func (b *bigState) State(ctx context.Context, thread string, version int) (json.RawMessage, error) {
	return json.RawMessage(b.doc), nil
}

func TestToolErrorsAreResults(t *testing.T) {
	h := start(t, Jobs{Explain: func(err error) (string, string) {
		var a *ArgError
		if errors.As(err, &a) {
			return a.Msg, a.Hint
		}
		return err.Error(), ""
	}})
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read", map[string]any{"op": "nope"}, `unknown read op "nope"`},
		{"read", map[string]any{"op": "put", "content": "x"}, `unknown field "content"`},
		{"write_memory", map[string]any{"op": "header"}, `unknown write_memory op "header"`},
		{"fetch", map[string]any{}, "needs url"},
		{"read", map[string]any{"op": "header", "bogus": 1}, `unknown field "bogus"`},
		{"write_memory", map[string]any{"op": "patch"}, "op=patch needs patch"},
		{"write_memory", map[string]any{"op": "put"}, "op=put needs content"},
		{"read", map[string]any{"op": "get"}, "op=get needs ref"},
		{"read", map[string]any{"op": "get", "ref": "zz"}, "artifact not found"},
		{"read", map[string]any{"op": "header", "thread": "missing"}, "Try: omit thread"},
		{"write_memory", map[string]any{"op": "patch", "patch": []any{}, "version": 7}, "current version: 1"},
		{"edit_files", map[string]any{"op": "edit"}, "op=edit needs path"},
		{"edit_files", map[string]any{"op": "fly"}, `unknown edit_files op "fly"`},
		{"ask", map[string]any{"prompt": " "}, "prompt is empty"},
		{"read", map[string]any{"op": "log"}, "the change log is not available"},
		{"edit_files", map[string]any{"op": "revert"}, "file changes are not available"},
	}
	for _, c := range cases {
		text, isErr := h.call(t, c.tool, c.args)
		if !isErr || !strings.HasPrefix(text, "Error: ") || !strings.Contains(text, c.want) {
			t.Errorf("%s %v: isError=%v %q, want an error result containing %q", c.tool, c.args, isErr, text, c.want)
		}
	}
	// the session survived every one of them
	if text, isErr := h.call(t, "read", map[string]any{"op": "header"}); isErr || !strings.Contains(text, testThread) {
		t.Fatalf("after the errors: %v %s", isErr, text)
	}
}

func TestPanicIsAResult(t *testing.T) {
	h := start(t, Jobs{Apply: func(ctx context.Context, a ApplyArgs) (any, error) { panic("boom") }})
	text, isErr := h.call(t, "read", map[string]any{"op": "log"})
	if !isErr || !strings.Contains(text, "internal error: boom") {
		t.Fatalf("got %v %q", isErr, text)
	}
	if _, isErr := h.call(t, "read", map[string]any{"op": "header"}); isErr {
		t.Fatal("the server did not survive a panicking job")
	}
}

func TestMemoryOps(t *testing.T) {
	h := start(t, Jobs{})
	if text, _ := h.call(t, "read", map[string]any{"op": "header", "since": 4}); !strings.Contains(text, `"version":1`) || h.mem.sinceSeen != 4 {
		t.Fatalf("header since: %s (since seen %d)", text, h.mem.sinceSeen)
	}
	if text, isErr := h.call(t, "write_memory", map[string]any{"op": "patch", "version": 1, "patch": []any{map[string]any{"op": "add", "path": "/x", "value": 1}}}); isErr || text != `{"version":2}` {
		t.Fatalf("patch: %v %s", isErr, text)
	}
	content := strings.Repeat("é", 10) // 20 bytes, two per rune
	text, isErr := h.call(t, "write_memory", map[string]any{"op": "put", "content": content, "name": "n.txt"})
	if isErr || text != `{"ref":"a1"}` {
		t.Fatalf("put: %v %s", isErr, text)
	}
	// a range that cuts a rune ends before it, so the next offset is exact
	text, _ = h.call(t, "read", map[string]any{"op": "get", "ref": "a1", "offset": 2, "length": 5})
	var g getResult
	if err := json.Unmarshal([]byte(text), &g); err != nil {
		t.Fatal(err, text)
	}
	if g.Content != "éé" || g.Length != 4 || !g.More || g.Size != 20 {
		t.Fatalf("get range: %+v", g)
	}
	h.call(t, "read", map[string]any{"op": "search", "query": "retry", "limit": 500})
	h.call(t, "fetch", map[string]any{"url": "https://example.com/"})
	h.call(t, "read", map[string]any{"op": "events", "after": 9})
	want := []string{`retrieval.search {"limit":50,"query":"retry"}`, `http.fetch {"url":"https://example.com/"}`, "events 9 50"}
	if strings.Join(h.mem.calls, "|") != strings.Join(want, "|") {
		t.Fatalf("calls %q, want %q", h.mem.calls, want)
	}
}

func TestLongAnswerBecomesRef(t *testing.T) {
	long := strings.Repeat("line of a long review\n", 1000)
	h := start(t, Jobs{Ask: func(ctx context.Context, a AskArgs) ([]Answer, error) {
		return []Answer{{Backend: "claude", Answer: long}, {Backend: "codex", Answer: "short"}}, nil
	}})
	text, isErr := h.call(t, "ask", map[string]any{"prompt": "review", "to": []string{"claude", "codex"}})
	if isErr {
		t.Fatal(text)
	}
	var res struct{ Answers []Answer }
	if err := json.Unmarshal([]byte(text), &res); err != nil {
		t.Fatal(err)
	}
	answers := res.Answers
	if answers[0].Ref != "a1" || answers[0].Answer != "" || answers[0].Bytes != len(long) || len(answers[0].Preview) > previewBytes {
		t.Fatalf("long answer: %+v", answers[0])
	}
	if answers[1].Answer != "short" || answers[1].Ref != "" {
		t.Fatalf("short answer: %+v", answers[1])
	}
	if h.mem.artifacts["a1"] != long {
		t.Fatal("the stored artifact is not the whole answer")
	}
}

func TestResources(t *testing.T) {
	h := start(t, Jobs{})
	ctx := context.Background()
	if err := h.session.Subscribe(ctx, &sdk.SubscribeParams{URI: StateURI(testThread)}); err != nil {
		t.Fatal(err)
	}
	if _, isErr := h.call(t, "write_memory", map[string]any{"op": "put", "content": "hello", "name": "hello.txt"}); isErr {
		t.Fatal("put failed")
	}
	// the artifact shows up in resources/list once the event stream reports it
	deadline := time.After(10 * time.Second)
	for found := false; !found; {
		select {
		case <-h.listed:
		case <-deadline:
			t.Fatal("no resources/list_changed after an artifact was stored")
		}
		res, err := h.session.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Resources {
			found = found || r.URI == ArtifactURI(testThread, "a1")
		}
	}
	rr, err := h.session.ReadResource(ctx, &sdk.ReadResourceParams{URI: ArtifactURI(testThread, "a1")})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "hello" {
		t.Fatalf("read: %v %+v", err, rr)
	}
	if _, err := h.session.ReadResource(ctx, &sdk.ReadResourceParams{URI: "relay://" + testThread + "/artifacts/nope"}); err == nil {
		t.Fatal("reading a missing artifact succeeded")
	}
	if _, err := h.session.ReadResource(ctx, &sdk.ReadResourceParams{URI: "file:///etc/passwd"}); err == nil {
		t.Fatal("reading a foreign URI succeeded")
	}
	h.mem.events <- Event{ID: 99, Type: "state.patched"}
	select {
	case uri := <-h.updated:
		if uri != StateURI(testThread) {
			t.Fatalf("updated %s", uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no resources/updated after a state patch")
	}
}

func TestParseURI(t *testing.T) {
	for _, c := range []struct{ uri, thread, ref string }{
		{"relay://" + testThread + "/artifacts/abc_1-2.x", testThread, "abc_1-2.x"},
		{"relay://" + testThread + "/state", testThread, ""},
		{"relay://" + testThread + "/artifacts/../state", "", ""},
		{"relay://" + testThread + "/artifacts/a?b=1", "", ""},
		{"relay://evil.example/artifacts/a", "", ""},
		{"http://" + testThread + "/state", "", ""},
	} {
		th, ref, err := parseURI(c.uri)
		if th != c.thread || ref != c.ref || (err == nil) != (c.thread != "") {
			t.Errorf("parseURI(%q) = %q %q %v", c.uri, th, ref, err)
		}
	}
}

func FuzzParseURI(f *testing.F) {
	f.Add("relay://" + testThread + "/artifacts/abc")
	f.Add("relay://x/state")
	f.Fuzz(func(t *testing.T, uri string) {
		th, ref, err := parseURI(uri)
		if err != nil {
			return
		}
		if !threadRe().MatchString(th) || (ref != "" && !refRe().MatchString(ref)) {
			t.Fatalf("parseURI(%q) accepted %q %q", uri, th, ref)
		}
		want := StateURI(th)
		if ref != "" {
			want = ArtifactURI(th, ref)
		}
		if th2, ref2, err := parseURI(want); err != nil || th2 != th || ref2 != ref {
			t.Fatalf("round trip of %q failed", uri)
		}
	})
}

func TestPrompts(t *testing.T) {
	h := start(t, Jobs{})
	ctx := context.Background()
	list, err := h.session.ListPrompts(ctx, nil)
	if err != nil || len(list.Prompts) != 2 || list.Prompts[0].Name != "relay-apply" || list.Prompts[1].Name != "relay-ask" {
		t.Fatalf("prompts: %v %+v", err, list)
	}
	res, err := h.session.GetPrompt(ctx, &sdk.GetPromptParams{Name: "relay-ask", Arguments: map[string]string{"request": "to:codex review the retry loop"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Messages[0].Content.(*sdk.TextContent).Text
	if !strings.Contains(text, "for this request: to:codex review the retry loop") || strings.Contains(text, "{{") {
		t.Fatalf("prompt text:\n%s", text)
	}
}

// TestSearchResultsNotListed: a search's result list (every search stores one) is not listed
// as a resource; what another capability stored, or an agent, is.
func TestSearchResultsNotListed(t *testing.T) {
	s := New(Jobs{})
	ctx := context.Background()
	for i, c := range []string{"", "http.fetch", memory.SearchCapability} {
		data := fmt.Sprintf(`{"ref":"%06x","name":"n%d.json","type":"json","size":1,"capability":%q}`, i, i, c)
		s.onEvent(ctx, testThread, Event{ID: int64(i + 1), Type: "artifact.stored", Data: json.RawMessage(data)})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if got := s.listed[testThread]; len(got) != 2 || got[0] != ArtifactURI(testThread, "000000") || got[1] != ArtifactURI(testThread, "000001") {
		t.Fatalf("listed %v, want the agent's and the fetch's artifacts only", got)
	}
}

// TestListedArtifactsBounded: a thread keeps at most maxListed artifacts in resources/list,
// the oldest dropped first, whichever path (watch or resources/list priming) added them.
func TestListedArtifactsBounded(t *testing.T) {
	s := New(Jobs{})
	ctx := context.Background()
	uri := func(i int) string { return ArtifactURI(testThread, fmt.Sprintf("%06x", i)) }
	for i := range maxListed + 2 {
		data := fmt.Sprintf(`{"ref":"%06x","name":"n%d.md","type":"markdown","size":1}`, i, i)
		s.onEvent(ctx, testThread, Event{ID: int64(i + 1), Type: "artifact.stored", Data: json.RawMessage(data)})
	}
	// the same artifact again (the watch replaying what priming listed) adds nothing
	s.onEvent(ctx, testThread, Event{ID: 1, Type: "artifact.stored", Data: json.RawMessage(fmt.Sprintf(`{"ref":"%06x","name":"x","type":"markdown","size":1}`, maxListed+1))})
	s.mu.Lock()
	list := s.listed[testThread]
	first, oldest, newest := s.known[uri(0)], s.known[uri(2)], s.known[uri(maxListed+1)]
	s.mu.Unlock()
	if len(list) != maxListed || first || !oldest || !newest || list[0] != uri(2) {
		t.Fatalf("listed %d (want %d), first known %v, oldest kept %v, newest %v, list starts %s", len(list), maxListed, first, oldest, newest, list[0])
	}
}
