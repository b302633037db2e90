package server

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/tokens"
)

// TestOneSavingsFigure: the header's m.saved, GET /threads/{id} and /stats state the same
// tokens avoided, negative for a thread of small artifacts and positive once a large one
// is stored by ref. The header leaves a negative figure out (an agent cannot use it).
func TestOneSavingsFigure(t *testing.T) {
	srv, st := capServer(t)
	ctx := context.Background()
	th, err := st.CreateThread(ctx, memory.CreateThreadParams{Name: "savings"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(wantSign int) {
		t.Helper()
		_, stats, raw := call(t, srv, "GET", "/threads/"+th.ID+"/stats", nil)
		avoided := int64(stats["tokens_avoided"].(float64))
		_, _, hb := call(t, srv, "GET", "/threads/"+th.ID+"/state/header", nil)
		var h struct {
			M struct {
				Saved int64 `json:"saved"`
			} `json:"m"`
		}
		if err := json.Unmarshal(hb, &h); err != nil {
			t.Fatal(err)
		}
		_, thr, _ := call(t, srv, "GET", "/threads/"+th.ID, nil)
		tm := int64(thr["metrics"].(map[string]any)["tokens_avoided"].(float64))
		inHeader := avoided
		if avoided <= 0 {
			inHeader = 0 // left out
		}
		if h.M.Saved != inHeader || tm != avoided {
			t.Fatalf("header saved %d, thread %d, stats %d (%s): one figure expected", h.M.Saved, tm, avoided, raw)
		}
		if wantSign < 0 && avoided >= 0 || wantSign > 0 && avoided <= 0 {
			t.Fatalf("tokens avoided %d, want sign %d", avoided, wantSign)
		}
	}
	if _, err := st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "a.md", Content: []byte("# a small note\n")}); err != nil {
		t.Fatal(err)
	}
	check(-1)
	big := strings.Repeat("The handler reads the session cookie twice and the middleware should own it. ", 400)
	if _, err := st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "big.md", Content: []byte(big)}); err != nil {
		t.Fatal(err)
	}
	check(1)
}

// TestHeaderAnswersLastSavingsFigure: the header never counts tokens on the request (that
// took seconds for a thread of a few hundred artifacts): before any figure is computed it
// leaves m.saved out, and after the thread changes it answers the last figure (or the new
// one, once the background has computed it) while GET /threads/{id} computes the new one.
func TestHeaderAnswersLastSavingsFigure(t *testing.T) {
	srv, st := capServer(t)
	ctx := context.Background()
	th, err := st.CreateThread(ctx, memory.CreateThreadParams{Name: "lazy"})
	if err != nil {
		t.Fatal(err)
	}
	put := func(name string, n int) {
		t.Helper()
		big := strings.Repeat("The handler reads the session cookie twice and the middleware should own it. ", n)
		if _, err := st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: name, Content: []byte(big)}); err != nil {
			t.Fatal(err)
		}
	}
	headerSaved := func() (int64, bool) {
		t.Helper()
		_, _, hb := call(t, srv, "GET", "/threads/"+th.ID+"/state/header", nil)
		var h struct {
			M map[string]int64 `json:"m"`
		}
		if err := json.Unmarshal(hb, &h); err != nil {
			t.Fatal(err)
		}
		n, ok := h.M["saved"]
		return n, ok
	}
	put("a.md", 400)
	if n, ok := headerSaved(); ok {
		t.Fatalf("header says saved %d before any figure was computed", n)
	}
	_, stats, _ := call(t, srv, "GET", "/threads/"+th.ID+"/stats", nil)
	first := int64(stats["tokens_avoided"].(float64))
	if n, ok := headerSaved(); !ok || n != first {
		t.Fatalf("header saved %d (%v) after stats computed %d", n, ok, first)
	}
	put("b.md", 800)
	stale, _ := headerSaved()
	_, thr, _ := call(t, srv, "GET", "/threads/"+th.ID, nil)
	now := int64(thr["metrics"].(map[string]any)["tokens_avoided"].(float64))
	if now <= first || stale != first && stale != now {
		t.Fatalf("after a second artifact: header %d, thread %d, first figure %d", stale, now, first)
	}
}

// The token vocabulary the savings figure loads is resident for good: it raises the soft
// memory limit the daemon set instead of eating its headroom, and leaves a user's
// GOMEMLIMIT (no limit set by the daemon) alone.
func TestReserveMemory(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetMemoryLimit(prev)
		limitMu.Lock()
		limitSet = false
		limitMu.Unlock()
	})
	reserveMemory(1 << 20)
	if got := debug.SetMemoryLimit(-1); got != prev {
		t.Fatalf("limit %d after a reservation with no daemon limit, want it unchanged (%d)", got, prev)
	}
	LimitMemory()
	reserveMemory(tokens.Resident(tokens.Default))
	if got, want := debug.SetMemoryLimit(-1), int64(daemonMemoryLimit)+tokens.Resident(tokens.Default); got != want {
		t.Fatalf("limit %d after reserving the vocabulary, want %d", got, want)
	}
}
