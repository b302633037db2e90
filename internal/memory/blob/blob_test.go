package blob_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/testsupport/s3test"
)

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func readAll(t *testing.T, s blob.Store, sum string) []byte {
	t.Helper()
	r, err := s.Open(context.Background(), sum)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// storeContract is what every blob.Store must do; damage overwrites the stored bytes of sum.
func storeContract(t *testing.T, s blob.Store, damage func(sum string, b []byte)) {
	ctx := context.Background()
	body := []byte("the quick brown fox")
	sum := blob.Sum(body)

	t.Run("round trip and dedupe", func(t *testing.T) {
		existed, err := s.Put(ctx, sum, int64(len(body)), bytes.NewReader(body))
		if err != nil || existed {
			t.Fatalf("first put: existed=%v err=%v", existed, err)
		}
		existed, err = s.Put(ctx, sum, int64(len(body)), strings.NewReader("not read"))
		if err != nil || !existed {
			t.Fatalf("second put of the same sum: existed=%v err=%v, want existed", existed, err)
		}
		if got := readAll(t, s, sum); !bytes.Equal(got, body) {
			t.Fatalf("read %q, want %q", got, body)
		}
		n, err := s.Stat(ctx, sum)
		if err != nil || n != int64(len(body)) {
			t.Fatalf("stat = %d, %v", n, err)
		}
	})
	t.Run("missing body", func(t *testing.T) {
		missing := blob.Sum([]byte("never stored"))
		if _, err := s.Open(ctx, missing); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("open of a missing body: %v, want ErrNotFound", err)
		}
		if _, err := s.Stat(ctx, missing); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("stat of a missing body: %v, want ErrNotFound", err)
		}
	})
	t.Run("bytes that do not match the name are refused", func(t *testing.T) {
		named := blob.Sum([]byte("one thing"))
		if _, err := s.Put(ctx, named, 9, strings.NewReader("something")); err == nil {
			t.Fatal("put of bytes under another body's sum succeeded")
		}
		if _, err := s.Stat(ctx, named); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("a refused put left an object: stat = %v", err)
		}
	})
	t.Run("damage is detected on read", func(t *testing.T) {
		b := []byte("will be damaged")
		d := blob.Sum(b)
		if _, err := s.Put(ctx, d, int64(len(b)), bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		damage(d, []byte("will be DAMAGED"))
		r, err := s.Open(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := io.ReadAll(r); err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Fatalf("reading a damaged body: %v, want a damage error", err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		b := []byte("probe")
		d := blob.Sum(b)
		if _, err := s.Put(ctx, d, int64(len(b)), bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, d); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Stat(ctx, d); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("stat after delete: %v", err)
		}
	})
	t.Run("bad names", func(t *testing.T) {
		for _, name := range []string{"", "../../etc/passwd", strings.Repeat("A", 64), strings.Repeat("a", 63)} {
			if _, err := s.Put(ctx, name, 1, strings.NewReader("x")); err == nil {
				t.Errorf("put under %q succeeded", name)
			}
			if _, err := s.Open(ctx, name); err == nil {
				t.Errorf("open of %q succeeded", name)
			}
		}
	})
}

func TestDir(t *testing.T) {
	root := t.TempDir()
	d, err := blob.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	storeContract(t, d, func(sum string, b []byte) {
		p := filepath.Join(root, "sha256", sum[:2], sum)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	})
}

func TestS3(t *testing.T) {
	srv := s3test.Start(t)
	loc := srv.Bucket(t, "relay-blobs", "team/a")
	s, err := blob.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.(*blob.S3).Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	storeContract(t, s, func(sum string, b []byte) {
		_, err := srv.Client.PutObject(context.Background(), "relay-blobs", "team/a/sha256/"+sum[:2]+"/"+sum, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// A body above PartSize goes up as a multipart upload (its ETag is "<md5>-<parts>") and
// comes back byte for byte.
func TestS3Multipart(t *testing.T) {
	srv := s3test.Start(t)
	loc := srv.Bucket(t, "big", "")
	s, err := blob.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	body := randomBytes(t, blob.PartSize+3<<20)
	sp, err := blob.Spool(bytes.NewReader(body), 50<<20, 1<<20, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if sp.InMemory() {
		t.Fatal("a 19 MiB body was held in memory above the 1 MiB threshold")
	}
	if _, err := s.Put(context.Background(), sp.Sum, sp.Size, sp.Reader()); err != nil {
		t.Fatal(err)
	}
	info, err := srv.Client.StatObject(context.Background(), "big", "sha256/"+sp.Sum[:2]+"/"+sp.Sum, minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(info.ETag, "-2") {
		t.Errorf("ETag %q: want a 2-part multipart upload", info.ETag)
	}
	if got := readAll(t, s, sp.Sum); !bytes.Equal(got, body) {
		t.Fatalf("multipart body came back different (%d bytes, want %d)", len(got), len(body))
	}
}

// Requests without credentials are refused by the server, as by a real S3.
func TestS3UnsignedRefused(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "private", "")
	resp, err := http.Get(srv.Endpoint + "/private/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("unsigned GET: %s, want 403", resp.Status)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	s, err := blob.Open(context.Background(), "s3://private/?endpoint="+srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	err = s.(*blob.S3).Ping(context.Background())
	if err == nil || !strings.Contains(err.Error(), "AWS_SECRET_ACCESS_KEY") {
		t.Fatalf("ping with a wrong secret: %v, want an error naming the credentials", err)
	}
}

func TestS3MissingBucket(t *testing.T) {
	srv := s3test.Start(t)
	s, err := blob.Open(context.Background(), "s3://nope/x?endpoint="+srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.(*blob.S3).Ping(context.Background()); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("ping of a missing bucket: %v", err)
	}
}

func TestSpool(t *testing.T) {
	for _, tc := range []struct {
		name            string
		size, threshold int64
		inMemory        bool
	}{
		{"empty", 0, 10, true},
		{"at threshold", 10, 10, true},
		{"above threshold", 11, 10, false},
		{"large", 300 << 10, 64 << 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := randomBytes(t, int(tc.size))
			b, err := blob.Spool(bytes.NewReader(body), 1<<20, tc.threshold, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if b.InMemory() != tc.inMemory || b.Size != tc.size || b.Sum != blob.Sum(body) {
				t.Fatalf("spool: inMemory=%v size=%d sum=%s", b.InMemory(), b.Size, b.Sum)
			}
			if want := body[:min(len(body), blob.HeadBytes)]; !bytes.Equal(b.Head, want) {
				t.Fatalf("head is %d bytes, not the body's first %d", len(b.Head), len(want))
			}
			got, err := io.ReadAll(b.Reader())
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("reader: %d bytes, %v", len(got), err)
			}
		})
	}
	t.Run("over the limit", func(t *testing.T) {
		for _, th := range []int64{4, 100} {
			if _, err := blob.Spool(bytes.NewReader(make([]byte, 50)), 20, th, t.TempDir()); !errors.Is(err, blob.ErrTooLarge) {
				t.Fatalf("threshold %d: %v, want ErrTooLarge", th, err)
			}
		}
	})
	t.Run("temporary file removed", func(t *testing.T) {
		dir := t.TempDir()
		b, err := blob.Spool(bytes.NewReader(make([]byte, 100)), 1000, 10, dir)
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("%d files left in the spool directory", len(ents))
		}
	})
}

// TestSpoolReusesClosedBodies: a body closed gives its memory to the next upload, which
// then holds its own bytes only (a shorter one after a longer one included), and the closed
// body hands out nothing.
func TestSpoolReusesClosedBodies(t *testing.T) {
	prev, err := blob.SpoolSized(bytes.NewReader(randomBytes(t, 100<<10)), 1<<20, 1<<20, t.TempDir(), 100<<10)
	if err != nil {
		t.Fatal(err)
	}
	prev.Close()
	if b, err := prev.Bytes(); len(b) != 0 || err != nil || prev.Head != nil {
		t.Fatalf("a closed body still gives %d bytes (head %d), %v", len(b), len(prev.Head), err)
	}
	for _, n := range []int{2 << 10, 100 << 10, 10, 150 << 10} {
		body := randomBytes(t, n)
		b, err := blob.SpoolSized(bytes.NewReader(body), 1<<20, 1<<20, t.TempDir(), int64(n))
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.Bytes()
		if err != nil || !bytes.Equal(got, body) || b.Sum != blob.Sum(body) || !bytes.Equal(b.Head, body[:min(n, blob.HeadBytes)]) {
			t.Fatalf("%d bytes after a closed body: got %d bytes, sum %s, %v", n, len(got), b.Sum, err)
		}
		b.Close()
		b.Close() // twice is harmless
	}
}

func TestOpenLocation(t *testing.T) {
	ctx := context.Background()
	for _, bad := range []string{"ftp://x", "s3:///prefix", "s3://AKIA:secret@bucket/p", "file://otherhost/dir", "relative/dir", "s3://b/?endpoint=ftp://x"} {
		if _, err := blob.Open(ctx, bad); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		} else if strings.Contains(err.Error(), "secret") && !strings.Contains(err.Error(), "AWS_SECRET") {
			t.Errorf("Open(%q) error leaks the secret: %v", bad, err)
		}
	}
	if s, err := blob.Open(ctx, ""); s != nil || err != nil {
		t.Fatalf("empty location: %v %v, want nil (bodies in the database)", s, err)
	}
	s, err := blob.Open(ctx, "s3://bucket/a/b/?endpoint=http://127.0.0.1:9&region=eu")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "s3://bucket/a/b at 127.0.0.1:9" {
		t.Fatalf("String() = %q", got)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://relay:hunter2@db:5432/relay?sslmode=require": "postgres://relay:xxxxx@db:5432/relay?sslmode=require",
		"postgres://relay@db/relay":                              "postgres://relay@db/relay",
		"postgres://db/relay?password=hunter2":                   "postgres://db/relay?password=xxxxx",
	} {
		if got := blob.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzRedact(f *testing.F) {
	f.Add("postgres://u:secretpw@h/d?password=other")
	f.Add("s3://b/p?secret_key=secretpw")
	f.Fuzz(func(t *testing.T, s string) {
		out := blob.Redact(s)
		u, err := url.Parse(s)
		if err != nil || u.User == nil {
			return
		}
		p, ok := u.User.Password()
		if !ok || len(p) < 4 || strings.Count(s, p) != 1 || strings.Contains("xxxxx", p) || strings.Trim(p, "abcdefghijklmnopqrstuvwxyz") != "" {
			return // only passwords that appear once, unescaped, can be looked for in the output
		}
		if strings.Contains(out, p) {
			t.Fatalf("Redact(%q) = %q keeps the password", s, out)
		}
	})
}
