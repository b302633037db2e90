package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// PartSize is the multipart part size: bodies up to it go up in one PUT, larger ones in
// parts of this size (S3 needs at least 5 MiB per part).
const PartSize = 16 << 20

// S3 keeps bodies as objects <prefix>/sha256/<ab>/<sum> in a bucket of any S3-compatible
// store.
type S3 struct {
	c        *s3Client
	bucket   string
	prefix   string
	endpoint string
}

// OpenS3 opens s3://bucket/prefix. Query parameters: endpoint (host:port or an http(s)
// URL; default s3.amazonaws.com), region, and path_style=true for stores that do not serve
// bucket subdomains. Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or
// the shared credentials file and AWS_PROFILE), never from the URL, so a location can be
// printed and put in a shared config without leaking a secret. Nothing is contacted until
// first use; Ping checks the bucket.
func OpenS3(ctx context.Context, u *url.URL) (*S3, error) {
	bucket := u.Host
	if bucket == "" {
		return nil, fmt.Errorf("artifacts location %s has no bucket; use s3://bucket/prefix", Redact(u.String()))
	}
	if u.User != nil {
		return nil, fmt.Errorf("artifacts location %s carries credentials; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY instead", Redact(u.String()))
	}
	q := u.Query()
	endpoint := q.Get("endpoint")
	secure := true
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	if strings.Contains(endpoint, "://") {
		eu, err := url.Parse(endpoint)
		if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" {
			return nil, fmt.Errorf("artifacts endpoint %q is not host:port or an http(s) URL", endpoint)
		}
		secure = eu.Scheme == "https"
		endpoint = eu.Host
	}
	if v := q.Get("secure"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("artifacts location: secure=%q is not true or false", v)
		}
		secure = b
	}
	// AWS serves buckets as subdomains; other stores mostly by path. A bucket name with a
	// dot cannot be a subdomain under the store's TLS certificate.
	pathStyle := !strings.HasSuffix(hostOnly(endpoint), "amazonaws.com") || (secure && strings.Contains(bucket, "."))
	if v := q.Get("path_style"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("artifacts location: path_style=%q is not true or false", v)
		}
		pathStyle = b
	}
	creds, err := s3Credentials()
	if err != nil {
		return nil, err
	}
	scheme := "https"
	if !secure {
		scheme = "http"
	}
	c := &s3Client{
		http:   &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		scheme: scheme, endpoint: endpoint, pathStyle: pathStyle, creds: creds, region: q.Get("region"),
		// S3 signs the path as sent, not escaped twice as other AWS services do
		signer: v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }),
	}
	prefix := strings.Trim(path.Clean("/"+u.Path), "/")
	if prefix != "" {
		prefix += "/"
	}
	return &S3{c: c, bucket: bucket, prefix: prefix, endpoint: endpoint}, nil
}

func (s *S3) key(sum string) string { return s.prefix + objectName(sum) }

func (s *S3) String() string {
	return "s3://" + s.bucket + "/" + strings.TrimSuffix(s.prefix, "/") + " at " + s.endpoint
}

// Ping checks that the bucket exists and the credentials are accepted.
func (s *S3) Ping(ctx context.Context) error {
	ok, err := s.c.bucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("reach bucket %s at %s: %w", s.bucket, s.endpoint, s3Error(err))
	}
	if !ok {
		return fmt.Errorf("bucket %s does not exist at %s; create it (aws s3 mb s3://%s) or fix --artifacts", s.bucket, s.endpoint, s.bucket)
	}
	return nil
}

// Put implements Store. A body already present is not sent again (the dedupe across
// daemons); others go up in one PUT up to PartSize and as a multipart upload above, never
// buffered whole.
func (s *S3) Put(ctx context.Context, sum string, size int64, r io.Reader) (bool, error) {
	if !ValidSum(sum) {
		return false, fmt.Errorf("blob name %q is not a sha256", sum)
	}
	if _, err := s.Stat(ctx, sum); err == nil {
		return true, nil
	} else if !errors.Is(err, ErrNotFound) {
		return false, err
	}
	// The verifier fails the upload (and put aborts it) if the bytes are not the ones
	// named, so a content-addressed key can never hold other content; a single PUT is
	// also signed with sum, so the store itself refuses other bytes.
	body := Verify(io.NopCloser(r), sum, "the uploaded body")
	if err := s.c.put(ctx, s.bucket, s.key(sum), body, size, sum, PartSize); err != nil {
		return false, fmt.Errorf("upload artifact body %s to %s: %w", sum[:12], s, s3Error(err))
	}
	return false, nil
}

// Open implements Store.
func (s *S3) Open(ctx context.Context, sum string) (io.ReadCloser, error) {
	if !ValidSum(sum) {
		return nil, fmt.Errorf("blob name %q is not a sha256", sum)
	}
	obj, err := s.c.get(ctx, s.bucket, s.key(sum))
	if err != nil {
		return nil, fmt.Errorf("read artifact body %s from %s: %w", sum[:12], s, s3Error(err))
	}
	return Verify(obj, sum, "artifact body "+sum[:12]), nil
}

// Stat implements Store.
func (s *S3) Stat(ctx context.Context, sum string) (int64, error) {
	if !ValidSum(sum) {
		return 0, fmt.Errorf("blob name %q is not a sha256", sum)
	}
	size, err := s.c.stat(ctx, s.bucket, s.key(sum))
	if err != nil {
		return 0, fmt.Errorf("look up artifact body %s in %s: %w", sum[:12], s, s3Error(err))
	}
	return size, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, sum string) error {
	if !ValidSum(sum) {
		return fmt.Errorf("blob name %q is not a sha256", sum)
	}
	if err := s.c.remove(ctx, s.bucket, s.key(sum)); err != nil {
		return fmt.Errorf("delete artifact body %s from %s: %w", sum[:12], s, s3Error(err))
	}
	return nil
}

// s3Error maps a missing key to ErrNotFound and adds the next step to the common failures.
func s3Error(err error) error {
	var resp *s3Failure
	if !errors.As(err, &resp) {
		return err
	}
	switch resp.Code {
	case "NoSuchKey", "NotFound":
		return fmt.Errorf("%w (%s)", ErrNotFound, resp.Code)
	case "NoSuchBucket":
		return fmt.Errorf("%w: the bucket does not exist; create it or fix --artifacts", err)
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch":
		return fmt.Errorf("%w: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", err)
	}
	if resp.Status == http.StatusNotFound && resp.Code == "" {
		return fmt.Errorf("%w (404)", ErrNotFound)
	}
	return err
}

// List implements Collectable.
func (s *S3) List(ctx context.Context, fn func(Object) error) error {
	prefix := s.prefix + "sha256/"
	var fnErr error
	err := s.c.list(ctx, s.bucket, prefix, "", func(o listedObject) error {
		rest := strings.TrimPrefix(o.Key, prefix)
		sum := path.Base(rest)
		if !ValidSum(sum) || rest != sum[:2]+"/"+sum {
			return nil // not a body this store wrote
		}
		fnErr = fn(Object{Sum: sum, Size: o.Size, Modified: o.LastModified})
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", s, s3Error(err))
	}
	return ctx.Err()
}

// DeleteMany implements Collectable, with S3's multi-object delete (1000 keys a request).
func (s *S3) DeleteMany(ctx context.Context, sums []string) error {
	keys := make([]string, 0, len(sums))
	for _, sum := range sums {
		if !ValidSum(sum) {
			return fmt.Errorf("blob name %q is not a sha256", sum)
		}
		keys = append(keys, s.key(sum))
	}
	if err := s.c.removeMany(ctx, s.bucket, keys); err != nil {
		return fmt.Errorf("delete from %s: %w", s, s3Error(err))
	}
	return nil
}

// Mark implements Collectable.
func (s *S3) Mark(ctx context.Context, id string) ([]string, error) {
	if !ValidStoreID(id) {
		return nil, fmt.Errorf("store id %q cannot name a marker", id)
	}
	if err := s.c.put(ctx, s.bucket, s.prefix+markerName(id), strings.NewReader(""), 0, emptySHA256, PartSize); err != nil {
		return nil, fmt.Errorf("mark %s: %w", s, s3Error(err))
	}
	var ids []string
	err := s.c.list(ctx, s.bucket, s.prefix+"stores/", "/", func(o listedObject) error {
		if id := strings.TrimPrefix(o.Key, s.prefix+"stores/"); ValidStoreID(id) {
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the store markers of %s: %w", s, s3Error(err))
	}
	return ids, nil
}

// hostOnly is endpoint without its port.
func hostOnly(endpoint string) string {
	if h, _, err := net.SplitHostPort(endpoint); err == nil {
		return h
	}
	return endpoint
}
