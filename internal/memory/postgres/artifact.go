package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/memory/ftsquery"
)

// Search indexing bounds: the text indexed per artifact (as SQLite indexes), and the words
// kept of it (a tsvector must stay under 1 MB).
const (
	maxIndexedBytes = 4 << 20
	maxIndexWords   = 512 << 10
)

// PutArtifact implements memory.Store.
func (s *Store) PutArtifact(ctx context.Context, id string, p memory.PutArtifactParams) (memory.Artifact, error) {
	if int64(len(p.Content)) > s.MaxArtifactBytes() {
		return memory.Artifact{}, &memory.TooLargeError{What: "the artifact", Limit: s.MaxArtifactBytes()}
	}
	return s.PutArtifactBody(ctx, id, p, blob.FromBytes(p.Content))
}

// StreamsBodies reports that bodies reach this store as streams (they may go to a bucket).
func (s *Store) StreamsBodies() bool { return true }

// MaxArtifactBytes implements memory.ArtifactLimiter: bodies in a bucket stream and may be
// large; bodies in the database are bounded like SQLite's.
func (s *Store) MaxArtifactBytes() int64 {
	if s.blobs != nil {
		return memory.MaxBucketArtifactSize
	}
	return memory.MaxArtifactSize
}

// PutArtifactBody stores an artifact whose content was spooled (p.Content is ignored): a
// large upload goes to the bucket from its temporary file without being held in memory.
func (s *Store) PutArtifactBody(ctx context.Context, id string, p memory.PutArtifactParams, body *blob.Body) (memory.Artifact, error) {
	if err := memory.CheckThreadID(id); err != nil {
		return memory.Artifact{}, err
	}
	typ, refs, err := memory.CheckPutLimit(p, body.Size, body.Head, s.MaxArtifactBytes())
	if err != nil {
		return memory.Artifact{}, err
	}
	// The preview, type and index need the text; a body above the spool threshold is
	// read back from its file once here (the index keeps at most maxIndexedBytes).
	var content []byte
	if body.InMemory() {
		content, _ = body.Bytes()
	} else if content, err = body.Prefix(maxIndexedBytes); err != nil {
		return memory.Artifact{}, fmt.Errorf("read spooled upload: %w", err)
	}
	a := memory.Artifact{ThreadID: id, Type: typ, Mime: memory.MimeFor(typ, body.Head), Name: p.Name, Size: body.Size,
		Hash: body.Sum, Preview: memory.MakePreview(typ, content),
		Provenance: memory.Provenance{CreatedBy: p.CreatedBy, SourceRefs: refs, Capability: p.Capability}}
	a.Preview.Size = body.Size
	srcRefs, _ := json.Marshal(refs)

	// The body goes to the bucket before the metadata commits: a crash in between leaves an
	// unreferenced object (reused by the next put of the same bytes, or removed by the
	// bucket's garbage collection), never metadata without its body. The pin keeps a sweep
	// from deleting the body between the upload (or the finding that it is there) and the
	// commit, which drops the pin.
	pin := int64(-1)
	if s.blobs != nil {
		if err := s.threadExists(ctx, id); err != nil {
			return memory.Artifact{}, err
		}
		if pin, err = s.pin(ctx, body.Sum); err != nil {
			return memory.Artifact{}, err
		}
		if _, err := s.blobs.Put(ctx, body.Sum, body.Size, body.Reader()); err != nil {
			s.unpin(pin)
			return memory.Artifact{}, fmt.Errorf("store artifact body: %w", err)
		}
	}
	var out memory.Artifact
	err = s.tx(ctx, "store artifact in thread "+id, func(tx pgx.Tx) error {
		if _, _, _, err := lockThread(ctx, tx, id); err != nil {
			return err
		}
		if pin >= 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM blob_pins WHERE id = $1`, pin); err != nil {
				return err
			}
		}
		old, err := scanArtifact(tx.QueryRow(ctx, `SELECT `+artifactCols+` FROM artifacts WHERE thread_id = $1 AND hash = $2`, id, a.Hash))
		if err == nil {
			old.Deduplicated = true
			out = old
			return nil
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("look up artifact hash: %w", err)
		}
		a := a
		at := s.stamp()
		a.CreatedAt, a.Provenance.CreatedAt = at, at
		if a.Ref, a.ShortUnique, err = drawRef(ctx, tx, at.Time); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO artifacts (`+artifactCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			a.Ref, id, a.Type, a.Mime, a.Name, a.Size, a.Hash, a.Preview.Text, a.Preview.LineCount, a.Preview.Truncated,
			a.Provenance.CreatedBy, a.Provenance.Capability, string(srcRefs), at.Time); err != nil {
			return err
		}
		if s.blobs == nil {
			b, err := body.Bytes()
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO blobs (hash, content) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, a.Hash, b); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE threads SET artifact_count = artifact_count + 1 WHERE id = $1`, id); err != nil {
			return err
		}
		// The event carries the ref as relay shows it (unique: it was just drawn so).
		data := memory.StoredEventData(a)
		if _, err := insertEvent(ctx, tx, id, memory.EventArtifactStored, at, data); err != nil {
			return err
		}
		// Search results must not find earlier search results.
		if a.Provenance.Capability != memory.SearchCapability {
			if err := index(ctx, tx, a, content); err != nil {
				return fmt.Errorf("index artifact %s: %w", a.Ref, err)
			}
		}
		out = a
		return nil
	})
	if err != nil {
		if pin >= 0 {
			s.unpin(pin)
		}
		return memory.Artifact{}, err
	}
	s.broker.Notify(id)
	return out, nil
}

var tagRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)<script.*?</script>|<style.*?</style>|<[^>]*>`) })

// index adds the artifact to the full-text index inside the put's transaction, so search
// never lags the store. Binary content is indexed by name only.
func index(ctx context.Context, tx pgx.Tx, a memory.Artifact, content []byte) error {
	body := ""
	if a.Type != memory.TypeBinary && utf8.Valid(content) {
		if len(content) > maxIndexedBytes {
			content = content[:maxIndexedBytes]
		}
		body = string(content)
		if a.Type == memory.TypeHTML {
			body = tagRE().ReplaceAllString(body, " ")
		}
	}
	body = strings.ToValidUTF8(strings.ReplaceAll(body, "\x00", " "), "")
	name := strings.ReplaceAll(a.Name, "\x00", " ")
	_, err := tx.Exec(ctx, `INSERT INTO artifact_search (ref, thread_id, seq, type, name, body, doc)
		VALUES ($1, $2, (SELECT coalesce(max(seq), 0) + 1 FROM artifact_search WHERE thread_id = $2), $3, $4, $5,
			setweight(to_tsvector('relay_search', $6), 'A') || setweight(to_tsvector('relay_search', $7), 'B'))`,
		a.Ref, a.ThreadID, a.Type, name, body, ftsquery.IndexText(name, 4096), ftsquery.IndexText(body, maxIndexWords))
	return err
}

const artifactCols = `ref, thread_id, type, mime, name, size, hash, preview_text, preview_lines, preview_truncated, created_by, capability, source_refs, created_at`

func scanArtifact(r pgx.Row) (memory.Artifact, error) {
	var a memory.Artifact
	var refs string
	var at time.Time
	err := r.Scan(&a.Ref, &a.ThreadID, &a.Type, &a.Mime, &a.Name, &a.Size, &a.Hash, &a.Preview.Text, &a.Preview.LineCount, &a.Preview.Truncated,
		&a.Provenance.CreatedBy, &a.Provenance.Capability, &refs, &at)
	if err != nil {
		return a, err
	}
	a.Preview.Size = a.Size
	a.CreatedAt = memory.Time{Time: at.UTC()}
	a.Provenance.CreatedAt = a.CreatedAt
	if json.Unmarshal([]byte(refs), &a.Provenance.SourceRefs) != nil || a.Provenance.SourceRefs == nil {
		a.Provenance.SourceRefs = []string{}
	}
	return a, nil
}

// shortExpr is a ref's short form in SQL; the artifacts_short index is on this expression.
const shortExpr = `substr(ref, 21)`

// shortLockBase namespaces the advisory locks that serialise puts drawing the same short ref
// on different daemons (the low 24 bits are the short ref).
const shortLockBase int64 = 0x72656c6100000000

// drawRef draws a new artifact ref whose short form no artifact of the store has, holding a
// transaction advisory lock on that short form so a put on another daemon cannot take it
// before this transaction commits.
func drawRef(ctx context.Context, tx pgx.Tx, at time.Time) (ref string, unique bool, err error) {
	for i := 0; i < memory.MaxRefDraws; i++ {
		ref = memory.NewRef(at)
		n, _ := strconv.ParseInt(memory.Short(ref), 16, 64)
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, shortLockBase+n); err != nil {
			return "", false, fmt.Errorf("lock ref %s: %w", ref, err)
		}
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM artifacts WHERE `+shortExpr+` = $1)`, memory.Short(ref)).Scan(&taken); err != nil {
			return "", false, fmt.Errorf("check ref %s: %w", ref, err)
		}
		if !taken {
			return ref, true, nil
		}
	}
	return ref, false, nil
}

// SharedShorts implements memory.Store.
func (s *Store) SharedShorts(ctx context.Context, shorts []string) (map[string]bool, error) {
	return memory.SharedShorts(shorts, func() (memory.Rows, func(), error) {
		rows, err := s.pool.Query(ctx, `SELECT `+shortExpr+` FROM artifacts WHERE `+shortExpr+` = ANY($1) GROUP BY 1 HAVING count(*) > 1`, shorts)
		if err != nil {
			return nil, nil, err
		}
		return rows, rows.Close, nil
	})
}

// FindArtifact implements memory.Store: a full or short ref in the whole store.
func (s *Store) FindArtifact(ctx context.Context, ref string) (memory.Artifact, error) {
	var q string
	switch {
	case memory.ValidRef(ref):
		q = `SELECT ` + artifactCols + ` FROM artifacts WHERE ref = $1`
	case memory.IsShortRef(ref):
		q = `SELECT ` + artifactCols + ` FROM artifacts WHERE ` + shortExpr + ` = $1 ORDER BY ref LIMIT 5`
	default:
		return memory.Artifact{}, memory.BadRequest("%q is not an artifact ref: give the %d hex characters relay shows or a full ref (a shorter or longer prefix needs the thread)", ref, memory.ShortRefLen)
	}
	found, err := s.queryArtifacts(ctx, q, ref)
	if err != nil {
		return memory.Artifact{}, fmt.Errorf("find artifact %s: %w", ref, err)
	}
	return memory.OneFound(ref, found)
}

func (s *Store) queryArtifacts(ctx context.Context, q string, args ...any) ([]memory.Artifact, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []memory.Artifact
	for rows.Next() {
		a, err := scanArtifact(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// GetArtifact implements memory.Store: a full ref, or the short one relay shows, of the
// thread's artifact. (PostgreSQL stores never showed the older hash abbreviations, so
// there are none to resolve.)
func (s *Store) GetArtifact(ctx context.Context, id, ref string) (memory.Artifact, error) {
	if err := s.threadExists(ctx, id); err != nil {
		return memory.Artifact{}, err
	}
	var q string
	switch {
	case memory.ValidRef(ref):
		q = `SELECT ` + artifactCols + ` FROM artifacts WHERE ref = $1 AND thread_id = $2`
	case memory.IsShortRef(ref):
		q = `SELECT ` + artifactCols + ` FROM artifacts WHERE ` + shortExpr + ` = $1 AND thread_id = $2 ORDER BY ref LIMIT 2`
	default:
		return memory.Artifact{}, memory.BadRequest("%q is not an artifact ref (the %d hex characters relay shows, or a full ref of %d); list refs with `relay artifact ls`", ref, memory.ShortRefLen, memory.RefLen)
	}
	found, err := s.queryArtifacts(ctx, q, ref, id)
	if err != nil {
		return memory.Artifact{}, fmt.Errorf("read artifact %s: %w", ref, err)
	}
	switch len(found) {
	case 0:
		return memory.Artifact{}, &memory.NotFoundError{What: "artifact", ID: ref}
	case 1:
		return found[0], nil
	}
	return memory.Artifact{}, memory.AmbiguousRef(ref, []string{found[0].Ref, found[1].Ref}, " of the thread")
}

// OpenArtifact returns the artifact and a reader of its body, streamed from the bucket when
// the store has one; the reader fails at the end if the bytes do not match the hash.
func (s *Store) OpenArtifact(ctx context.Context, id, ref string) (memory.Artifact, io.ReadCloser, error) {
	a, err := s.GetArtifact(ctx, id, ref)
	if err != nil {
		return a, nil, err
	}
	r, err := s.openBody(ctx, s.pool, a.Hash)
	if err != nil {
		return a, nil, fmt.Errorf("read content of artifact %s: %w", ref, err)
	}
	return a, r, nil
}

// openBody opens the body with hash sum: from the bucket when the store has one, else (and
// for bodies stored before the bucket was configured) from the blobs table.
func (s *Store) openBody(ctx context.Context, q querier, sum string) (io.ReadCloser, error) {
	if s.blobs != nil {
		r, err := s.blobs.Open(ctx, sum)
		if !errors.Is(err, blob.ErrNotFound) {
			return r, err
		}
	}
	var b []byte
	err := q.QueryRow(ctx, `SELECT content FROM blobs WHERE hash = $1`, sum).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		if s.blobs == nil {
			return nil, &memory.NoBucketError{Hash: sum}
		}
		return nil, fmt.Errorf("body %s is neither in %s nor in the database: %w", sum[:12], s.blobs, blob.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return blob.Verify(io.NopCloser(bytes.NewReader(b)), sum, "artifact body "+sum[:12]), nil
}

// ArtifactContent implements memory.Store.
func (s *Store) ArtifactContent(ctx context.Context, id, ref string) (memory.Artifact, []byte, error) {
	a, r, err := s.OpenArtifact(ctx, id, ref)
	if err != nil {
		return a, nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, memory.MaxArtifactSize+1))
	if err != nil {
		return a, nil, fmt.Errorf("read content of artifact %s: %w", ref, err)
	}
	if len(b) > memory.MaxArtifactSize {
		return a, nil, &memory.TooLargeError{What: "artifact " + ref + " (read it streamed, GET …?raw=1)", Limit: memory.MaxArtifactSize}
	}
	return a, b, nil
}

// ListArtifacts implements memory.Store.
func (s *Store) ListArtifacts(ctx context.Context, id string, opt memory.ListArtifactsOptions) ([]memory.Artifact, error) {
	if err := s.threadExists(ctx, id); err != nil {
		return nil, err
	}
	if opt.Type != "" && !memory.ValidType(opt.Type) {
		return nil, memory.BadRequest("unknown artifact type %q; use one of %s", opt.Type, strings.Join(memory.ArtifactTypes, ", "))
	}
	if opt.After != "" && !memory.ValidRef(opt.After) {
		return nil, memory.BadRequest("after=%q is not an artifact ref", opt.After)
	}
	if opt.Before != "" && !memory.ValidRef(opt.Before) {
		return nil, memory.BadRequest("before=%q is not an artifact ref", opt.Before)
	}
	if opt.Limit <= 0 {
		opt.Limit = 100
	}
	q := `SELECT ` + artifactCols + ` FROM artifacts WHERE thread_id = $1 AND ref > $2 AND ($3 = '' OR type = $3) ORDER BY ref LIMIT $4`
	args := []any{id, opt.After, opt.Type, opt.Limit}
	if opt.Before != "" {
		q = `SELECT ` + artifactCols + ` FROM artifacts WHERE thread_id = $1 AND ref > $2 AND ref < $5 AND ($3 = '' OR type = $3) ORDER BY ref DESC LIMIT $4`
		args = append(args, opt.Before)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list artifacts: %w", err)
	}
	defer rows.Close()
	out := []memory.Artifact{}
	for rows.Next() {
		a, err := scanArtifact(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
