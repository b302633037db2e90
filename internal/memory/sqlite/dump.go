package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/relaydev/relay/internal/memory"
)

// ExportThread implements memory.Dumper from one read transaction (a consistent snapshot).
func (s *SQLite) ExportThread(ctx context.Context, threadID string, fn func(d *memory.ThreadDump, content memory.Content) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer tx.Rollback()
	d := &memory.ThreadDump{}
	th := &d.Thread
	err = tx.QueryRowContext(ctx, `SELECT id, name, created_at, updated_at, version, artifact_count, event_count, cache_hits, tokens_avoided FROM threads WHERE id = ?`, threadID).
		Scan(&th.ID, &th.Name, &th.CreatedAt, &th.UpdatedAt, &th.Version, &th.ArtifactCount, &th.EventCount, &th.CacheHits, &th.TokensAvoided)
	if errors.Is(err, sql.ErrNoRows) {
		return &memory.NotFoundError{What: "thread", ID: threadID}
	}
	if err != nil {
		return fmt.Errorf("export: read thread: %w", err)
	}
	each := func(what, q string, scan func(*sql.Rows) error) error {
		rows, err := tx.QueryContext(ctx, q, threadID)
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
	if err := each("versions", `SELECT version, patch, author, created_at, event_id FROM state_versions WHERE thread_id = ? ORDER BY version`, func(r *sql.Rows) error {
		var v memory.VersionRecord
		var p []byte
		err := r.Scan(&v.Version, &p, &v.Author, &v.CreatedAt, &v.EventID)
		v.Patch = p
		d.Versions = append(d.Versions, v)
		return err
	}); err != nil {
		return err
	}
	if err := each("snapshots", `SELECT version, doc FROM state_snapshots WHERE thread_id = ? ORDER BY version`, func(r *sql.Rows) error {
		var sn memory.SnapshotRecord
		var doc []byte
		err := r.Scan(&sn.Version, &doc)
		sn.Doc = doc
		d.Snapshots = append(d.Snapshots, sn)
		return err
	}); err != nil {
		return err
	}
	if err := each("artifacts", `SELECT ref, type, mime, name, size, hash, preview_text, preview_lines, preview_truncated, created_by, capability, source_refs, created_at FROM artifacts WHERE thread_id = ? ORDER BY ref`, func(r *sql.Rows) error {
		var a memory.ArtifactRecord
		err := r.Scan(&a.Ref, &a.Type, &a.Mime, &a.Name, &a.Size, &a.Hash, &a.PreviewText, &a.PreviewLines, &a.PreviewTruncated, &a.CreatedBy, &a.Capability, &a.SourceRefs, &a.CreatedAt)
		d.Artifacts = append(d.Artifacts, a)
		return err
	}); err != nil {
		return err
	}
	if err := each("events", `SELECT id, type, at, data FROM events WHERE thread_id = ? ORDER BY id`, func(r *sql.Rows) error {
		var e memory.EventRecord
		var data []byte
		err := r.Scan(&e.ID, &e.Type, &e.At, &data)
		e.Data = data
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
	hashes := make(map[string]string, len(d.Artifacts))
	for _, a := range d.Artifacts {
		hashes[a.Ref] = a.Hash
	}
	content := func(ref string) (io.ReadCloser, error) {
		h, ok := hashes[ref]
		if !ok {
			return nil, &memory.NotFoundError{What: "artifact", ID: ref}
		}
		var b []byte
		var enc int
		if err := tx.QueryRowContext(ctx, `SELECT content, enc FROM artifact_content WHERE ref = ?`, ref).Scan(&b, &enc); err != nil {
			return nil, fmt.Errorf("export artifact %s: %w", ref, err)
		}
		r, err := s.openContent(ctx, h, enc, b)
		if err != nil {
			return nil, fmt.Errorf("export artifact %s: %w", ref, err)
		}
		return r, nil
	}
	return fn(d, content)
}

// ImportThread implements memory.Dumper in one write transaction.
func (s *SQLite) ImportThread(ctx context.Context, d *memory.ThreadDump, content memory.Content) error {
	id := d.Thread.ID
	if err := memory.CheckThreadID(id); err != nil {
		return err
	}
	var texts map[string][]byte // with a bucket: the bodies are there, this is their index text
	if s.blobs != nil {
		var unpin func()
		var err error
		if texts, unpin, err = s.importBodies(ctx, d, content); err != nil {
			return err
		}
		defer unpin()
	}
	err := s.WriteTx(ctx, func(tx Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM threads WHERE id = ?`, id).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return &memory.ExistsError{What: "thread", ID: id}
		}
		for _, a := range d.Artifacts {
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM artifacts WHERE ref = ?`, a.Ref).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return &memory.ExistsError{What: "artifact", ID: a.Ref}
			}
		}
		// Events get new ids (ids are store-wide); remember the mapping for state_versions.event_id.
		evMap := map[int64]int64{}
		var lastID int64
		for _, e := range d.Events {
			var eid int64
			if err := tx.QueryRowContext(ctx, `INSERT INTO events(thread_id, type, at, data) VALUES (?,?,?,?) RETURNING id`,
				id, e.Type, e.At, []byte(e.Data)).Scan(&eid); err != nil {
				return fmt.Errorf("import event: %w", err)
			}
			evMap[e.ID], lastID = eid, eid
		}
		if d.FreeName && d.Thread.Name != "" {
			name, err := freeName(ctx, tx, d.Thread.Name)
			if err != nil {
				return err
			}
			d.Thread.Name = name
		}
		th := d.Thread
		if _, err := tx.ExecContext(ctx, `INSERT INTO threads(id, name, created_at, updated_at, version, artifact_count, event_count, last_event_id, cache_hits, tokens_avoided) VALUES (?,?,?,?,?,?,?,?,?,?)`,
			id, th.Name, th.CreatedAt, th.UpdatedAt, th.Version, len(d.Artifacts), len(d.Events), lastID, th.CacheHits, th.TokensAvoided); err != nil {
			return fmt.Errorf("import thread: %w", err)
		}
		for _, v := range d.Versions {
			if _, err := tx.ExecContext(ctx, `INSERT INTO state_versions(thread_id, version, patch, author, created_at, event_id) VALUES (?,?,?,?,?,?)`,
				id, v.Version, []byte(v.Patch), v.Author, v.CreatedAt, evMap[v.EventID]); err != nil {
				return fmt.Errorf("import state v%d: %w", v.Version, err)
			}
		}
		for _, sn := range d.Snapshots {
			if _, err := tx.ExecContext(ctx, `INSERT INTO state_snapshots(thread_id, version, doc) VALUES (?,?,?)`, id, sn.Version, []byte(sn.Doc)); err != nil {
				return fmt.Errorf("import state snapshot v%d: %w", sn.Version, err)
			}
		}
		for _, a := range d.Artifacts {
			enc, stored, release := encBucket, texts[a.Ref], func() {}
			if texts == nil {
				body, err := memory.ContentBytes(content, a.Ref, memory.MaxArtifactSize)
				if err != nil {
					return err
				}
				if sha256.Sum256(body) != hashOf(a.Hash) || int64(len(body)) != a.Size {
					return memory.BadRequest("content of artifact %s does not match its hash %s and size %d", a.Ref, a.Hash, a.Size)
				}
				enc, stored, release = encodeContent(body)
			}
			if stored == nil {
				stored = []byte{} // the column is NOT NULL
			}
			// The indexer (indexer.go) adds the artifacts to the search index after the commit.
			if _, err := tx.ExecContext(ctx, sqlInsertArtifact,
				a.Ref, id, a.Type, a.Mime, a.Name, a.Size, a.Hash, a.PreviewText, a.PreviewLines, a.PreviewTruncated, a.CreatedBy, a.Capability, a.SourceRefs, a.CreatedAt,
				ftsRowidFor(a.Capability)); err != nil {
				return fmt.Errorf("import artifact %s: %w", a.Ref, err)
			}
			_, err := tx.ExecContext(ctx, sqlInsertContent, a.Ref, stored, enc)
			release()
			if err != nil {
				return fmt.Errorf("import artifact %s: %w", a.Ref, err)
			}
		}
		for _, c := range d.Calls {
			c.ThreadID = id
			if err := s.insertCall(ctx, tx, c); err != nil {
				return fmt.Errorf("import capability call: %w", err)
			}
		}
		return importLedger(ctx, tx, id, d)
	})
	if err != nil {
		return err
	}
	s.Forget(id)
	s.idx.forget(id)
	s.idx.wake()
	return nil
}

// freeName is memory.FreeName in the import's write transaction, so two imports cannot
// both take one name.
func freeName(ctx context.Context, tx Tx, name string) (string, error) {
	return memory.FreeName(name, func(cand string) (bool, error) {
		var taken int
		err := tx.QueryRowContext(ctx, `SELECT count(*) FROM threads WHERE name = ?`, cand).Scan(&taken)
		return taken > 0, err
	})
}

// hashOf decodes a hex sha256 (zero for anything else, which then matches no content).
func hashOf(h string) (sum [32]byte) {
	if b, err := hex.DecodeString(h); err == nil && len(b) == len(sum) {
		copy(sum[:], b)
	}
	return sum
}

// exportLedger reads the thread's agent-to-agent hops and idempotency keys into d.
func exportLedger(ctx context.Context, tx Tx, d *memory.ThreadDump) error {
	err := tx.QueryRowContext(ctx, `SELECT hops FROM a2a_hops WHERE thread_id = ?`, d.Thread.ID).Scan(&d.Hops)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("export hops: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT idempotency_key, msg_id, status, response, received_at FROM a2a_messages WHERE thread_id = ? ORDER BY idempotency_key`, d.Thread.ID)
	if err != nil {
		return fmt.Errorf("export idempotency keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var m memory.A2AMessageRecord
		var at int64
		if err := rows.Scan(&m.Key, &m.MsgID, &m.Status, &m.Response, &at); err != nil {
			return fmt.Errorf("export idempotency keys: %w", err)
		}
		m.ReceivedAt = time.Unix(0, at).UTC()
		d.Messages = append(d.Messages, m)
	}
	return rows.Err()
}

// importLedger writes d's agent-to-agent hops and idempotency keys for thread id.
func importLedger(ctx context.Context, tx Tx, id string, d *memory.ThreadDump) error {
	if d.Hops > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO a2a_hops(thread_id, hops) VALUES (?, ?)`, id, d.Hops); err != nil {
			return fmt.Errorf("import hops: %w", err)
		}
	}
	for _, m := range d.Messages {
		if _, err := tx.ExecContext(ctx, `INSERT INTO a2a_messages(thread_id, idempotency_key, msg_id, status, response, received_at) VALUES (?,?,?,?,?,?)`,
			id, m.Key, m.MsgID, m.Status, m.Response, m.ReceivedAt.UnixNano()); err != nil {
			return fmt.Errorf("import idempotency key: %w", err)
		}
	}
	return nil
}
