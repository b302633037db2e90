package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// PartSize is the multipart part size: bodies up to it go up in one PUT, larger ones in
// parts of this size (S3 needs at least 5 MiB per part).
const PartSize = 16 << 20

// S3 keeps bodies as objects <prefix>/sha256/<ab>/<sum> in a bucket of any S3-compatible
// store.
type S3 struct {
	c        *minio.Client
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
	lookup := minio.BucketLookupAuto
	if v := q.Get("path_style"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("artifacts location: path_style=%q is not true or false", v)
		}
		if b {
			lookup = minio.BucketLookupPath
		} else {
			lookup = minio.BucketLookupDNS
		}
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{Profile: os.Getenv("AWS_PROFILE")},
	})
	c, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: secure, Region: q.Get("region"), BucketLookup: lookup})
	if err != nil {
		return nil, fmt.Errorf("artifacts location %s: %w", Redact(u.String()), err)
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
	ok, err := s.c.BucketExists(ctx, s.bucket)
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
	// The verifier fails the upload (and minio-go aborts it) if the bytes are not the ones
	// named, so a content-addressed key can never hold other content.
	body := Verify(io.NopCloser(r), sum, "the uploaded body")
	_, err := s.c.PutObject(ctx, s.bucket, s.key(sum), body, size, minio.PutObjectOptions{
		PartSize:    PartSize,
		ContentType: "application/octet-stream",
	})
	if err != nil {
		return false, fmt.Errorf("upload artifact body %s to %s: %w", sum[:12], s, s3Error(err))
	}
	return false, nil
}

// Open implements Store.
func (s *S3) Open(ctx context.Context, sum string) (io.ReadCloser, error) {
	if !ValidSum(sum) {
		return nil, fmt.Errorf("blob name %q is not a sha256", sum)
	}
	obj, err := s.c.GetObject(ctx, s.bucket, s.key(sum), minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("read artifact body %s from %s: %w", sum[:12], s, s3Error(err))
	}
	if _, err := obj.Stat(); err != nil {
		obj.Close()
		return nil, fmt.Errorf("read artifact body %s from %s: %w", sum[:12], s, s3Error(err))
	}
	return Verify(obj, sum, "artifact body "+sum[:12]), nil
}

// Stat implements Store.
func (s *S3) Stat(ctx context.Context, sum string) (int64, error) {
	if !ValidSum(sum) {
		return 0, fmt.Errorf("blob name %q is not a sha256", sum)
	}
	info, err := s.c.StatObject(ctx, s.bucket, s.key(sum), minio.StatObjectOptions{})
	if err != nil {
		return 0, fmt.Errorf("look up artifact body %s in %s: %w", sum[:12], s, s3Error(err))
	}
	return info.Size, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, sum string) error {
	if !ValidSum(sum) {
		return fmt.Errorf("blob name %q is not a sha256", sum)
	}
	if err := s.c.RemoveObject(ctx, s.bucket, s.key(sum), minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("delete artifact body %s from %s: %w", sum[:12], s, s3Error(err))
	}
	return nil
}

// s3Error maps a missing key to ErrNotFound and adds the next step to the common failures.
func s3Error(err error) error {
	resp := minio.ToErrorResponse(err)
	switch resp.Code {
	case "NoSuchKey", "NotFound":
		return fmt.Errorf("%w (%s)", ErrNotFound, resp.Code)
	case "NoSuchBucket":
		return fmt.Errorf("%w: the bucket does not exist; create it or fix --artifacts", err)
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch":
		return fmt.Errorf("%w: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", err)
	}
	if resp.StatusCode == 404 && resp.Code == "" {
		return fmt.Errorf("%w (404)", ErrNotFound)
	}
	return err
}

// List implements Collectable.
func (s *S3) List(ctx context.Context, fn func(Object) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops minio-go's listing goroutine when fn fails
	prefix := s.prefix + "sha256/"
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return fmt.Errorf("list %s: %w", s, s3Error(o.Err))
		}
		rest := strings.TrimPrefix(o.Key, prefix)
		sum := path.Base(rest)
		if !ValidSum(sum) || rest != sum[:2]+"/"+sum {
			continue // not a body this store wrote
		}
		if err := fn(Object{Sum: sum, Size: o.Size, Modified: o.LastModified}); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// DeleteMany implements Collectable, with S3's multi-object delete (1000 keys a request).
func (s *S3) DeleteMany(ctx context.Context, sums []string) error {
	objs := make(chan minio.ObjectInfo, len(sums))
	for _, sum := range sums {
		if !ValidSum(sum) {
			return fmt.Errorf("blob name %q is not a sha256", sum)
		}
		objs <- minio.ObjectInfo{Key: s.key(sum)}
	}
	close(objs)
	for e := range s.c.RemoveObjects(ctx, s.bucket, objs, minio.RemoveObjectsOptions{}) {
		if e.Err != nil && !errors.Is(s3Error(e.Err), ErrNotFound) {
			return fmt.Errorf("delete %s from %s: %w", e.ObjectName, s, s3Error(e.Err))
		}
	}
	return nil
}

// Mark implements Collectable.
func (s *S3) Mark(ctx context.Context, id string) ([]string, error) {
	if !ValidStoreID(id) {
		return nil, fmt.Errorf("store id %q cannot name a marker", id)
	}
	_, err := s.c.PutObject(ctx, s.bucket, s.prefix+markerName(id), strings.NewReader(""), 0, minio.PutObjectOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return nil, fmt.Errorf("mark %s: %w", s, s3Error(err))
	}
	var ids []string
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + "stores/"}) {
		if o.Err != nil {
			return nil, fmt.Errorf("list the store markers of %s: %w", s, s3Error(o.Err))
		}
		if id := strings.TrimPrefix(o.Key, s.prefix+"stores/"); ValidStoreID(id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
