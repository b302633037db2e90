package blobgc_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/memory/blobgc"
)

// index references a fixed set of bodies and pins none.
type index struct {
	id   string
	used map[string]bool
}

func (ix index) StoreID(context.Context) (string, error) { return ix.id, nil }

func (ix index) Unreferenced(_ context.Context, sums []string) ([]string, error) {
	var out []string
	for _, s := range sums {
		if !ix.used[s] {
			out = append(out, s)
		}
	}
	return out, nil
}

func (ix index) Collect(ctx context.Context, sums []string, del func([]string) error) ([]string, error) {
	unused, _ := ix.Unreferenced(ctx, sums)
	if len(unused) == 0 {
		return nil, nil
	}
	return unused, del(unused)
}

// TestGraceAndSharedLocations: orphans within the grace period are kept, older ones are
// deleted, referenced ones never; a location another store marked is not swept at all.
func TestGraceAndSharedLocations(t *testing.T) {
	ctx := context.Background()
	bs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var sums []string
	for _, b := range []string{"referenced", "orphan one", "orphan two"} {
		if _, err := bs.Put(ctx, blob.Sum([]byte(b)), int64(len(b)), bytes.NewReader([]byte(b))); err != nil {
			t.Fatal(err)
		}
		sums = append(sums, blob.Sum([]byte(b)))
	}
	ix := index{id: "store-a", used: map[string]bool{sums[0]: true}}

	rep, err := blobgc.Sweep(ctx, bs, ix, blobgc.Options{})
	if err != nil || rep.Objects != 3 || rep.Orphans != 2 || rep.Young != 2 || rep.Deleted != 0 {
		t.Fatalf("within the grace period: %+v %v", rep, err)
	}
	later := func() time.Time { return time.Now().Add(blobgc.DefaultGrace + time.Hour) }
	rep, err = blobgc.Sweep(ctx, bs, ix, blobgc.Options{Now: later, DryRun: true})
	if err != nil || rep.Deleted != 0 || rep.Orphans != 2 || rep.Young != 0 {
		t.Fatalf("dry run past the grace period: %+v %v", rep, err)
	}

	// Another store marks the location: no sweep deletes anything; a dry run reports it.
	if _, err := bs.Mark(ctx, "store-b"); err != nil {
		t.Fatal(err)
	}
	rep, err = blobgc.Sweep(ctx, bs, ix, blobgc.Options{Now: later})
	if !errors.Is(err, blobgc.ErrShared) || rep.Deleted != 0 || !slices.Equal(rep.OtherStores, []string{"store-b"}) {
		t.Fatalf("shared location: %+v %v", rep, err)
	}
	if _, err := bs.Stat(ctx, sums[1]); err != nil {
		t.Fatalf("a sweep of a shared location deleted a body: %v", err)
	}

	// Alone again: past the grace period the orphans go, the referenced body stays.
	bs2, _ := blob.NewDir(t.TempDir())
	for _, b := range []string{"referenced", "orphan one"} {
		bs2.Put(ctx, blob.Sum([]byte(b)), int64(len(b)), bytes.NewReader([]byte(b)))
	}
	rep, err = blobgc.Sweep(ctx, bs2, ix, blobgc.Options{Now: later})
	if err != nil || rep.Deleted != 1 || rep.DeletedBytes != int64(len("orphan one")) {
		t.Fatalf("past the grace period: %+v %v", rep, err)
	}
	if _, err := bs2.Stat(ctx, sums[0]); err != nil {
		t.Fatalf("the referenced body is gone: %v", err)
	}
	if _, err := bs2.Stat(ctx, sums[1]); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("the orphan is still there: %v", err)
	}
}
