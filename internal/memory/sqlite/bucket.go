package sqlite

import (
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/memory/blobgc"
)

// Artifact bodies in a bucket (Options.Blobs, relay up --artifacts): the body streams from
// its spool file to the bucket, and the database keeps the artifact's row as always plus,
// in artifact_content, only the text the search index reads (enc = encBucket). Artifacts
// stored before the bucket was configured keep their bodies in the database, so a store
// can move to a bucket at any time.

// MaxArtifactBytes implements memory.ArtifactLimiter.
func (s *SQLite) MaxArtifactBytes() int64 {
	if s.blobs != nil {
		return memory.MaxBucketArtifactSize
	}
	return memory.MaxArtifactSize
}

// StreamsBodies reports whether bodies should reach this store as streams: with a bucket.
func (s *SQLite) StreamsBodies() bool { return s.blobs != nil }

// Blobs returns the bucket bodies go to, or nil when they are kept in the database.
func (s *SQLite) Blobs() blob.Store { return s.blobs }

// PutArtifactBody stores an artifact whose content was spooled (p.Content is ignored): with
// a bucket the body streams from its file to the bucket and is never whole in memory.
func (s *SQLite) PutArtifactBody(ctx context.Context, id string, p memory.PutArtifactParams, body *blob.Body) (memory.Artifact, error) {
	if s.blobs == nil {
		if body.Size > memory.MaxArtifactSize {
			return memory.Artifact{}, &memory.TooLargeError{What: "the artifact", Limit: memory.MaxArtifactSize}
		}
		b, err := body.Bytes()
		if err != nil {
			return memory.Artifact{}, fmt.Errorf("read spooled upload: %w", err)
		}
		p.Content = b
		return s.PutArtifact(ctx, id, p)
	}
	if err := memory.CheckThreadID(id); err != nil {
		return memory.Artifact{}, err
	}
	typ, refs, err := memory.CheckPutLimit(p, body.Size, body.Head, s.MaxArtifactBytes())
	if err != nil {
		return memory.Artifact{}, err
	}
	head, err := body.Prefix(MaxIndexedBytes)
	if err != nil {
		return memory.Artifact{}, fmt.Errorf("read spooled upload: %w", err)
	}
	a := memory.Artifact{ThreadID: id, Type: typ, Mime: memory.MimeFor(typ, body.Head), Name: p.Name, Size: body.Size,
		Hash: body.Sum, Preview: memory.MakePreview(typ, head),
		Provenance: memory.Provenance{CreatedBy: p.CreatedBy, SourceRefs: refs, Capability: p.Capability}}
	a.Preview.Size = body.Size
	stored := append([]byte{}, bucketIndexText(typ, head, body.Size)...) // never nil: the column is NOT NULL
	if err := s.threadExists(ctx, id); err != nil {
		return memory.Artifact{}, err
	}
	if a.Provenance.Capability != memory.SearchCapability && typ != memory.TypeBinary {
		if err := s.waitIndexRoom(ctx, id); err != nil {
			return memory.Artifact{}, err
		}
	}
	// Pinned from before the upload (or the finding that the body is there) until the
	// artifact has committed, so a sweep of the bucket cannot take the body in between.
	s.pin(body.Sum)
	defer s.unpin(body.Sum)
	if _, err := s.blobs.Put(ctx, body.Sum, body.Size, body.Reader()); err != nil {
		return memory.Artifact{}, fmt.Errorf("store artifact body: %w", err)
	}
	return s.storeArtifact(ctx, a, encBucket, stored, nil)
}

// bucketIndexText is what artifact_content keeps of a body that lives in the bucket: the
// text search indexes (nothing for binary content), from its first MaxIndexedBytes.
func bucketIndexText(typ string, head []byte, size int64) string {
	if int64(len(head)) < size {
		// The body goes on: a rune cut at the end of head is not an encoding error.
		for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
			if utf8.RuneStart(head[i]) {
				if !utf8.FullRune(head[i:]) {
					head = head[:i]
				}
				break
			}
		}
	}
	return indexText(typ, head)
}

// OpenArtifact returns the artifact and a reader of its body, streamed from the bucket when
// it is there; the reader fails at its end if the bytes do not match the hash.
func (s *SQLite) OpenArtifact(ctx context.Context, id, ref string) (memory.Artifact, io.ReadCloser, error) {
	a, err := s.GetArtifact(ctx, id, ref)
	if err != nil {
		return a, nil, err
	}
	var b []byte
	var enc int
	if err := s.r.QueryRowContext(ctx, `SELECT content, enc FROM artifact_content WHERE ref = ?`, a.Ref).Scan(&b, &enc); err != nil {
		return a, nil, fmt.Errorf("read content of artifact %s: %w", a.Ref, err)
	}
	r, err := s.openContent(ctx, a.Hash, enc, b)
	if err != nil {
		return a, nil, fmt.Errorf("read content of artifact %s: %w", a.Ref, err)
	}
	return a, r, nil
}

// openBucket opens a body kept in the bucket.
func (s *SQLite) openBucket(ctx context.Context, sum string) (io.ReadCloser, error) {
	if s.blobs == nil {
		return nil, &memory.NoBucketError{Hash: sum}
	}
	return s.blobs.Open(ctx, sum)
}

// bucketContent reads a whole body from the bucket, for the callers that want bytes; a
// large one must be read streamed (OpenArtifact).
func (s *SQLite) bucketContent(ctx context.Context, a memory.Artifact) (memory.Artifact, []byte, error) {
	if a.Size > memory.MaxArtifactSize {
		return a, nil, &memory.TooLargeError{What: "artifact " + a.Ref + " (read it streamed, GET …?raw=1)", Limit: memory.MaxArtifactSize}
	}
	r, err := s.openBucket(ctx, a.Hash)
	if err != nil {
		return a, nil, fmt.Errorf("read content of artifact %s: %w", a.Ref, err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, memory.MaxArtifactSize+1))
	if err != nil {
		return a, nil, fmt.Errorf("read content of artifact %s: %w", a.Ref, err)
	}
	return a, b, nil
}

// pin marks a body as being put; it waits while a sweep checks and deletes a batch.
func (s *SQLite) pin(sum string) {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	s.pins[sum]++
}

func (s *SQLite) unpin(sum string) {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	if s.pins[sum]--; s.pins[sum] <= 0 {
		delete(s.pins, sum)
	}
}

// StoreID implements blobgc.Index.
func (s *SQLite) StoreID(ctx context.Context) (string, error) {
	var id string
	err := s.r.QueryRowContext(ctx, `SELECT value FROM store_meta WHERE key = 'id'`).Scan(&id)
	return id, err
}

// Unreferenced implements blobgc.Index.
func (s *SQLite) Unreferenced(ctx context.Context, sums []string) ([]string, error) {
	if len(sums) == 0 {
		return nil, nil
	}
	args := make([]any, len(sums))
	for i, h := range sums {
		args[i] = h
	}
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT hash FROM artifacts WHERE hash IN (?`+strings.Repeat(",?", len(sums)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("look up referenced bodies: %w", err)
	}
	defer rows.Close()
	used := map[string]bool{}
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, err
		}
		used[h] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []string
	for _, h := range sums {
		if !used[h] {
			out = append(out, h)
		}
	}
	return out, nil
}

// Collect implements blobgc.Index. Puts pin before they touch the bucket and unpin after
// their artifact committed; holding the pin lock, the sweep sees either the pin or the
// committed artifact, or deletes first and the put then uploads the body again.
func (s *SQLite) Collect(ctx context.Context, sums []string, del func([]string) error) ([]string, error) {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	unused, err := s.Unreferenced(ctx, sums)
	if err != nil {
		return nil, err
	}
	kept := unused[:0]
	for _, h := range unused {
		if s.pins[h] == 0 {
			kept = append(kept, h)
		}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	if err := del(kept); err != nil {
		return nil, err
	}
	return kept, nil
}

// SweepBlobs runs a garbage collection of the store's bucket (package blobgc).
func (s *SQLite) SweepBlobs(ctx context.Context, opt blobgc.Options) (blobgc.Report, error) {
	bs, ok := s.blobs.(blob.Collectable)
	if !ok {
		return blobgc.Report{}, blobgc.ErrNoBucket
	}
	if !s.sweepMu.TryLock() {
		return blobgc.Report{}, blobgc.ErrBusy
	}
	defer s.sweepMu.Unlock()
	return blobgc.Sweep(ctx, bs, s, opt)
}

// importBodies streams the bodies of an import to the bucket before its transaction,
// pinned until the caller's unpin, and returns the index text of each.
func (s *SQLite) importBodies(ctx context.Context, d *memory.ThreadDump, content memory.Content) (texts map[string][]byte, unpin func(), err error) {
	var pinned []string
	unpin = func() {
		for _, h := range pinned {
			s.unpin(h)
		}
	}
	texts = map[string][]byte{}
	for _, a := range d.Artifacts {
		if !blob.ValidSum(a.Hash) || a.Size < 0 || a.Size > s.MaxArtifactBytes() {
			unpin()
			return nil, nil, memory.BadRequest("artifact %s has no valid hash and size", a.Ref)
		}
		s.pin(a.Hash)
		pinned = append(pinned, a.Hash)
		r, err := content(a.Ref)
		if err != nil {
			unpin()
			return nil, nil, err
		}
		_, err = s.blobs.Put(ctx, a.Hash, a.Size, r)
		r.Close()
		if err != nil {
			unpin()
			return nil, nil, fmt.Errorf("import artifact %s: %w", a.Ref, err)
		}
		if a.Capability == memory.SearchCapability || a.Type == memory.TypeBinary {
			texts[a.Ref] = nil
			continue
		}
		r, err = content(a.Ref)
		if err != nil {
			unpin()
			return nil, nil, err
		}
		head, err := io.ReadAll(io.LimitReader(r, MaxIndexedBytes))
		r.Close()
		if err != nil {
			unpin()
			return nil, nil, fmt.Errorf("read artifact %s to index it: %w", a.Ref, err)
		}
		texts[a.Ref] = []byte(bucketIndexText(a.Type, head, a.Size))
	}
	return texts, unpin, nil
}
