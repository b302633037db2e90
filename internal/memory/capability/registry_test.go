package capability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/memory/sqlite"
	"github.com/relaydev/relay/plugin"
)

type fakeArtifacts struct {
	mu   sync.Mutex
	n    int
	puts []plugin.NewArtifact
}

func (f *fakeArtifacts) PutArtifact(_ context.Context, a plugin.NewArtifact) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.puts = append(f.puts, a)
	return fmt.Sprintf("ref%d", f.n), nil
}

const searchSchema = `{"type":"object","required":["query"],"additionalProperties":false,
 "properties":{"query":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1,"maximum":50}}}`

func newTestRegistry(t *testing.T, store Store, calls *atomic.Int64, ttl time.Duration) *Registry {
	t.Helper()
	arts := &fakeArtifacts{}
	r := New(store, func(string, string) plugin.ArtifactStore { return arts })
	err := r.Register(plugin.Capability{Name: "test.echo", ArgsSchema: json.RawMessage(searchSchema), Cacheable: ttl > 0, CacheTTL: ttl},
		func(ctx context.Context, req *plugin.InvokeRequest) (*plugin.InvokeResult, error) {
			calls.Add(1)
			time.Sleep(5 * time.Millisecond)
			ref, err := req.Artifacts.PutArtifact(ctx, plugin.NewArtifact{Name: "out.json", Type: "json", Content: req.Args})
			if err != nil {
				return nil, err
			}
			return plugin.Result(ref, map[string]any{"args": json.RawMessage(req.Args)})
		})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestValidationNamesPath(t *testing.T) {
	var calls atomic.Int64
	r := newTestRegistry(t, NewMemStore(), &calls, time.Minute)
	tests := []struct {
		args string
		want string
	}{
		{`{"query":"x","limit":500}`, "/limit: must be <= 50"},
		{`{"query":"x","limit":0}`, "/limit: must be >= 1"},
		{`{"query":"x","limit":"5"}`, "/limit: must be integer, got string"},
		{`{}`, `/: missing required property "query"`},
		{`{"query":"x","bogus":1}`, `unknown property "bogus"`},
		{`{"query":`, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			_, err := r.Invoke(context.Background(), "t1", "test.echo", json.RawMessage(tt.args))
			var ae *ArgsError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *ArgsError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %q, want it to contain %q", err, tt.want)
			}
		})
	}
	if calls.Load() != 0 {
		t.Fatalf("handler ran %d times on invalid args", calls.Load())
	}
}

func TestUnknownCapability(t *testing.T) {
	var calls atomic.Int64
	r := newTestRegistry(t, NewMemStore(), &calls, time.Minute)
	_, err := r.Invoke(context.Background(), "t1", "nope.x", nil)
	var nf *NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "test.echo") {
		t.Fatalf("err = %v", err)
	}
}

func TestRegisterRejects(t *testing.T) {
	r := New(NewMemStore(), nil)
	h := func(context.Context, *plugin.InvokeRequest) (*plugin.InvokeResult, error) { return nil, nil }
	for _, c := range []plugin.Capability{
		{Name: "Bad Name"},
		{Name: "a.b", Cacheable: true},
		{Name: "a.b", ArgsSchema: json.RawMessage(`{"type":`)},
		{Name: "a.b", ArgsSchema: json.RawMessage(`{"type":"nonsense"}`)},
	} {
		if err := r.Register(c, h); err == nil {
			t.Errorf("Register(%+v) succeeded", c)
		}
	}
	if err := r.Register(plugin.Capability{Name: "a.b"}, h); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(plugin.Capability{Name: "a.b"}, h); err == nil {
		t.Error("duplicate registration succeeded")
	}
}

func testCache(t *testing.T, store Store) {
	var calls atomic.Int64
	r := newTestRegistry(t, store, &calls, time.Minute)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	ctx := context.Background()

	a, err := r.Invoke(ctx, "t1", "test.echo", json.RawMessage(`{"query":"x","limit":5}`))
	if err != nil || a.CacheHit {
		t.Fatalf("first: %+v %v", a, err)
	}
	// Same args in another key order and spacing normalize to the same key.
	b, err := r.Invoke(ctx, "t1", "test.echo", json.RawMessage(`{ "limit":5, "query":"x" }`))
	if err != nil || !b.CacheHit || b.ArtifactRef != a.ArtifactRef || string(b.Preview) != string(a.Preview) {
		t.Fatalf("second: %+v %v", b, err)
	}
	// Another thread is another scope.
	c, err := r.Invoke(ctx, "t2", "test.echo", json.RawMessage(`{"query":"x","limit":5}`))
	if err != nil || c.CacheHit {
		t.Fatalf("other thread: %+v %v", c, err)
	}
	now = now.Add(61 * time.Second)
	d, err := r.Invoke(ctx, "t1", "test.echo", json.RawMessage(`{"query":"x","limit":5}`))
	if err != nil || d.CacheHit {
		t.Fatalf("after ttl: %+v %v", d, err)
	}
	if got := calls.Load(); got != 3 {
		t.Fatalf("handler ran %d times, want 3", got)
	}
	if got := r.SessionCacheHits("t1"); got != 1 {
		t.Fatalf("session hits t1 = %d, want 1", got)
	}
	log, err := store.Calls(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 3 || !log[1].CacheHit || log[0].CacheHit || log[2].CacheHit {
		t.Fatalf("call log = %+v", log)
	}
}

func TestCacheMem(t *testing.T) { testCache(t, NewMemStore()) }

func TestCacheSQLite(t *testing.T) {
	st, err := sqlite.OpenSQLite(t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	testCache(t, st)
}

func TestConcurrentDuplicatesRunOnce(t *testing.T) {
	var calls atomic.Int64
	r := newTestRegistry(t, NewMemStore(), &calls, time.Minute)
	var wg sync.WaitGroup
	refs := make([]string, 16)
	for i := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inv, err := r.Invoke(context.Background(), "t1", "test.echo", json.RawMessage(`{"query":"same"}`))
			if err != nil {
				t.Error(err)
				return
			}
			refs[i] = inv.ArtifactRef
		}()
	}
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", calls.Load())
	}
	for _, ref := range refs {
		if ref != refs[0] {
			t.Fatalf("refs differ: %v", refs)
		}
	}
	if r.SessionCacheHits("t1") != 15 {
		t.Fatalf("session hits = %d, want 15", r.SessionCacheHits("t1"))
	}
}

func TestNotCacheableRunsEveryTime(t *testing.T) {
	var calls atomic.Int64
	r := newTestRegistry(t, NewMemStore(), &calls, 0)
	for range 3 {
		if _, err := r.Invoke(context.Background(), "t1", "test.echo", json.RawMessage(`{"query":"q"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if calls.Load() != 3 {
		t.Fatalf("calls = %d", calls.Load())
	}
}

func TestBadResultRefused(t *testing.T) {
	r := New(NewMemStore(), nil)
	big := strings.Repeat("x", plugin.MaxPreviewBytes)
	_ = r.Register(plugin.Capability{Name: "bad.noref"}, func(context.Context, *plugin.InvokeRequest) (*plugin.InvokeResult, error) {
		return &plugin.InvokeResult{Preview: json.RawMessage(`{}`)}, nil
	})
	_ = r.Register(plugin.Capability{Name: "bad.big"}, func(context.Context, *plugin.InvokeRequest) (*plugin.InvokeResult, error) {
		return plugin.Result("r1", big)
	})
	for _, n := range []string{"bad.noref", "bad.big"} {
		_, err := r.Invoke(context.Background(), "t", n, nil)
		var re *ResultError
		if !errors.As(err, &re) {
			t.Errorf("%s: err = %v", n, err)
		}
	}
}

func FuzzValidateArgs(f *testing.F) {
	sch, err := compileSchema("fuzz.cap", json.RawMessage(searchSchema))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{`{"query":"x"}`, `{"limit":99}`, `[]`, `"x"`, `{"query":"\u00e9","limit":1.5}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseArgs(data)
		if err != nil {
			return
		}
		err = validateArgs("fuzz.cap", sch, v)
		var ae *ArgsError
		if err != nil && (!errors.As(err, &ae) || len(ae.Problems) == 0) {
			t.Fatalf("unexpected error shape: %v", err)
		}
	})
}

func TestCacheScopeChangeMisses(t *testing.T) {
	var calls atomic.Int64
	var scope atomic.Int64
	r := New(NewMemStore(), func(string, string) plugin.ArtifactStore { return &fakeArtifacts{} })
	err := r.Register(plugin.Capability{Name: "test.scoped", ArgsSchema: json.RawMessage(searchSchema), Cacheable: true, CacheTTL: time.Hour,
		CacheScope: func(context.Context, string) (string, error) { return fmt.Sprint(scope.Load()), nil }},
		func(ctx context.Context, req *plugin.InvokeRequest) (*plugin.InvokeResult, error) {
			calls.Add(1)
			ref, _ := req.Artifacts.PutArtifact(ctx, plugin.NewArtifact{Name: "out.json", Type: "json", Content: req.Args})
			return plugin.Result(ref, map[string]any{"n": calls.Load()})
		})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	args := json.RawMessage(`{"query":"x"}`)
	var cached []bool
	for _, s := range []int64{0, 0, 1, 1} {
		scope.Store(s)
		inv, err := r.Invoke(ctx, "t1", "test.scoped", args)
		if err != nil {
			t.Fatal(err)
		}
		cached = append(cached, inv.CacheHit)
	}
	if want := []bool{false, true, false, true}; fmt.Sprint(cached) != fmt.Sprint(want) || calls.Load() != 2 {
		t.Fatalf("cache hits %v (handler ran %d times), want %v and 2 runs", cached, calls.Load(), want)
	}
}

func TestDefaultsShareCacheEntry(t *testing.T) {
	var calls atomic.Int64
	r := New(NewMemStore(), func(string, string) plugin.ArtifactStore { return &fakeArtifacts{} })
	schema := `{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","default":10}}}`
	err := r.Register(plugin.Capability{Name: "test.defaults", ArgsSchema: json.RawMessage(schema), Cacheable: true, CacheTTL: time.Hour},
		func(ctx context.Context, req *plugin.InvokeRequest) (*plugin.InvokeResult, error) {
			calls.Add(1)
			ref, _ := req.Artifacts.PutArtifact(ctx, plugin.NewArtifact{Name: "out.json", Type: "json", Content: req.Args})
			return plugin.Result(ref, map[string]any{"args": json.RawMessage(req.Args)})
		})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var hits []bool
	for _, a := range []string{`{"query":"x"}`, `{"limit":10,"query":"x"}`, `{"query":"x","limit":5}`} {
		inv, err := r.Invoke(ctx, "t1", "test.defaults", json.RawMessage(a))
		if err != nil {
			t.Fatal(err)
		}
		hits = append(hits, inv.CacheHit)
	}
	if fmt.Sprint(hits) != "[false true false]" || calls.Load() != 2 {
		t.Fatalf("cache hits %v with %d runs, want [false true false] and 2 runs", hits, calls.Load())
	}
}
