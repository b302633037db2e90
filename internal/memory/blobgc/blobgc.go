// Package blobgc removes artifact bodies that no artifact references from a bucket: the
// objects left by a put whose metadata never committed (a crash, a refused write, a
// failed import) and by anything that ever deletes artifacts. It is mark and sweep with
// a grace period: list the bucket, ask the store which of the listed bodies it
// references, and delete the others that are older than the grace period.
//
// A put in flight on any daemon is safe. Every put first pins its body's hash in the
// store (a row in the database, under a lock the sweep also takes), then uploads or reuses
// the object, then commits the artifact and drops the pin in one transaction. The sweep
// takes the same locks for a batch of hashes, checks that no artifact and no pin names
// them, and deletes the objects before it releases the locks. So a body is either seen
// as used, or deleted before the put pins it, and that put then finds it missing and
// uploads it again.
package blobgc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/relaydev/relay/internal/memory/blob"
)

// Index is the store's side of a sweep.
type Index interface {
	// StoreID names the store; every daemon of a shared store gives the same id.
	StoreID(ctx context.Context) (string, error)
	// Unreferenced returns the sums, among sums, that no artifact references, without
	// locking (for reports).
	Unreferenced(ctx context.Context, sums []string) ([]string, error)
	// Collect locks sums against new pins, calls del with those that no artifact
	// references and no live pin holds, and releases the locks after del returns; it
	// returns the sums passed to del.
	Collect(ctx context.Context, sums []string, del func([]string) error) ([]string, error)
}

// DefaultGrace is how old an unreferenced body must be before a sweep deletes it: far
// longer than any put takes, so even a writer that does not pin (a daemon of an older
// relay during an upgrade) has committed its artifact long before.
const DefaultGrace = 24 * time.Hour

// Options tune a sweep.
type Options struct {
	// Grace: unreferenced bodies modified within it are kept (0: DefaultGrace; negative:
	// none, for tests).
	Grace time.Duration
	// DryRun only reports; nothing is deleted and nothing is locked.
	DryRun bool
	// Now overrides the clock (tests).
	Now func() time.Time
}

// Report says what a sweep found and did.
type Report struct {
	Location string `json:"location"`
	DryRun   bool   `json:"dry_run"`
	Grace    string `json:"grace"`
	// Objects and Bytes are every body listed.
	Objects int   `json:"objects"`
	Bytes   int64 `json:"bytes"`
	// Orphans are the bodies no artifact references; Young of them are within the grace
	// period and were kept.
	Orphans      int   `json:"orphans"`
	OrphanBytes  int64 `json:"orphan_bytes"`
	Young        int   `json:"young"`
	YoungBytes   int64 `json:"young_bytes"`
	Deleted      int   `json:"deleted"`
	DeletedBytes int64 `json:"deleted_bytes"`
	// Pinned are old orphans kept because a put in flight holds them.
	Pinned int `json:"pinned"`
	// OtherStores are the ids of other relay stores that keep bodies in the same
	// location; a sweep then deletes nothing (it would take their bodies for orphans).
	OtherStores []string `json:"other_stores,omitempty"`
}

// ErrNoBucket says the store keeps bodies in its database: there is nothing to sweep.
var ErrNoBucket = errors.New("artifact bodies are kept in the store's database, not in a bucket; there is nothing to collect")

// ErrBusy says another daemon of the store is sweeping its bucket right now.
var ErrBusy = errors.New("another daemon of this store is sweeping the bucket right now; try again when it is done")

// ErrShared is returned by a sweep (not a dry run) of a location other stores use too.
var ErrShared = errors.New("another relay store keeps artifact bodies in the same location")

// batch is how many listed bodies are checked and locked at once.
const batch = 500

// Sweep lists bs and deletes the bodies ix does not reference that are older than the
// grace period (only reports them with DryRun).
func Sweep(ctx context.Context, bs blob.Collectable, ix Index, opt Options) (Report, error) {
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	grace := opt.Grace
	switch {
	case grace == 0:
		grace = DefaultGrace
	case grace < 0:
		grace = 0
	}
	rep := Report{Location: bs.String(), DryRun: opt.DryRun, Grace: grace.String()}
	id, err := ix.StoreID(ctx)
	if err != nil {
		return rep, fmt.Errorf("read the store id: %w", err)
	}
	ids, err := bs.Mark(ctx, id)
	if err != nil {
		return rep, err
	}
	for _, other := range ids {
		if other != id {
			rep.OtherStores = append(rep.OtherStores, other)
		}
	}
	shared := len(rep.OtherStores) > 0
	cutoff := now().Add(-grace)
	var page []blob.Object
	flush := func() error {
		if len(page) == 0 {
			return nil
		}
		defer func() { page = page[:0] }()
		sums := make([]string, len(page))
		size := make(map[string]int64, len(page))
		for i, o := range page {
			sums[i], size[o.Sum] = o.Sum, o.Size
			rep.Objects++
			rep.Bytes += o.Size
		}
		orphans, err := ix.Unreferenced(ctx, sums)
		if err != nil {
			return err
		}
		var old []string
		for _, o := range page {
			if !slices.Contains(orphans, o.Sum) {
				continue
			}
			rep.Orphans++
			rep.OrphanBytes += o.Size
			if o.Modified.After(cutoff) {
				rep.Young++
				rep.YoungBytes += o.Size
				continue
			}
			old = append(old, o.Sum)
		}
		if opt.DryRun || shared || len(old) == 0 {
			return nil
		}
		deleted, err := ix.Collect(ctx, old, func(sums []string) error { return bs.DeleteMany(ctx, sums) })
		if err != nil {
			return err
		}
		rep.Deleted += len(deleted)
		for _, s := range deleted {
			rep.DeletedBytes += size[s]
		}
		rep.Pinned += len(old) - len(deleted)
		return nil
	}
	err = bs.List(ctx, func(o blob.Object) error {
		page = append(page, o)
		if len(page) < batch {
			return nil
		}
		return flush()
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return rep, err
	}
	if shared && !opt.DryRun {
		return rep, fmt.Errorf("%w (%d store(s) besides this one marked %s/stores/): nothing was deleted; give each store its own prefix, or remove the marker of a store that is gone", ErrShared, len(rep.OtherStores), rep.Location)
	}
	return rep, nil
}
