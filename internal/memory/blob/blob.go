// Package blob keeps artifact bodies outside the metadata database: in a directory or in
// any S3-compatible bucket. Bodies are addressed by the sha256 of their bytes, so every
// daemon writing the same content writes (and stores) it once; the database keeps the
// metadata, previews and the hash.
package blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/bufpool"
)

// Store keeps bodies by hash. Implementations are safe for concurrent use.
type Store interface {
	// Put stores the body read from r, whose sha256 (lower-case hex) is sum and length is
	// size. existed reports that the store already had it (r is then not read).
	Put(ctx context.Context, sum string, size int64, r io.Reader) (existed bool, err error)
	// Open returns the body. The reader fails at the end if the bytes do not hash to sum,
	// so a damaged or replaced object is never passed on as the artifact.
	Open(ctx context.Context, sum string) (io.ReadCloser, error)
	// Stat returns the body's size, or an error wrapping ErrNotFound.
	Stat(ctx context.Context, sum string) (int64, error)
	// Delete removes a body (used by health checks on their own probe object).
	Delete(ctx context.Context, sum string) error
	// String describes the location without credentials.
	String() string
}

// ErrNotFound says a body is not in the store.
var ErrNotFound = errors.New("blob not found")

// ValidSum reports whether s is a lower-case hex sha256.
func ValidSum(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Sum returns the lower-case hex sha256 of b.
func Sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// objectName is the key of a body under a prefix: two-character fan-out keeps listings and
// directories small.
func objectName(sum string) string { return "sha256/" + sum[:2] + "/" + sum }

// Open parses an artifacts location: s3://bucket/prefix?endpoint=…, or file:///dir (or a
// plain absolute path). An empty location returns nil: bodies stay in the database.
func Open(ctx context.Context, location string) (Store, error) {
	if location == "" {
		return nil, nil
	}
	if strings.HasPrefix(location, "/") {
		return NewDir(location)
	}
	u, err := url.Parse(location)
	if err != nil {
		return nil, fmt.Errorf("artifacts location %s is not a URL: %w", Redact(location), err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("artifacts location %s: a file URL names a local directory, file:///path", Redact(location))
		}
		return NewDir(u.Path)
	case "s3":
		return OpenS3(ctx, u)
	}
	return nil, fmt.Errorf("artifacts location %s: unknown scheme %q; use s3://bucket/prefix?endpoint=host:port or file:///dir", Redact(location), u.Scheme)
}

// Redact returns location with any password or secret in it replaced by "xxxxx", for
// messages and status output. It reads every form a store or artifacts location takes: a
// URL (the password in its user info; every query value whose key names a secret, such as
// password, sslpassword, secret_key or token, and every options value, which may carry
// "-c password=…") and a libpq keyword/value string (host=… password='…' options=…).
func Redact(location string) string {
	if !strings.Contains(location, "://") && strings.Contains(location, "=") {
		return redactKeywords(location)
	}
	u, err := url.Parse(location)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q := u.Query()
	changed := false
	for k := range q {
		if secretKey(k) {
			q.Set(k, "xxxxx")
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// secretKey reports whether a connection setting can carry a secret: any name with
// password, secret, token or key in it, and options (libpq passes it to the server as
// command-line options, where "-c password=…" hides).
func secretKey(k string) bool {
	k = strings.ToLower(k)
	if k == "options" {
		return true
	}
	for _, w := range []string{"password", "secret", "token", "key", "credential"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// redactKeywords redacts a libpq keyword/value connection string. pgx parses this form
// with an unexported function, so the grammar (key = value, a value single-quoted with
// \' and \\ escapes) is read here; anything it cannot read is not shown at all.
func redactKeywords(s string) string {
	var out []string
	for i := 0; i < len(s); {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
		if i == len(s) {
			break
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return "(unparsable connection string)"
		}
		key := strings.TrimSpace(s[i : i+eq])
		i += eq + 1
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		var val strings.Builder
		quoted := i < len(s) && s[i] == '\''
		if quoted {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				if c == '\\' && i+1 < len(s) {
					val.WriteByte(s[i+1])
					i += 2
					continue
				}
				i++
				if c == '\'' {
					closed = true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return "(unparsable connection string)"
			}
		} else {
			for i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				val.WriteByte(s[i])
				i++
			}
		}
		if key == "" {
			return "(unparsable connection string)"
		}
		v := val.String()
		if secretKey(key) {
			v = "xxxxx"
		}
		if v == "" || strings.ContainsAny(v, " \t\n\r'\\") { // unquoted, whitespace would end the value
			v = "'" + strings.NewReplacer("\\", "\\\\", "'", "\\'").Replace(v) + "'"
		}
		out = append(out, key+"="+v)
	}
	return strings.Join(out, " ")
}

// verifier hashes what is read through it and fails at EOF on a mismatch.
type verifier struct {
	r    io.ReadCloser
	h    hash.Hash
	want string
	what string
}

// Verify wraps r so that reading it to the end fails unless the bytes hash to sum.
func Verify(r io.ReadCloser, sum, what string) io.ReadCloser {
	return &verifier{r: r, h: sha256.New(), want: sum, what: what}
}

func (v *verifier) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	if errors.Is(err, io.EOF) {
		if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want {
			return n, fmt.Errorf("%s is damaged: its bytes hash to %s, not %s", v.what, got[:12], v.want[:12])
		}
	}
	return n, err
}

func (v *verifier) Close() error { return v.r.Close() }

// Body is content read once from a client: hashed and measured while it is read, held in
// memory up to a threshold and in a temporary file above it, so a large upload never sits
// whole in memory. What Head, Bytes, Prefix and Reader return is valid until Close: the
// next upload may reuse the memory.
type Body struct {
	Sum  string
	Size int64
	// Head is the first HeadBytes bytes (all of it for small bodies).
	Head   []byte
	mem    []byte
	pooled bool // mem's array came from spoolBufs and goes back at Close
	file   *os.File
}

// spoolBufs keeps the memory of closed bodies: a new one per upload was most of what an
// artifact put left for the collector. Up to the daemon's spool threshold (1 MB): above
// it a body goes to a temporary file anyway.
var spoolBufs = bufpool.Pool{Max: 1<<20 + bytes.MinRead}

// HeadBytes is how much of a body Spool keeps in Head.
const HeadBytes = 64 << 10

// ErrTooLarge is returned by Spool when the body exceeds the limit.
var ErrTooLarge = errors.New("body too large")

// Spool reads r (at most limit bytes, else ErrTooLarge) into a Body; above threshold bytes it
// goes to a temporary file in dir ("" = os.TempDir()). Close the Body to remove the file.
func Spool(r io.Reader, limit, threshold int64, dir string) (*Body, error) {
	return SpoolSized(r, limit, threshold, dir, 0)
}

// SpoolSized is Spool for a body expected to be about size bytes (a request's
// Content-Length): its memory is allocated once instead of doubled up to the size, which for
// a 100 KB upload was ten allocations and twice its bytes copied.
func SpoolSized(r io.Reader, limit, threshold int64, dir string, size int64) (*Body, error) {
	h := sha256.New()
	b := &Body{pooled: true}
	want := 0
	if size > 0 {
		want = int(min(size, threshold)) + bytes.MinRead
	}
	buf := bytes.NewBuffer(spoolBufs.Get(want))
	buf.Grow(want) // no-op when the kept buffer has room
	// Read straight into buf's room, hashing what arrives: io.Copy through a MultiWriter
	// would add a 32 KB scratch buffer to every upload (two thirds of a 2 KB put's garbage).
	n, err := buf.ReadFrom(io.TeeReader(io.LimitReader(r, threshold+1), h))
	if err != nil {
		return nil, err
	}
	if n <= threshold {
		b.mem = buf.Bytes()
		b.Size = n
		b.Sum = hex.EncodeToString(h.Sum(nil))
		b.Head = b.mem[:min(len(b.mem), HeadBytes)]
		if n > limit {
			return nil, ErrTooLarge
		}
		return b, nil
	}
	f, err := os.CreateTemp(dir, "relay-body-")
	if err != nil {
		return nil, fmt.Errorf("spool upload: %w", err)
	}
	b.file = f
	b.Head = append([]byte(nil), buf.Bytes()[:min(buf.Len(), HeadBytes)]...)
	if _, err := f.Write(buf.Bytes()); err != nil {
		b.Close()
		return nil, fmt.Errorf("spool upload: %w", err)
	}
	b.mem = buf.Bytes() // for Close to give back; a spooled body reads from its file
	m, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, limit-n+1))
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("spool upload: %w", err)
	}
	b.Size = n + m
	if b.Size > limit {
		b.Close()
		return nil, ErrTooLarge
	}
	b.Sum = hex.EncodeToString(h.Sum(nil))
	return b, nil
}

// FromBytes wraps content already in memory.
func FromBytes(content []byte) *Body {
	return &Body{Sum: Sum(content), Size: int64(len(content)), mem: content, Head: content[:min(len(content), HeadBytes)]}
}

// InMemory reports whether the whole body is in memory (Bytes returns it without a copy).
func (b *Body) InMemory() bool { return b.file == nil }

// Bytes returns the whole body (read from the file for a spooled one).
func (b *Body) Bytes() ([]byte, error) {
	if b.file == nil {
		return b.mem, nil
	}
	return io.ReadAll(b.Reader())
}

// Prefix returns the body's first n bytes (all of it when shorter), reading a spooled body's
// file for them.
func (b *Body) Prefix(n int64) ([]byte, error) {
	if b.file == nil {
		return b.mem[:min(int64(len(b.mem)), n)], nil
	}
	return io.ReadAll(io.LimitReader(b.Reader(), n))
}

// Reader returns a reader over the whole body from its start; readers are independent.
func (b *Body) Reader() io.Reader {
	if b.file == nil {
		return bytes.NewReader(b.mem)
	}
	return io.NewSectionReader(b.file, 0, b.Size)
}

// Close removes the temporary file, if any, and lets the next upload reuse the memory.
func (b *Body) Close() error {
	if b == nil {
		return nil
	}
	if b.pooled {
		spoolBufs.Put(b.mem)
	}
	b.mem, b.Head, b.pooled = nil, nil, false
	if b.file == nil {
		return nil
	}
	name := b.file.Name()
	err := b.file.Close()
	b.file = nil
	return errors.Join(err, os.Remove(name))
}

// Probe writes a small random body to s, reads it back, compares and deletes it: the
// round trip relay doctor reports.
func Probe(ctx context.Context, s Store) error {
	if p, ok := s.(interface{ Ping(context.Context) error }); ok {
		if err := p.Ping(ctx); err != nil {
			return err
		}
	}
	body := make([]byte, 64)
	if _, err := rand.Read(body); err != nil {
		return err
	}
	sum := Sum(body)
	if _, err := s.Put(ctx, sum, int64(len(body)), bytes.NewReader(body)); err != nil {
		return fmt.Errorf("write a probe object: %w", err)
	}
	defer s.Delete(context.WithoutCancel(ctx), sum)
	r, err := s.Open(ctx, sum)
	if err != nil {
		return fmt.Errorf("read the probe object back: %w", err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read the probe object back: %w", err)
	}
	if !bytes.Equal(got, body) {
		return errors.New("the probe object came back different")
	}
	return s.Delete(ctx, sum)
}

// Object is one body in a store, as listed.
type Object struct {
	Sum      string
	Size     int64
	Modified time.Time
}

// Collectable is a store whose bodies can be listed and removed in bulk, for garbage
// collection (package blobgc). Both stores of this package are.
type Collectable interface {
	Store
	// List calls fn with every body in the store, in no particular order (keys that are
	// not bodies, such as temporary files and store markers, are skipped).
	List(ctx context.Context, fn func(Object) error) error
	// DeleteMany removes bodies; one already gone is not an error.
	DeleteMany(ctx context.Context, sums []string) error
	// Mark records that the relay store named id keeps bodies here, and returns the ids of
	// every store marked so far (id among them), so a sweep can refuse a location that
	// another store also uses: it would take that store's bodies for unreferenced.
	Mark(ctx context.Context, id string) ([]string, error)
}

// markerName is the key of a store's marker under a prefix.
func markerName(id string) string { return "stores/" + id }

// ValidStoreID reports whether id can name a store marker (letters, digits, '-').
func ValidStoreID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
