package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/blob"
)

func stamp(t time.Time) string { return memory.Time{Time: t.UTC()}.String() }

// ExportThread implements memory.Dumper from one repeatable-read transaction (a consistent
// snapshot while other daemons keep writing).
func (s *Store) ExportThread(ctx context.Context, threadID string, fn func(d *memory.ThreadDump, content memory.Content) error) error {
	if err := memory.CheckThreadID(threadID); err != nil {
		return err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer tx.Rollback(context.Background())
	d := &memory.ThreadDump{}
	th := &d.Thread
	var created, updated time.Time
	err = tx.QueryRow(ctx, `SELECT id, name, created_at, updated_at, version, artifact_count, event_count, cache_hits, tokens_avoided FROM threads WHERE id = $1`, threadID).
		Scan(&th.ID, &th.Name, &created, &updated, &th.Version, &th.ArtifactCount, &th.EventCount, &th.CacheHits, &th.TokensAvoided)
	if errors.Is(err, pgx.ErrNoRows) {
		return &memory.NotFoundError{What: "thread", ID: threadID}
	}
	if err != nil {
		return fmt.Errorf("export: read thread: %w", err)
	}
	th.CreatedAt, th.UpdatedAt = stamp(created), stamp(updated)
	each := func(what, q string, scan func(pgx.Rows) error) error {
		rows, err := tx.Query(ctx, q, threadID)
		if err != nil {
			return fmt.Errorf("export %s: %w", what, err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return fmt.Errorf("export %s: %w", what, err)
			}
		}
		return rows.Err()
	}
	if err := each("versions", `SELECT version, patch, author, created_at, event_id FROM state_versions WHERE thread_id = $1 ORDER BY version`, func(r pgx.Rows) error {
		var v memory.VersionRecord
		var p []byte
		var at time.Time
		err := r.Scan(&v.Version, &p, &v.Author, &at, &v.EventID)
		v.Patch, v.CreatedAt = p, stamp(at)
		d.Versions = append(d.Versions, v)
		return err
	}); err != nil {
		return err
	}
	if err := each("snapshots", `SELECT version, doc FROM state_snapshots WHERE thread_id = $1 ORDER BY version`, func(r pgx.Rows) error {
		var sn memory.SnapshotRecord
		var doc []byte
		err := r.Scan(&sn.Version, &doc)
		sn.Doc = doc
		d.Snapshots = append(d.Snapshots, sn)
		return err
	}); err != nil {
		return err
	}
	if err := each("artifacts", `SELECT ref, type, mime, name, size, hash, preview_text, preview_lines, preview_truncated, created_by, capability, source_refs, created_at FROM artifacts WHERE thread_id = $1 ORDER BY ref`, func(r pgx.Rows) error {
		var a memory.ArtifactRecord
		var at time.Time
		err := r.Scan(&a.Ref, &a.Type, &a.Mime, &a.Name, &a.Size, &a.Hash, &a.PreviewText, &a.PreviewLines, &a.PreviewTruncated, &a.CreatedBy, &a.Capability, &a.SourceRefs, &at)
		a.CreatedAt = stamp(at)
		d.Artifacts = append(d.Artifacts, a)
		return err
	}); err != nil {
		return err
	}
	if err := each("events", `SELECT id, type, at, data FROM events WHERE thread_id = $1 ORDER BY id`, func(r pgx.Rows) error {
		var e memory.EventRecord
		var data []byte
		var at time.Time
		err := r.Scan(&e.ID, &e.Type, &at, &data)
		e.Data, e.At = data, stamp(at)
		d.Events = append(d.Events, e)
		return err
	}); err != nil {
		return err
	}
	if d.Calls, err = calls(ctx, tx, threadID); err != nil {
		return fmt.Errorf("export capability calls: %w", err)
	}
	if err := exportLedger(ctx, tx, d); err != nil {
		return err
	}
	hashes := map[string]string{}
	for _, a := range d.Artifacts {
		hashes[a.Ref] = a.Hash
	}
	content := func(ref string) (io.ReadCloser, error) {
		h, ok := hashes[ref]
		if !ok {
			return nil, &memory.NotFoundError{What: "artifact", ID: ref}
		}
		r, err := s.openBody(ctx, tx, h)
		if err != nil {
			return nil, fmt.Errorf("export artifact %s: %w", ref, err)
		}
		return r, nil
	}
	return fn(d, content)
}

// ImportThread implements memory.Dumper in one transaction. With a bucket, every body is
// streamed to it first (content-addressed: a failed import leaves only objects the next
// put of the same bytes reuses, or the bucket's garbage collection removes), each pinned
// so a sweep running meanwhile cannot take it; without one, each body is held once, as
// it is written into the transaction.
func (s *Store) ImportThread(ctx context.Context, d *memory.ThreadDump, content memory.Content) error {
	id := d.Thread.ID
	if err := memory.CheckThreadID(id); err != nil {
		return err
	}
	var pins []int64
	defer func() { s.unpin(pins...) }()
	if s.blobs != nil {
		for _, a := range d.Artifacts {
			pin, err := s.pin(ctx, a.Hash)
			if err != nil {
				return fmt.Errorf("import artifact %s: %w", a.Ref, err)
			}
			pins = append(pins, pin)
			if err := s.putBody(ctx, a, content); err != nil {
				return err
			}
		}
	}
	return s.tx(ctx, "import thread "+id, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM threads WHERE id = $1`, id).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return &memory.ExistsError{What: "thread", ID: id}
		}
		for _, a := range d.Artifacts {
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM artifacts WHERE ref = $1`, a.Ref).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return &memory.ExistsError{What: "artifact", ID: a.Ref}
			}
		}
		if d.FreeName && d.Thread.Name != "" {
			name, err := freeName(ctx, tx, d.Thread.Name)
			if err != nil {
				return err
			}
			d.Thread.Name = name
		}
		th := d.Thread
		snapV := 1
		for _, sn := range d.Snapshots {
			snapV = max(snapV, sn.Version)
		}
		// The thread row first (events reference it); its counters are set after the events.
		if _, err := tx.Exec(ctx, `INSERT INTO threads (id, name, created_at, updated_at, version, snap_version, cache_hits, tokens_avoided) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			id, th.Name, memory.ParseTime(th.CreatedAt).Time, memory.ParseTime(th.UpdatedAt).Time, th.Version, snapV, th.CacheHits, th.TokensAvoided); err != nil {
			return fmt.Errorf("import thread: %w", err)
		}
		// Events get new ids (ids are store-wide); remember the mapping for state_versions.event_id.
		evMap := map[int64]int64{}
		var lastID int64
		for _, e := range d.Events {
			var eid int64
			if err := tx.QueryRow(ctx, `INSERT INTO events (thread_id, type, at, data) VALUES ($1, $2, $3, $4) RETURNING id`,
				id, e.Type, memory.ParseTime(e.At).Time, []byte(e.Data)).Scan(&eid); err != nil {
				return fmt.Errorf("import event: %w", err)
			}
			evMap[e.ID], lastID = eid, eid
		}
		if _, err := tx.Exec(ctx, `UPDATE threads SET artifact_count = $1, event_count = $2, last_event_id = $3 WHERE id = $4`,
			len(d.Artifacts), len(d.Events), lastID, id); err != nil {
			return fmt.Errorf("import thread: %w", err)
		}
		for _, v := range d.Versions {
			if _, err := tx.Exec(ctx, `INSERT INTO state_versions (thread_id, version, patch, author, created_at, event_id) VALUES ($1, $2, $3, $4, $5, $6)`,
				id, v.Version, []byte(v.Patch), v.Author, memory.ParseTime(v.CreatedAt).Time, evMap[v.EventID]); err != nil {
				return fmt.Errorf("import state v%d: %w", v.Version, err)
			}
		}
		for _, sn := range d.Snapshots {
			if _, err := tx.Exec(ctx, `INSERT INTO state_snapshots (thread_id, version, doc) VALUES ($1, $2, $3)`, id, sn.Version, []byte(sn.Doc)); err != nil {
				return fmt.Errorf("import state snapshot v%d: %w", sn.Version, err)
			}
		}
		for _, a := range d.Artifacts {
			var body []byte
			var err error
			if s.blobs == nil {
				if body, err = memory.ContentBytes(content, a.Ref, memory.MaxArtifactSize); err != nil {
					return err
				}
				if blob.Sum(body) != a.Hash || int64(len(body)) != a.Size {
					return memory.BadRequest("content of artifact %s does not match its hash %s and size %d", a.Ref, a.Hash, a.Size)
				}
			} else if a.Capability != memory.SearchCapability && a.Type != memory.TypeBinary {
				if body, err = indexPrefix(content, a.Ref); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO artifacts (`+artifactCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
				a.Ref, id, a.Type, a.Mime, a.Name, a.Size, a.Hash, a.PreviewText, a.PreviewLines, a.PreviewTruncated, a.CreatedBy, a.Capability, a.SourceRefs, memory.ParseTime(a.CreatedAt).Time); err != nil {
				return fmt.Errorf("import artifact %s: %w", a.Ref, err)
			}
			if s.blobs == nil {
				if _, err := tx.Exec(ctx, `INSERT INTO blobs (hash, content) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, a.Hash, body); err != nil {
					return fmt.Errorf("import artifact %s: %w", a.Ref, err)
				}
			}
			if a.Capability != memory.SearchCapability {
				art := memory.Artifact{Ref: a.Ref, ThreadID: id, Type: a.Type, Name: a.Name}
				if err := index(ctx, tx, art, body); err != nil {
					return fmt.Errorf("index artifact %s: %w", a.Ref, err)
				}
			}
		}
		for _, c := range d.Calls {
			c.ThreadID = id
			if _, err := tx.Exec(ctx,
				`INSERT INTO cap_calls (thread_id, capability, args, artifact_ref, cache_hit, preview_bytes, duration_ms, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
				c.ThreadID, c.Capability, []byte(c.Args), c.ArtifactRef, c.CacheHit, c.PreviewBytes, c.DurationMS, c.At); err != nil {
				return fmt.Errorf("import capability call: %w", err)
			}
		}
		return importLedger(ctx, tx, id, d)
	})
}

// putBody streams artifact a's body from content into the bucket; the bucket store checks
// the bytes against the hash as they go, and the size is checked here.
func (s *Store) putBody(ctx context.Context, a memory.ArtifactRecord, content memory.Content) error {
	r, err := content(a.Ref)
	if err != nil {
		return err
	}
	defer r.Close()
	if !blob.ValidSum(a.Hash) || a.Size < 0 {
		return memory.BadRequest("artifact %s has no valid hash and size", a.Ref)
	}
	if _, err := s.blobs.Put(ctx, a.Hash, a.Size, r); err != nil {
		return fmt.Errorf("import artifact %s: %w", a.Ref, err)
	}
	return nil
}

// indexPrefix reads the start of a body that search indexes (at most maxIndexedBytes).
func indexPrefix(content memory.Content, ref string) ([]byte, error) {
	r, err := content(ref)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxIndexedBytes))
	if err != nil {
		return nil, fmt.Errorf("read artifact %s to index it: %w", ref, err)
	}
	return b, nil
}

// exportLedger reads the thread's agent-to-agent hops and idempotency keys into d.
func exportLedger(ctx context.Context, tx pgx.Tx, d *memory.ThreadDump) error {
	err := tx.QueryRow(ctx, `SELECT hops FROM a2a_hops WHERE thread_id = $1`, d.Thread.ID).Scan(&d.Hops)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("export hops: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT idempotency_key, msg_id, status, response, received_at FROM a2a_messages WHERE thread_id = $1 ORDER BY idempotency_key`, d.Thread.ID)
	if err != nil {
		return fmt.Errorf("export idempotency keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var m memory.A2AMessageRecord
		if err := rows.Scan(&m.Key, &m.MsgID, &m.Status, &m.Response, &m.ReceivedAt); err != nil {
			return fmt.Errorf("export idempotency keys: %w", err)
		}
		m.ReceivedAt = m.ReceivedAt.UTC()
		d.Messages = append(d.Messages, m)
	}
	return rows.Err()
}

// importLedger writes d's agent-to-agent hops and idempotency keys for thread id.
func importLedger(ctx context.Context, tx pgx.Tx, id string, d *memory.ThreadDump) error {
	if d.Hops > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO a2a_hops (thread_id, hops) VALUES ($1, $2)`, id, d.Hops); err != nil {
			return fmt.Errorf("import hops: %w", err)
		}
	}
	for _, m := range d.Messages {
		if _, err := tx.Exec(ctx, `INSERT INTO a2a_messages (thread_id, idempotency_key, msg_id, status, response, received_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			id, m.Key, m.MsgID, m.Status, m.Response, m.ReceivedAt); err != nil {
			return fmt.Errorf("import idempotency key: %w", err)
		}
	}
	return nil
}

// freeName is memory.FreeName under a transaction lock on the name's base, so concurrent
// creators and imports of one name (through any daemon) cannot both take one.
func freeName(ctx context.Context, tx pgx.Tx, name string) (string, error) {
	if err := lockName(ctx, tx, name); err != nil {
		return "", err
	}
	return memory.FreeName(name, func(cand string) (bool, error) {
		var taken int
		err := tx.QueryRow(ctx, `SELECT count(*) FROM threads WHERE name = $1`, cand).Scan(&taken)
		return taken > 0, err
	})
}

// lockName takes the transaction lock every writer of a thread name takes: on the name
// without its " (n)" suffix, so "demo" and "demo (2)" share one.
func lockName(ctx context.Context, tx pgx.Tx, name string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('relay thread name ' || $1))`, memory.NameBase(name)); err != nil {
		return fmt.Errorf("lock thread name: %w", err)
	}
	return nil
}
