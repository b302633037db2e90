package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/memory"

	"github.com/relaydev/relay/internal/memory/statedoc"
)

// The cached state skips encoding when sizeBound proves the size cap holds, so the bound
// must never be below the real size, whatever the values' escaping.
func TestSizeBoundCoversEncodedSize(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	alphabet := []string{"a", "<", "\"", "\\", "\n", "\u0001", "é", "€", "😀", "~", "/", " "}
	randText := func() string {
		var b strings.Builder
		for n := rng.Intn(40); n > 0; n-- {
			b.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		return b.String()
	}
	doc := statedoc.NewAt("3f1c2a9e-6b7d-4e5f-8a9b-0c1d2e3f4a5b", time.Unix(0, 0))
	st, err := statedoc.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	size := len(doc)
	for v := 2; v < 400; v++ {
		var ops []map[string]any
		for n := 1 + rng.Intn(3); n > 0; n-- {
			ops = append(ops, map[string]any{"op": "add", "path": "/facts/-", "value": map[string]any{
				"id": fmt.Sprintf("f%d-%d", v, n), "key": "k" + randText(), "value": randText()}})
		}
		if v%5 == 0 {
			ops = append(ops, map[string]any{"op": "remove", "path": "/facts/0"})
		}
		patch, _ := json.Marshal(ops)
		next, err := st.Patch(patch, v, time.Unix(int64(v)*1000, int64(v)))
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		bound := sizeBound(size, patch, len(ops))
		got, _ := next.JSON()
		if bound < len(got) {
			t.Fatalf("v%d: bound %d below encoded size %d for patch %s", v, bound, len(got), patch)
		}
		st, size = next, bound // chain bounds as the store does between snapshots
		if v%64 == 0 {
			size = len(got)
		}
	}
	if sizeBound(10, []byte(`[{"op":"copy","from":"/facts","path":"/open_questions"}]`), 1) >= 0 {
		t.Error("a copy must have no bound (it can duplicate anything)")
	}
}

// A copy can double the document without the patch being large; the cap must still hold.
func TestStateSizeCapCopy(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	th, _ := s.CreateThread(ctx, memory.CreateThreadParams{})
	big := strings.Repeat("x", memory.MaxStateBytes*2/3)
	if _, err := s.PatchState(ctx, th.ID, []byte(`[{"op":"add","path":"/facts/-","value":{"id":"f","key":"k","value":"`+big+`"}}]`), 1, ""); err != nil {
		t.Fatal(err)
	}
	_, err := s.PatchState(ctx, th.ID, []byte(`[{"op":"copy","from":"/facts/0/value","path":"/facts/0/key"}]`), 2, "")
	var tl *memory.TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("copy past the cap: %v", err)
	}
	if st, _ := s.State(ctx, th.ID, 0); st.Version != 2 {
		t.Errorf("refused copy made v%d", st.Version)
	}
}

// Many small patches after a large one: the bound grows until it crosses the cap, then the
// exact size decides, so a state just under the cap still accepts patches.
func TestStateNearCapStillPatchable(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	th, _ := s.CreateThread(ctx, memory.CreateThreadParams{})
	big := strings.Repeat("x", memory.MaxStateBytes-1500) // the bound crosses the cap after a few patches
	if _, err := s.PatchState(ctx, th.ID, []byte(`[{"op":"add","path":"/facts/-","value":{"id":"f","key":"k","value":"`+big+`"}}]`), 1, ""); err != nil {
		t.Fatal(err)
	}
	for v := 2; v < 8; v++ {
		p := fmt.Sprintf(`[{"op":"replace","path":"/facts/0/key","value":"k%d"}]`, v)
		if _, err := s.PatchState(ctx, th.ID, []byte(p), v, ""); err != nil {
			t.Fatalf("v%d: %v", v+1, err)
		}
	}
	s.Forget(th.ID)
	st, err := s.State(ctx, th.ID, 0)
	if err != nil || st.Version != 8 || !strings.Contains(string(st.Doc), `"k7"`) {
		t.Fatalf("after reload: v%d %v", st.Version, err)
	}
}

// The state cache evicts the least recently used thread, not an arbitrary one.
func TestStateCacheEvictsLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	var ids []string
	for i := 0; i < 3; i++ {
		th, err := s.CreateThread(ctx, memory.CreateThreadParams{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, th.ID)
	}
	s.cmu.Lock()
	s.cacheLimit = s.cacheBytes + 10 // room for the three, not a fourth
	s.cmu.Unlock()
	if _, err := s.Header(ctx, ids[0]); err != nil { // the oldest becomes the most recently used
		t.Fatal(err)
	}
	if _, err := s.CreateThread(ctx, memory.CreateThreadParams{}); err != nil {
		t.Fatal(err)
	}
	s.cmu.RLock()
	_, first := s.cache[ids[0]]
	_, second := s.cache[ids[1]]
	s.cmu.RUnlock()
	if !first || second {
		t.Errorf("after a fourth thread: first cached %v (want true), second cached %v (want false)", first, second)
	}
	if st, err := s.State(ctx, ids[1], 0); err != nil || st.Version != 1 {
		t.Errorf("evicted thread reloads: v%d %v", st.Version, err)
	}
}

// The mirror repair that runs in the background at open reads states of threads whose
// state.json is stale; those reads are not uses and must not change which thread is evicted
// (they did, so a repair racing with the first requests made eviction order arbitrary).
func TestMirrorRepairDoesNotReorderCache(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	s := openTest(t, home)
	<-s.repairDone // the open-time repair (of an empty store) is over; run one by hand below
	var ids []string
	for i := 0; i < 3; i++ {
		th, err := s.CreateThread(ctx, memory.CreateThreadParams{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, th.ID)
	}
	s.cmu.Lock()
	s.cacheLimit = s.cacheBytes + 10
	s.cmu.Unlock()
	if _, err := s.Header(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	s.mirror.flush()
	for _, id := range ids { // every state.json stale: the repair reads all three states
		if err := os.WriteFile(filepath.Join(s.mirror.threadDir(id), "state.json"), []byte(`{"version":0}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.repairMirror(ctx)
	if _, err := s.CreateThread(ctx, memory.CreateThreadParams{}); err != nil {
		t.Fatal(err)
	}
	s.cmu.RLock()
	_, first := s.cache[ids[0]]
	_, second := s.cache[ids[1]]
	s.cmu.RUnlock()
	if !first || second {
		t.Errorf("after a repair and a fourth thread: first cached %v (want true), second cached %v (want false)", first, second)
	}
}

// TestCapabilityCacheBound: a put into a full capability cache drops the soonest-expiring
// entries past MaxCacheEntries and keeps the rest, the new one among them.
func TestCapabilityCacheBound(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	now := time.Now()
	// A full cache, written directly (10,000 puts would take seconds): entry i expires
	// i seconds after the soonest.
	err := st.WriteTx(ctx, func(tx Tx) error {
		for i := range memory.MaxCacheEntries {
			if _, err := tx.ExecContext(ctx, `INSERT INTO cap_cache(key, capability, thread_id, artifact_ref, preview, expires_at) VALUES(?,?,?,?,?,?)`,
				fmt.Sprint("k", i), "c", "t", "r", []byte(`{}`), now.Add(time.Hour+time.Duration(i)*time.Second).UnixNano()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := st.CachePut(ctx, fmt.Sprint("new", i), memory.CachedResult{Capability: "c", ThreadID: "t", ArtifactRef: "r", Preview: json.RawMessage(`{}`),
			ExpiresAt: now.Add(2 * time.Hour)}, now); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := st.r.QueryRow(`SELECT count(*) FROM cap_cache`).Scan(&n); err != nil || n != memory.MaxCacheEntries {
		t.Fatalf("%d entries after 3 puts into a full cache (%v), want %d", n, err, memory.MaxCacheEntries)
	}
	for key, kept := range map[string]bool{"k0": false, "k1": false, "k2": false, "k3": true, "new0": true, "new2": true} {
		got, err := st.CacheGet(ctx, key, now)
		if err != nil || (got != nil) != kept {
			t.Errorf("entry %s: %+v, %v; want kept %v", key, got, err, kept)
		}
	}
}
