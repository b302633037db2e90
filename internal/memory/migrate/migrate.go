// Package migrate copies every thread of one memory store into another (SQLite to
// PostgreSQL, or back) and proves the copy exact: each thread is written in one transaction
// by the destination's ImportThread, then both sides are read back and their digests
// compared. A thread already in the destination is verified instead of copied, so an
// interrupted migration is resumed by running it again.
package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/relaydev/relay/internal/memory"
)

// Report counts what a migration copied and verified.
type Report struct {
	Threads   int `json:"threads"`
	Copied    int `json:"copied"`
	Skipped   int `json:"already_there"`
	Versions  int `json:"versions"`
	Snapshots int `json:"snapshots"`
	Artifacts int `json:"artifacts"`
	Events    int `json:"events"`
	Calls     int `json:"calls"`
	// Keys are the agent-to-agent idempotency keys and Hops the hops used, summed over
	// the threads.
	Keys  int   `json:"idempotency_keys"`
	Hops  int   `json:"hops"`
	Bytes int64 `json:"artifact_bytes"`
	// Digest is the sha256 over every thread's digest, in the source's listing order;
	// equal on both sides when the copy is exact.
	Digest string `json:"sha256"`
}

// MismatchError says a thread differs between the stores after copying.
type MismatchError struct {
	ThreadID, What string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("thread %s differs between the stores (%s)", e.ThreadID, e.What)
}

// maxThreads bounds one listing; a store with more threads than this is refused rather than
// half migrated.
const maxThreads = 10_000_000

// Copy migrates every thread of from into to. progress, when set, is called after each
// thread with the running report.
func Copy(ctx context.Context, from, to memory.Store, progress func(Report, string, bool)) (Report, error) {
	var rep Report
	threads, err := from.ListThreads(ctx, maxThreads)
	if err != nil {
		return rep, fmt.Errorf("list source threads: %w", err)
	}
	all := sha256.New()
	for _, th := range threads {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		copied := false
		_, err := to.GetThread(ctx, th.ID)
		switch {
		case memory.IsNotFound(err):
			if err := copyThread(ctx, from, to, th.ID); err != nil {
				return rep, err
			}
			copied = true
		case err != nil:
			return rep, fmt.Errorf("look up thread %s in the destination: %w", th.ID, err)
		}
		src, counts, err := Digest(ctx, from, th.ID)
		if err != nil {
			return rep, fmt.Errorf("read back thread %s from the source: %w", th.ID, err)
		}
		dst, _, err := Digest(ctx, to, th.ID)
		if err != nil {
			return rep, fmt.Errorf("read back thread %s from the destination: %w", th.ID, err)
		}
		if src != dst {
			what := "its records or content hash differently"
			if !copied {
				what += "; it was already in the destination before this run: remove it there or leave it out"
			}
			return rep, &MismatchError{ThreadID: th.ID, What: what}
		}
		all.Write([]byte(src))
		rep.Threads++
		if copied {
			rep.Copied++
		} else {
			rep.Skipped++
		}
		rep.Versions += counts.Versions
		rep.Snapshots += counts.Snapshots
		rep.Artifacts += counts.Artifacts
		rep.Events += counts.Events
		rep.Calls += counts.Calls
		rep.Keys += counts.Keys
		rep.Hops += counts.Hops
		rep.Bytes += counts.Bytes
		if progress != nil {
			progress(rep, th.ID, copied)
		}
	}
	rep.Digest = hex.EncodeToString(all.Sum(nil))
	return rep, nil
}

func copyThread(ctx context.Context, from, to memory.Store, id string) error {
	return from.ExportThread(ctx, id, func(d *memory.ThreadDump, content memory.Content) error {
		// Bodies stream from the source as the destination writes them, one at a time.
		bodies := func(ref string) (io.ReadCloser, error) {
			r, err := content(ref)
			if err != nil {
				return nil, fmt.Errorf("read artifact %s of thread %s: %w", ref, id, err)
			}
			return r, nil
		}
		if err := to.ImportThread(ctx, d, bodies); err != nil {
			var ee *memory.ExistsError
			if errors.As(err, &ee) {
				return fmt.Errorf("copy thread %s: %w (an artifact ref is taken by another thread in the destination)", id, err)
			}
			return fmt.Errorf("copy thread %s: %w", id, err)
		}
		return nil
	})
}

// Counts are the records of one thread.
type Counts struct {
	Versions, Snapshots, Artifacts, Events, Calls, Keys, Hops int
	Bytes                                                     int64
}

// Digest reads a thread from st and returns the sha256 of everything it holds that a copy
// must keep: the thread row, every version's patch, author and time, every snapshot, every
// artifact's metadata and content (checked against its hash), the events' types, times and
// data in order, the capability calls, and the agent-to-agent ledger (hops used, and every
// idempotency key with its status and answer). Event ids are store-wide and renumbered by
// an import, so they are not part of it.
func Digest(ctx context.Context, st memory.Store, id string) (string, Counts, error) {
	var sum string
	var c Counts
	err := st.ExportThread(ctx, id, func(d *memory.ThreadDump, content memory.Content) error {
		h := sha256.New()
		th := d.Thread
		field(h, "thread", th.ID, th.Name, th.CreatedAt, th.UpdatedAt)
		num(h, int64(th.Version), int64(th.ArtifactCount), int64(th.EventCount), th.CacheHits, th.TokensAvoided)
		for _, v := range d.Versions {
			field(h, "version", string(v.Patch), v.Author, v.CreatedAt)
			num(h, int64(v.Version))
		}
		for _, s := range d.Snapshots {
			field(h, "snapshot", string(s.Doc))
			num(h, int64(s.Version))
		}
		for _, a := range d.Artifacts {
			field(h, "artifact", a.Ref, a.Type, a.Mime, a.Name, a.Hash, a.PreviewText, a.CreatedBy, a.Capability, a.SourceRefs, a.CreatedAt)
			num(h, a.Size, int64(a.PreviewLines), b2i(a.PreviewTruncated))
			r, err := content(a.Ref)
			if err != nil {
				return err
			}
			bh := sha256.New()
			n, err := io.Copy(bh, r) // streamed: a body is never whole in memory
			r.Close()
			if err != nil || hex.EncodeToString(bh.Sum(nil)) != a.Hash || n != a.Size {
				return &MismatchError{ThreadID: id, What: fmt.Sprintf("artifact %s content does not match its hash (%v)", a.Ref, err)}
			}
			c.Bytes += a.Size
		}
		for _, e := range d.Events {
			field(h, "event", e.Type, e.At, string(e.Data))
		}
		for _, cl := range d.Calls {
			// PostgreSQL keeps microseconds; the digest compares what both stores can hold.
			field(h, "call", cl.Capability, string(cl.Args), cl.ArtifactRef, cl.At.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano))
			num(h, b2i(cl.CacheHit), int64(cl.PreviewBytes), cl.DurationMS)
		}
		num(h, int64(d.Hops))
		for _, m := range d.Messages {
			field(h, "a2a", m.Key, m.MsgID, m.Status, string(m.Response), m.ReceivedAt.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano))
		}
		c.Versions, c.Snapshots, c.Artifacts, c.Events, c.Calls, c.Keys = len(d.Versions), len(d.Snapshots), len(d.Artifacts), len(d.Events), len(d.Calls), len(d.Messages)
		c.Hops = d.Hops
		sum = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	return sum, c, err
}

// field writes length-prefixed strings, so no two different records hash alike.
func field(h hash.Hash, ss ...string) {
	var n [8]byte
	for _, s := range ss {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
}

func num(h hash.Hash, xs ...int64) {
	var n [8]byte
	for _, x := range xs {
		binary.BigEndian.PutUint64(n[:], uint64(x))
		h.Write(n[:])
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
