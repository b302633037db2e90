package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/relaydev/relay/internal/memory"
)

// TestReleaseMemory: while the index trails the puts the store frees nothing and says so;
// once it has caught up it releases its caches, and works as before, also with writes and
// reads running beside releases.
func TestReleaseMemory(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	tid := newThread(t, st)
	tx, err := st.xw.BeginTx(ctx, nil) // hold the indexer: its one connection
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`UPDATE progress SET done = done`); err != nil {
		t.Fatal(err)
	}
	put(t, st, tid, "alpha.md", "markdown", "the word alpha")
	if done, err := st.ReleaseMemory(ctx); done || err != nil {
		t.Fatalf("release with the index behind: done %v, err %v; want false, nil", done, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: "alpha"}); err != nil || len(hits) != 1 {
		t.Fatalf("search alpha: %+v %v", hits, err)
	}
	if done, err := st.ReleaseMemory(ctx); !done || err != nil {
		t.Fatalf("release once idle: done %v, err %v; want true, nil", done, err)
	}

	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, 3*n)
	wg.Go(func() {
		for i := range n {
			if _, err := st.PutArtifact(ctx, tid, memory.PutArtifactParams{Name: fmt.Sprintf("n%d.md", i), Type: "markdown", Content: fmt.Appendf(nil, "note %d bravo", i)}); err != nil {
				errs <- err
			}
			patch := fmt.Appendf(nil, `[{"op":"add","path":"/facts/-","value":{"id":"f%d","key":"k%d","value":%d}}]`, i, i, i)
			if _, err := st.PatchState(ctx, tid, patch, 0, "t"); err != nil {
				errs <- err
			}
			if _, err := st.Search(ctx, tid, memory.SearchQuery{Query: "bravo"}); err != nil {
				errs <- err
			}
		}
	})
	for range n {
		if _, err := st.ReleaseMemory(ctx); err != nil {
			t.Errorf("release beside writes: %v", err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("beside releases: %v", err)
	}
	state, err := st.State(ctx, tid, 0)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Facts []struct{ Value int }
	}
	if err := json.Unmarshal(state.Doc, &doc); err != nil || len(doc.Facts) != n || doc.Facts[n-1].Value != n-1 {
		t.Fatalf("state after releases: %s %v", state.Doc, err)
	}
	hits, err := st.Search(ctx, tid, memory.SearchQuery{Query: "bravo", Limit: 100})
	if err != nil || len(hits) != n {
		t.Fatalf("search after releases: %d hits, %v; want %d", len(hits), err, n)
	}
	if done, err := st.ReleaseMemory(ctx); !done || err != nil {
		t.Fatalf("release after the work: done %v, err %v", done, err)
	}
}
