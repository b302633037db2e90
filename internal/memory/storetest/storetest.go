// Package storetest is the conformance suite of memory.Store: every backend runs it, so a
// behaviour the daemon relies on is written down once and proven on each engine.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/blob"
)

// Open returns a fresh, empty store; the suite closes it.
type Open func(t *testing.T) memory.Store

// Run runs every conformance test against stores made by open.
func Run(t *testing.T, open Open) { RunOnly(t, open) }

// Bodies are the conformance tests that read and write artifact bodies: for a variant of
// a store that only differs in where it keeps them (a bucket).
var Bodies = []string{"artifacts", "search", "dump round trip"}

// RunOnly runs the named conformance tests (all of them when names is empty).
func RunOnly(t *testing.T, open Open, names ...string) {
	tests := []struct {
		name string
		fn   func(*testing.T, memory.Store)
	}{
		{"threads", testThreads},
		{"thread names are unique", testThreadNames},
		{"patch and versions", testPatch},
		{"stale version conflicts", testConflict},
		{"concurrent writers lose nothing", testConcurrentWriters},
		{"artifacts", testArtifacts},
		{"one ref per artifact, store-wide", testShortRefs},
		{"events and subscribe", testEvents},
		{"capability cache", testCapabilityCache},
		{"hop ledger", testHops},
		{"search", testSearch},
		{"dump round trip", testDump},
		{"refused patches change nothing", testPatchRefusals},
		{"state size cap", testStateSizeCap},
		{"every version readable across snapshots", testVersionsAcrossSnapshots},
		{"metrics and event validation", testMetricsAndEventData},
	}
	for _, tt := range tests {
		if len(names) > 0 && !slices.Contains(names, tt.name) {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			st := open(t)
			t.Cleanup(func() { st.Close() })
			tt.fn(t, st)
		})
	}
}

func newThread(t *testing.T, st memory.Store, name string) memory.Thread {
	t.Helper()
	th, err := st.CreateThread(context.Background(), memory.CreateThreadParams{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func fact(i int) []byte {
	return fmt.Appendf(nil, `[{"op":"add","path":"/facts/-","value":{"id":"f%d","key":"k%d","value":"v"}}]`, i, i)
}

func testThreads(t *testing.T, st memory.Store) {
	ctx := context.Background()
	a := newThread(t, st, "alpha")
	if a.ID == "" || a.Version != 1 || a.Name != "alpha" {
		t.Fatalf("new thread = %+v, want an id, version 1 and the name", a)
	}
	got, err := st.GetThread(ctx, a.ID)
	if err != nil || got.ID != a.ID || got.Name != "alpha" {
		t.Fatalf("GetThread = %+v, %v", got, err)
	}
	if _, err := st.GetThread(ctx, "00000000-0000-4000-8000-000000000000"); !memory.IsNotFound(err) {
		t.Fatalf("unknown thread: err = %v, want not found", err)
	}
	newThread(t, st, "beta")
	list, err := st.ListThreads(ctx, 10)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListThreads = %d threads, %v; want 2", len(list), err)
	}
}

func testThreadNames(t *testing.T, st memory.Store) {
	ctx := context.Background()
	demo := newThread(t, st, "demo")
	_, err := st.CreateThread(ctx, memory.CreateThreadParams{Name: "demo"})
	var taken *memory.NameTakenError
	if !errors.As(err, &taken) || taken.ThreadID != demo.ID || taken.Name != "demo" {
		t.Fatalf("a second thread named demo: err = %v, want *NameTakenError naming %s", err, demo.ID)
	}
	got, err := st.CreateThread(ctx, memory.CreateThreadParams{Name: "demo", IfNameTaken: memory.NameTakenReuse})
	if err != nil || got.ID != demo.ID || !got.Reused || got.Name != "demo" {
		t.Fatalf("reuse demo = %+v, %v; want thread %s, reused", got, err, demo.ID)
	}
	for _, want := range []string{"demo (2)", "demo (3)"} {
		got, err := st.CreateThread(ctx, memory.CreateThreadParams{Name: "demo", IfNameTaken: memory.NameTakenNext})
		if err != nil || got.Name != want || got.Reused {
			t.Fatalf("next free name after demo = %+v, %v; want %q", got, err, want)
		}
	}
	if got, err := st.CreateThread(ctx, memory.CreateThreadParams{Name: "demo (2)", IfNameTaken: memory.NameTakenNext}); err != nil || got.Name != "demo (4)" {
		t.Fatalf("next free name after demo (2) = %+v, %v; want demo (4)", got, err)
	}
	if got, err := st.CreateThread(ctx, memory.CreateThreadParams{Name: "fresh", IfNameTaken: memory.NameTakenNext}); err != nil || got.Name != "fresh" {
		t.Fatalf("a free name is kept: %+v, %v", got, err)
	}
	// unnamed threads are many
	newThread(t, st, "")
	newThread(t, st, "")
	if _, err := st.CreateThread(ctx, memory.CreateThreadParams{Name: "x", IfNameTaken: "sometimes"}); err == nil {
		t.Fatal("an unknown IfNameTaken was accepted")
	}
	list, err := st.ListThreads(ctx, 100)
	if err != nil || len(list) != 7 {
		t.Fatalf("ListThreads = %d threads, %v; want 7 (no thread made by a refused or reused create)", len(list), err)
	}

	// concurrent creators of one name: one wins, the rest are told; with next, all get a name of their own
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, names := 0, map[string]bool{}
	for range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := st.CreateThread(ctx, memory.CreateThreadParams{Name: "race"})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				created++
			} else if !errors.As(err, new(*memory.NameTakenError)) {
				t.Errorf("racing create: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			th, err := st.CreateThread(ctx, memory.CreateThreadParams{Name: "run", IfNameTaken: memory.NameTakenNext})
			mu.Lock()
			defer mu.Unlock()
			if err != nil || names[th.Name] {
				t.Errorf("racing create with next: %+v, %v (names so far %v)", th, err, names)
			}
			names[th.Name] = true
		}()
	}
	wg.Wait()
	if created != 1 || len(names) != 8 {
		t.Fatalf("8 racing creates of one name made %d threads (want 1); 8 with next got %d distinct names (want 8)", created, len(names))
	}
}

func testPatch(t *testing.T, st memory.Store) {
	ctx := context.Background()
	th := newThread(t, st, "")
	for i := range 5 {
		res, err := st.PatchState(ctx, th.ID, fact(i), 0, "test")
		if err != nil {
			t.Fatal(err)
		}
		if res.Version != i+2 || res.StateRef != memory.StateRef(i+2) {
			t.Fatalf("patch %d gave %+v", i, res)
		}
	}
	s, err := st.State(ctx, th.ID, 0)
	if err != nil || s.Version != 6 {
		t.Fatalf("State = v%d, %v; want v6", s.Version, err)
	}
	var doc struct {
		Facts []struct{ ID string } `json:"facts"`
	}
	if err := json.Unmarshal(s.Doc, &doc); err != nil || len(doc.Facts) != 5 {
		t.Fatalf("state has %d facts (%v), want 5: %s", len(doc.Facts), err, s.Doc)
	}
	old, err := st.State(ctx, th.ID, 3)
	if err != nil || old.Version != 3 || strings.Count(string(old.Doc), `"id":"f`) != 2 {
		t.Fatalf("State(v3) = %s, %v; want two facts", old.Doc, err)
	}
	vs, err := st.Versions(ctx, th.ID, 4, 10)
	if err != nil || len(vs) != 2 || vs[0].Version != 5 {
		t.Fatalf("Versions after v4 = %+v, %v", vs, err)
	}
	h, err := st.Header(ctx, th.ID)
	if err != nil || h.Version != 6 || !json.Valid(h.JSON) {
		t.Fatalf("Header = %+v, %v", h, err)
	}
	// A refused patch changes nothing.
	if _, err := st.PatchState(ctx, th.ID, []byte(`[{"op":"remove","path":"/nosuch"}]`), 0, "test"); err == nil {
		t.Fatal("removing a missing path succeeded")
	}
	if s2, _ := st.State(ctx, th.ID, 0); s2.Version != 6 {
		t.Fatalf("a refused patch moved the state to v%d", s2.Version)
	}
}

func testConflict(t *testing.T, st memory.Store) {
	ctx := context.Background()
	th := newThread(t, st, "")
	if _, err := st.PatchState(ctx, th.ID, fact(1), 1, "a"); err != nil {
		t.Fatal(err)
	}
	_, err := st.PatchState(ctx, th.ID, fact(2), 1, "b")
	var ce *memory.ConflictError
	if !errors.As(err, &ce) || ce.Current != 2 || ce.Expected != 1 {
		t.Fatalf("stale patch: err = %v, want a conflict at v2", err)
	}
}

// testConcurrentWriters: writers that retry on conflict all land, exactly once each.
func testConcurrentWriters(t *testing.T, st memory.Store) {
	ctx := context.Background()
	th := newThread(t, st, "")
	const writers, each = 4, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				for {
					cur, err := st.State(ctx, th.ID, 0)
					if err != nil {
						t.Error(err)
						return
					}
					_, err = st.PatchState(ctx, th.ID, fact(w*100+i), cur.Version, "w")
					var ce *memory.ConflictError
					if errors.As(err, &ce) {
						continue
					}
					if err != nil {
						t.Error(err)
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	s, err := st.State(ctx, th.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(s.Doc), `"id":"f`); n != writers*each || s.Version != writers*each+1 {
		t.Fatalf("after %d writes: %d facts at v%d", writers*each, n, s.Version)
	}
}

// testShortRefs: every artifact's short ref (the one relay shows) is unique in the store, is
// what its artifact.stored event carries, resolves in its thread and without one, and a
// header names the artifact by it.
func testShortRefs(t *testing.T, st memory.Store) {
	ctx := context.Background()
	a, b := newThread(t, st, "refs-a"), newThread(t, st, "refs-b")
	seen := map[string]string{}
	var last memory.Artifact
	for i := range 40 {
		th := a
		if i%2 == 1 {
			th = b
		}
		art, err := st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: fmt.Sprintf("n%d.md", i), Content: fmt.Appendf(nil, "note %d\n", i)})
		if err != nil {
			t.Fatal(err)
		}
		short := memory.Short(art.Ref)
		if prev, dup := seen[short]; dup {
			t.Fatalf("short ref %s of %s is also %s's", short, art.Ref, prev)
		}
		seen[short] = art.Ref
		last = art
	}
	short := memory.Short(last.Ref)
	for _, ref := range []string{short, last.Ref} {
		got, err := st.GetArtifact(ctx, last.ThreadID, ref)
		if err != nil || got.Ref != last.Ref {
			t.Fatalf("GetArtifact(%s) = %v, %v; want %s", ref, got.Ref, err, last.Ref)
		}
		found, err := st.FindArtifact(ctx, ref)
		if err != nil || found.Ref != last.Ref || found.ThreadID != last.ThreadID {
			t.Fatalf("FindArtifact(%s) = %+v, %v; want %s in %s", ref, found, err, last.Ref, last.ThreadID)
		}
	}
	if _, err := st.GetArtifact(ctx, a.ID, short); !memory.IsNotFound(err) {
		t.Fatalf("another thread's short ref in thread a: %v, want not found", err)
	}
	if _, err := st.FindArtifact(ctx, "000000"); !memory.IsNotFound(err) {
		t.Fatalf("FindArtifact(unknown) = %v, want not found", err)
	}
	if shared, err := st.SharedShorts(ctx, []string{short, "000000"}); err != nil || len(shared) != 0 {
		t.Fatalf("SharedShorts = %v, %v; want none", shared, err)
	}
	evs, err := st.Events(ctx, b.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(evs[len(evs)-1].Data); !strings.Contains(got, `"ref":"`+short+`"`) || strings.Contains(got, "capability") {
		t.Fatalf("artifact.stored event %s does not carry the short ref %s, or names a capability", got, short)
	}
	// a capability's result says which capability made it, so followers can tell it apart
	if _, err := st.PutArtifact(ctx, b.ID, memory.PutArtifactParams{Name: "r.json", Type: memory.TypeJSON, Content: []byte(`{"hits":[]}`), Capability: memory.SearchCapability}); err != nil {
		t.Fatal(err)
	}
	if evs, err = st.Events(ctx, b.ID, evs[len(evs)-1].ID, 10); err != nil || len(evs) != 1 || !strings.Contains(string(evs[0].Data), `"capability":"`+memory.SearchCapability+`"`) {
		t.Fatalf("a search result's artifact.stored event: %+v, %v", evs, err)
	}
	// neither the search result nor a report, stored last, takes a place among the header's
	// recent artifacts (memory.InHeader)
	if _, err := st.PutArtifact(ctx, b.ID, memory.PutArtifactParams{Name: "report.md", Content: []byte("# report\n"), CreatedBy: memory.ReportAuthor}); err != nil {
		t.Fatal(err)
	}
	h, err := st.Header(ctx, b.ID)
	if err != nil || !strings.Contains(string(h.JSON), `"`+short+` `+last.Name+`"`) || strings.Contains(string(h.JSON), "r.json") || strings.Contains(string(h.JSON), "report.md") {
		t.Fatalf("header %s does not name %s as %q, or names the search result r.json or the report", h.JSON, last.Ref, short+" "+last.Name)
	}
}

func testArtifacts(t *testing.T, st memory.Store) {
	ctx := context.Background()
	th := newThread(t, st, "")
	body := []byte("# Notes\nrelay keeps memory.\n")
	a, err := st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "notes.md", Content: body, CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !memory.ValidRef(a.Ref) || a.Type != memory.TypeMarkdown || a.Size != int64(len(body)) || a.Deduplicated {
		t.Fatalf("put = %+v", a)
	}
	again, err := st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "notes.md", Content: body})
	if err != nil || again.Ref != a.Ref || !again.Deduplicated {
		t.Fatalf("same bytes again = %+v, %v; want the same ref, deduplicated", again, err)
	}
	got, content, err := st.ArtifactContent(ctx, th.ID, a.Ref)
	if err != nil || string(content) != string(body) || got.Hash != a.Hash {
		t.Fatalf("content = %q, %v", content, err)
	}
	other := newThread(t, st, "")
	if _, _, err := st.ArtifactContent(ctx, other.ID, a.Ref); !memory.IsNotFound(err) {
		t.Fatalf("another thread read the artifact: err = %v", err)
	}
	list, err := st.ListArtifacts(ctx, th.ID, memory.ListArtifactsOptions{})
	if err != nil || len(list) != 1 || list[0].Ref != a.Ref {
		t.Fatalf("list = %+v, %v", list, err)
	}
}

func testEvents(t *testing.T, st memory.Store) {
	ctx := context.Background()
	th := newThread(t, st, "")
	wake, cancel := st.Subscribe(th.ID)
	defer cancel()
	ev, err := st.AppendEvent(ctx, th.ID, "test.happened", map[string]any{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatal("the subscriber was not woken by a new event")
	}
	evs, err := st.Events(ctx, th.ID, ev.ID-1, 10)
	if err != nil || len(evs) != 1 || evs[0].Type != "test.happened" || evs[0].ID != ev.ID {
		t.Fatalf("events = %+v, %v", evs, err)
	}
	all, err := st.Events(ctx, th.ID, 0, 100)
	if err != nil || len(all) < 2 || all[0].Type != memory.EventThreadCreated {
		t.Fatalf("the log does not start with %s: %+v, %v", memory.EventThreadCreated, all, err)
	}

	// seq numbers a thread's events 1, 2, 3… whatever other threads do in between, from
	// any cursor (ids are store-wide).
	other, err := st.CreateThread(ctx, memory.CreateThreadParams{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := st.AppendEvent(ctx, other.ID, "test.other", map[string]any{"n": i}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendEvent(ctx, th.ID, "test.more", map[string]any{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	all, err = st.Events(ctx, th.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range all {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d (id %d) has seq %d, want %d", i, e.ID, e.Seq, i+1)
		}
	}
	tail, err := st.Events(ctx, th.ID, all[2].ID, 2)
	if err != nil || len(tail) != 2 || tail[0].Seq != 4 || tail[1].Seq != 5 {
		t.Fatalf("events after the third: %+v, %v (want seq 4 and 5)", tail, err)
	}
	if evs, err := st.Events(ctx, other.ID, 0, 100); err != nil || len(evs) != 4 || evs[3].Seq != 4 {
		t.Fatalf("the other thread's events: %+v, %v (want seq 1-4)", evs, err)
	}
}

func testCapabilityCache(t *testing.T, st memory.Store) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := memory.CachedResult{Capability: "c", ThreadID: "t", ArtifactRef: "r1", Preview: json.RawMessage(`{"x":1}`), ExpiresAt: now.Add(time.Minute)}
	if err := st.CachePut(ctx, "k", r, now); err != nil {
		t.Fatal(err)
	}
	got, err := st.CacheGet(ctx, "k", now.Add(time.Second))
	if err != nil || got == nil || got.ArtifactRef != "r1" || string(got.Preview) != `{"x":1}` {
		t.Fatalf("CacheGet = %+v, %v", got, err)
	}
	if got.ResultSized {
		t.Fatalf("CacheGet gave a size for a result artifact that does not exist: %+v", got)
	}
	if got, err := st.CacheGet(ctx, "k", now.Add(2*time.Minute)); err != nil || got != nil {
		t.Fatalf("expired entry returned: %+v, %v", got, err)
	}
	// An entry whose result exists comes with the result's size (a hit needs it for the
	// tokens it saved); in another thread, the same ref is not that result.
	sized := newThread(t, st, "cache-sized")
	res, err := st.PutArtifact(ctx, sized.ID, memory.PutArtifactParams{Name: "result", Type: memory.TypeText, Content: []byte("twelve bytes")})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		thread, ref string
		sized       bool
	}{
		{sized.ID, res.Ref, true},
		{sized.ID, memory.Short(res.Ref), true}, // the form a handler answers with
		{sized.ID, res.Ref[:10], false},         // an old abbreviation: looked up the slow way
		{"t", res.Ref, false},
		{"t", memory.Short(res.Ref), false},
	} {
		key := fmt.Sprint("sized-", i)
		r := memory.CachedResult{Capability: "c", ThreadID: tc.thread, ArtifactRef: tc.ref, Preview: json.RawMessage(`{}`), ExpiresAt: now.Add(time.Minute)}
		if err := st.CachePut(ctx, key, r, now); err != nil {
			t.Fatal(err)
		}
		got, err := st.CacheGet(ctx, key, now.Add(time.Second))
		if err != nil || got == nil || got.ResultSized != tc.sized || (tc.sized && got.ResultSize != 12) {
			t.Fatalf("CacheGet of an entry in thread %s for result %s (12 bytes, ref %s in thread %s) = %+v, %v (want sized %v)", tc.thread, tc.ref, res.Ref, sized.ID, got, err, tc.sized)
		}
	}
	c := memory.CapabilityCall{ThreadID: "t", Capability: "c", Args: json.RawMessage(`{}`), ArtifactRef: "r1", CacheHit: true, At: now}
	if ev, err := st.RecordCall(ctx, memory.CallRecord{Call: c}); err != nil || ev.ID != 0 {
		t.Fatalf("RecordCall with no event = %+v, %v", ev, err)
	}
	calls, err := st.Calls(ctx, "t")
	if err != nil || len(calls) != 1 || !calls[0].CacheHit || !calls[0].At.Equal(now) {
		t.Fatalf("Calls = %+v, %v", calls, err)
	}

	// A whole call's record: log, cache entry, event and metrics, written together.
	th := newThread(t, st, "calls")
	if _, err := st.Header(ctx, th.ID); err != nil { // a header built before the call must not be served after it
		t.Fatal(err)
	}
	miss := memory.CapabilityCall{ThreadID: th.ID, Capability: "c", Args: json.RawMessage(`{"q":1}`), ArtifactRef: "r2", At: now}
	rec := memory.CallRecord{Call: miss, CacheKey: "k2",
		Cache:       &memory.CachedResult{Capability: "c", ThreadID: th.ID, ArtifactRef: "r2", Preview: json.RawMessage(`[2]`), ExpiresAt: now.Add(time.Minute)},
		CallEffects: memory.CallEffects{EventType: "cap.invoked", EventData: map[string]any{"artifact_ref": "r2"}, Metrics: memory.Metrics{CacheHits: 1, TokensAvoided: 7}}}
	ev, err := st.RecordCall(ctx, rec)
	if err != nil || ev.ID == 0 || ev.Type != "cap.invoked" || ev.ThreadID != th.ID {
		t.Fatalf("RecordCall = %+v, %v", ev, err)
	}
	if evs, err := st.Events(ctx, th.ID, 0, 100); err != nil || len(evs) == 0 || evs[len(evs)-1].ID != ev.ID || !strings.Contains(string(evs[len(evs)-1].Data), `"r2"`) {
		t.Fatalf("the call's event is not the thread's last: %+v, %v", evs, err)
	}
	if got, err := st.GetThread(ctx, th.ID); err != nil || got.Metrics != (memory.Metrics{CacheHits: 1, TokensAvoided: 7}) || got.LastEventID != ev.ID {
		t.Fatalf("thread after the call: %+v, %v", got, err)
	}
	if h, err := st.Header(ctx, th.ID); err != nil || !strings.Contains(string(h.JSON), `"m":{"hits":1,"saved":7}`) {
		t.Fatalf("header metrics after the call: %s, %v", h.JSON, err)
	}
	if got, err := st.CacheGet(ctx, "k2", now.Add(time.Second)); err != nil || got == nil || got.ArtifactRef != "r2" || string(got.Preview) != `[2]` {
		t.Fatalf("the call's cache entry: %+v, %v", got, err)
	}
	if calls, err := st.Calls(ctx, th.ID); err != nil || len(calls) != 1 || calls[0].ArtifactRef != "r2" || calls[0].CacheHit {
		t.Fatalf("the call's log entry: %+v, %v", calls, err)
	}

	// A thread that does not exist: not found, and nothing of the record is written.
	gone := "00000000-0000-4000-8000-000000000000"
	rec.Call.ThreadID, rec.CacheKey = gone, "k3"
	if _, err := st.RecordCall(ctx, rec); !memory.IsNotFound(err) {
		t.Fatalf("RecordCall for a missing thread: %v, want not found", err)
	}
	if got, err := st.CacheGet(ctx, "k3", now.Add(time.Second)); err != nil || got != nil {
		t.Fatalf("a refused record left its cache entry: %+v, %v", got, err)
	}
	if calls, err := st.Calls(ctx, gone); err != nil || len(calls) != 0 {
		t.Fatalf("a refused record left its log entry: %+v, %v", calls, err)
	}
}

func testHops(t *testing.T, st memory.Store) {
	ctx := context.Background()
	now := time.Now()
	for want := 1; want <= 3; want++ {
		n, err := st.ClaimHop(ctx, "t", 3, "", "m", now)
		if err != nil || n != want {
			t.Fatalf("hop %d = %d, %v", want, n, err)
		}
	}
	if _, err := st.ClaimHop(ctx, "t", 3, "", "m", now); !errors.Is(err, memory.ErrHopLimit) {
		t.Fatalf("past the limit: err = %v, want ErrHopLimit", err)
	}
	if _, err := st.ClaimHop(ctx, "u", 3, "key", "m1", now); err != nil {
		t.Fatal(err)
	}
	if resp, err := st.IdempotentResponse(ctx, "u", "key"); err != nil || resp != nil {
		t.Fatalf("pending key answered %q, %v", resp, err)
	}
	if err := st.FinishIdempotent(ctx, "u", "key", []byte(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if resp, err := st.IdempotentResponse(ctx, "u", "key"); err != nil || string(resp) != `{"ok":true}` {
		t.Fatalf("finished key answered %q, %v", resp, err)
	}
	if _, err := st.ClaimHop(ctx, "u", 3, "other", "m2", now); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseIdempotent(ctx, "u", "other"); err != nil {
		t.Fatal(err)
	}
	if n, err := st.Hops(ctx, "u"); err != nil || n != 2 {
		t.Fatalf("hops = %d, %v; a released key keeps its hop", n, err)
	}
}

func testSearch(t *testing.T, st memory.Store) {
	ctx := context.Background()
	th := newThread(t, st, "")
	other := newThread(t, st, "")
	put := func(tid, name, body string) {
		t.Helper()
		if _, err := st.PutArtifact(ctx, tid, memory.PutArtifactParams{Name: name, Content: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	scope0, err := st.SearchScope(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	put(th.ID, "deploy.txt", "Deployment checklist: run migrations, then restart the relay daemon. relay relay.")
	put(th.ID, "notes.md", "# Notes\nHello, relay keeps memory.")
	put(other.ID, "secret.md", "relay in another thread")
	if scope1, _ := st.SearchScope(ctx, th.ID); scope1 == scope0 {
		t.Fatal("the search scope did not change after an artifact was indexed")
	}
	hits, err := st.Search(ctx, th.ID, memory.SearchQuery{Query: "relay"})
	if err != nil || len(hits) != 2 {
		t.Fatalf("search relay = %+v, %v; want the two artifacts of this thread", hits, err)
	}
	if hits[0].Name != "deploy.txt" || hits[0].Score < hits[1].Score || hits[1].Score <= 0 {
		t.Fatalf("ranking: %+v; want deploy.txt first and positive scores, higher for the better match", hits)
	}
	for _, q := range []memory.SearchQuery{{Query: `"keeps memory"`}, {Query: "migr*"}, {Query: "hello", Types: []string{memory.TypeMarkdown}}} {
		if hits, err := st.Search(ctx, th.ID, q); err != nil || len(hits) != 1 {
			t.Fatalf("search %+v = %+v, %v; want one hit", q, hits, err)
		}
	}
	if hits, err := st.Search(ctx, th.ID, memory.SearchQuery{Query: "nothingmatches"}); err != nil || len(hits) != 0 {
		t.Fatalf("a miss = %+v, %v", hits, err)
	}
	var ie *memory.InvalidError
	if _, err := st.Search(ctx, th.ID, memory.SearchQuery{Query: `" " ***`}); !errors.As(err, &ie) {
		t.Fatalf("a query with no words: err = %v, want *memory.InvalidError", err)
	}
}

func testDump(t *testing.T, st memory.Store) {
	ctx := context.Background()
	th := newThread(t, st, "dumped")
	if _, err := st.PatchState(ctx, th.ID, fact(1), 0, "a"); err != nil {
		t.Fatal(err)
	}
	a, err := st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "zebra.md", Content: []byte("zebra crossing")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ClaimHop(ctx, th.ID, 5, "key-1", "msg-1", time.Unix(1700000000, 123456000).UTC()); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishIdempotent(ctx, th.ID, "key-1", []byte(`{"answer":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ClaimHop(ctx, th.ID, 5, "", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	var dump *memory.ThreadDump
	contents := map[string][]byte{}
	err = st.ExportThread(ctx, th.ID, func(d *memory.ThreadDump, content memory.Content) error {
		dump = d
		for _, ar := range d.Artifacts {
			b, err := memory.ContentBytes(content, ar.Ref, memory.MaxArtifactSize)
			if err != nil {
				return err
			}
			contents[ar.Ref] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if dump.Thread.Version != 2 || len(dump.Versions) != 2 || len(dump.Artifacts) != 1 || string(contents[a.Ref]) != "zebra crossing" {
		t.Fatalf("dump = %+v", dump)
	}
	if dump.Hops != 2 || len(dump.Messages) != 1 || dump.Messages[0].Key != "key-1" || dump.Messages[0].Status != "done" ||
		string(dump.Messages[0].Response) != `{"answer":1}` || !dump.Messages[0].ReceivedAt.Equal(time.Unix(1700000000, 123456000)) {
		t.Fatalf("dump's agent-to-agent ledger: %d hops, %+v", dump.Hops, dump.Messages)
	}
	bodies := func(ref string) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(contents[ref])), nil }
	var ee *memory.ExistsError
	if err := st.ImportThread(ctx, dump, bodies); !errors.As(err, &ee) {
		t.Fatalf("importing over itself: err = %v, want *memory.ExistsError", err)
	}
	// A copy under new ids carries the ledger (a retried message is still recognised)...
	cp := *dump
	cp.Thread.ID = uuid.NewString()
	cp.Artifacts = nil
	cp.Thread.ArtifactCount = 0
	if err := st.ImportThread(ctx, &cp, bodies); err != nil {
		t.Fatal(err)
	}
	if hops, err := st.Hops(ctx, cp.Thread.ID); err != nil || hops != 2 {
		t.Fatalf("imported hops = %d, %v; want 2", hops, err)
	}
	if resp, err := st.IdempotentResponse(ctx, cp.Thread.ID, "key-1"); err != nil || string(resp) != `{"answer":1}` {
		t.Fatalf("imported idempotency key answers %q, %v", resp, err)
	}
	// ...and a body that does not hash to its artifact's hash is refused, nothing written.
	bad := *dump
	bad.Thread.ID, bad.Hops, bad.Messages = uuid.NewString(), 0, nil
	bad.Artifacts = []memory.ArtifactRecord{dump.Artifacts[0]}
	bad.Artifacts[0].Ref = memory.NewRef(time.Now())
	bad.Artifacts[0].Hash = blob.Sum([]byte("zebra crossinG")) // a body no store has yet
	err = st.ImportThread(ctx, &bad, func(string) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("zebra crossing")), nil })
	if err == nil {
		t.Fatal("a body that does not match its hash was imported")
	}
	if _, err := st.GetThread(ctx, bad.Thread.ID); !memory.IsNotFound(err) {
		t.Fatalf("a refused import left its thread: %v", err)
	}

	// A copy under a new id with FreeName takes the next free "name (n)".
	plain := newThread(t, st, "copied")
	var pd *memory.ThreadDump
	if err := st.ExportThread(ctx, plain.ID, func(d *memory.ThreadDump, _ memory.Content) error { pd = d; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"copied (2)", "copied (3)"} {
		cp := *pd
		cp.Thread.ID, cp.FreeName = uuid.NewString(), true
		if err := st.ImportThread(ctx, &cp, func(string) (io.ReadCloser, error) { return nil, errors.New("no artifacts") }); err != nil {
			t.Fatal(err)
		}
		if got, err := st.GetThread(ctx, cp.Thread.ID); err != nil || got.Name != want || cp.Thread.Name != want {
			t.Fatalf("copy named %q / %q (%v), want %q", got.Name, cp.Thread.Name, err, want)
		}
	}
}

func isCode(code string) func(error) bool {
	return func(err error) bool {
		var ie *memory.InvalidError
		return errors.As(err, &ie) && ie.Code == code
	}
}

func testPatchRefusals(t *testing.T, st memory.Store) {
	ctx := context.Background()
	th := newThread(t, st, "")
	if _, err := st.PatchState(ctx, th.ID, fact(1), 1, ""); err != nil {
		t.Fatal(err)
	}
	before, _ := st.State(ctx, th.ID, 0)
	cases := []struct {
		name, patch string
		expected    int
		check       func(error) bool
	}{
		{"stale version", `[]`, 1, func(err error) bool {
			var ce *memory.ConflictError
			return errors.As(err, &ce) && ce.Current == 2 && ce.Expected == 1
		}},
		{"not an array", `{"op":"add"}`, 0, isCode("invalid_patch")},
		{"bad pointer", `[{"op":"remove","path":"/facts/7"}]`, 0, isCode("invalid_patch")},
		{"unknown op", `[{"op":"frob","path":"/facts"}]`, 0, isCode("invalid_patch")},
		{"failed test", `[{"op":"test","path":"/facts/0/id","value":"nope"}]`, 0, isCode("test_failed")},
		{"schema broken", `[{"op":"replace","path":"/facts","value":3}]`, 0, isCode("invalid_state")},
		{"read-only member", `[{"op":"replace","path":"/thread_id","value":"x"}]`, 0, func(err error) bool { return isCode("invalid_patch")(err) || isCode("invalid_state")(err) }},
		{"second op fails", `[{"op":"add","path":"/facts/-","value":{"id":"f9","key":"k","value":1}},{"op":"remove","path":"/nope"}]`, 0, isCode("invalid_patch")},
		{"bad thread id", `[]`, 0, isCode("bad_request")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := th.ID
			if c.name == "bad thread id" {
				id = "../etc"
			}
			_, err := st.PatchState(ctx, id, []byte(c.patch), c.expected, "")
			if err == nil || !c.check(err) {
				t.Fatalf("got %T %v", err, err)
			}
			after, _ := st.State(ctx, th.ID, 0)
			if after.Version != before.Version || string(after.Doc) != string(before.Doc) {
				t.Fatalf("a refused patch changed the state: v%d -> v%d", before.Version, after.Version)
			}
		})
	}
	var ie *memory.InvalidError
	_, err := st.PatchState(ctx, th.ID, []byte(`[{"op":"add","path":"/facts/-","value":{"id":"a","key":"k","value":1}},{"op":"remove","path":"/nope"}]`), 0, "")
	if !errors.As(err, &ie) || ie.Op != 1 || ie.Path != "/nope" {
		t.Errorf("error does not name op 1 and its path: %#v", err)
	}
	if _, err := st.PatchState(ctx, "6ba7b810-9dad-11d1-80b4-00c04fd430c8", []byte(`[]`), 0, ""); !memory.IsNotFound(err) {
		t.Errorf("unknown thread: %v", err)
	}
}

func testStateSizeCap(t *testing.T, st memory.Store) {
	ctx := context.Background()
	th := newThread(t, st, "")
	big := strings.Repeat("x", memory.MaxStateBytes)
	_, err := st.PatchState(ctx, th.ID, []byte(`[{"op":"add","path":"/facts/-","value":{"id":"f","key":"k","value":"`+big+`"}}]`), 1, "")
	var tl *memory.TooLargeError
	if !errors.As(err, &tl) || tl.Limit != memory.MaxStateBytes {
		t.Fatalf("oversized state: %v", err)
	}
	if s, _ := st.State(ctx, th.ID, 0); s.Version != 1 {
		t.Errorf("refused patch made v%d", s.Version)
	}
}

// testVersionsAcrossSnapshots writes enough versions to cross several snapshots, so old
// versions are rebuilt from a snapshot plus patches, and reads every one back.
func testVersionsAcrossSnapshots(t *testing.T, st memory.Store) {
	ctx := context.Background()
	th := newThread(t, st, "")
	const n = 150
	docs := map[int]string{}
	s, _ := st.State(ctx, th.ID, 0)
	docs[1] = string(s.Doc)
	for i := 2; i <= n; i++ {
		res, err := st.PatchState(ctx, th.ID, fact(i), i-1, "test")
		if err != nil || res.Version != i || res.StateRef != memory.StateRef(i) {
			t.Fatalf("patch %d: %+v %v", i, res, err)
		}
		s, err := st.State(ctx, th.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		docs[i] = string(s.Doc)
	}
	for v := n; v >= 1; v-- {
		s, err := st.State(ctx, th.ID, v)
		if err != nil || string(s.Doc) != docs[v] || s.Version != v {
			t.Fatalf("version %d reads differently now (%v)", v, err)
		}
	}
	if _, err := st.State(ctx, th.ID, n+1); !memory.IsNotFound(err) {
		t.Fatalf("a version after the latest: %v", err)
	}
	vs, err := st.Versions(ctx, th.ID, n-10, 100)
	if err != nil || len(vs) != 10 || vs[0].Version != n-9 || string(vs[0].Patch) != string(fact(n-9)) || vs[0].Author != "test" {
		t.Fatalf("versions after %d: %d %v", n-10, len(vs), err)
	}
}

func testMetricsAndEventData(t *testing.T, st memory.Store) {
	ctx := context.Background()
	th := newThread(t, st, "")
	if _, err := st.AppendEvent(ctx, th.ID, "x", json.RawMessage(`{bad`)); !isCode("bad_request")(err) {
		t.Errorf("bad event data: %v", err)
	}
	ev, err := st.AppendEvent(ctx, th.ID, "cap.invoked", map[string]any{"capability": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := st.Events(ctx, th.ID, ev.ID-1, 10); err != nil || len(evs) != 1 || string(evs[0].Data) != `{"capability":"x"}` {
		t.Fatalf("event data: %+v %v", evs, err)
	}
	if err := st.AddMetrics(ctx, th.ID, memory.Metrics{CacheHits: 2, TokensAvoided: 500}); err != nil {
		t.Fatal(err)
	}
	h, err := st.Header(ctx, th.ID)
	if err != nil || !strings.Contains(string(h.JSON), `"m":{"hits":2,"saved":500}`) {
		t.Errorf("header metrics not updated: %s %v", h.JSON, err)
	}
	if got, _ := st.GetThread(ctx, th.ID); got.Metrics != (memory.Metrics{CacheHits: 2, TokensAvoided: 500}) {
		t.Errorf("thread metrics %+v", got.Metrics)
	}
	if _, err := st.Events(ctx, "6ba7b810-9dad-11d1-80b4-00c04fd430c8", 0, 10); !memory.IsNotFound(err) {
		t.Errorf("events of unknown thread: %v", err)
	}
	if err := st.AddMetrics(ctx, "6ba7b810-9dad-11d1-80b4-00c04fd430c8", memory.Metrics{CacheHits: 1}); !memory.IsNotFound(err) {
		t.Errorf("metrics of unknown thread: %v", err)
	}
}
