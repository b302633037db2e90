package blob

// The S3 calls relay makes (HEAD, GET, PUT, DELETE of one object, multipart upload,
// ListObjectsV2, multi-object delete), written over net/http with AWS's own SigV4 signer.
// Hand-written because minio-go, which did them well, links a chain of packages whose
// inits (S3 name regexps, CPU feature probes, an xid machine-id read, checksum tables)
// cost every relay command about a sixth of its start-up, `relay version` included.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// emptySHA256 is the payload hash of a request without a body.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

type s3Client struct {
	http      *http.Client
	scheme    string // http or https
	endpoint  string // host[:port]
	pathStyle bool
	creds     aws.Credentials // empty: anonymous requests
	signer    *v4.Signer

	regionOnce sync.Once
	region     string // given, or found with GetBucketLocation on first use
}

// s3Failure is an S3 error answer.
type s3Failure struct {
	Status  int
	Code    string
	Message string
}

func (e *s3Failure) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Code != "" {
		return fmt.Sprintf("%s (%s, HTTP %d)", msg, e.Code, e.Status)
	}
	return fmt.Sprintf("%s (HTTP %d)", msg, e.Status)
}

// s3Credentials follows minio-go's chain as relay used it: AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY / AWS_SECRET_KEY), with AWS_SESSION_TOKEN,
// then the shared credentials file ($AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials,
// profile $AWS_PROFILE or default). None: anonymous requests.
func s3Credentials() (aws.Credentials, error) {
	id := cmpEnv("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY")
	secret := cmpEnv("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY")
	if id != "" && secret != "" {
		return aws.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: os.Getenv("AWS_SESSION_TOKEN")}, nil
	}
	file := os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
	if file == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return aws.Credentials{}, nil
		}
		file = filepath.Join(home, ".aws", "credentials")
	}
	profile := cmp(os.Getenv("AWS_PROFILE"), "default")
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return aws.Credentials{}, nil
	}
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("read the AWS credentials file: %w", err)
	}
	defer f.Close()
	kv, err := iniSection(io.LimitReader(f, 1<<20), profile)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("read the AWS credentials file %s: %w", file, err)
	}
	if kv["aws_access_key_id"] == "" || kv["aws_secret_access_key"] == "" {
		return aws.Credentials{}, nil
	}
	return aws.Credentials{AccessKeyID: kv["aws_access_key_id"], SecretAccessKey: kv["aws_secret_access_key"], SessionToken: kv["aws_session_token"]}, nil
}

// iniSection returns the key = value pairs of [name] in the AWS credentials file format
// (hand-written: the format is a dozen lines of it, and the INI libraries bring their own
// init cost for it).
func iniSection(r io.Reader, name string) (map[string]string, error) {
	kv := map[string]string{}
	in := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			sec := strings.TrimSpace(strings.Trim(line, "[]"))
			in = sec == name || sec == "profile "+name
		case in:
			k, v, ok := strings.Cut(line, "=")
			if ok {
				kv[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
		}
	}
	return kv, sc.Err()
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func cmpEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// objectURL is the URL of bucket/key (key "" for the bucket) with query q.
func (c *s3Client) objectURL(bucket, key string, q url.Values) *url.URL {
	u := &url.URL{Scheme: c.scheme, Host: c.endpoint, Path: "/" + bucket + "/" + key}
	if !c.pathStyle {
		u.Host = bucket + "." + c.endpoint
		u.Path = "/" + key
	}
	if q != nil {
		u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
	}
	return u
}

// do signs and sends one request. body is nil, a *bytes.Reader (then the request is
// retried on a connection error or a 500/503, as the body can be sent again), or a
// stream of size bytes whose sha256 is payload. A non-2xx answer comes back as
// *s3Failure, its body read and closed.
func (c *s3Client) do(ctx context.Context, method, bucket, key string, q url.Values, hdr http.Header, body io.Reader, size int64, payload string) (*http.Response, error) {
	if payload == "" {
		payload = emptySHA256
	}
	region := c.bucketRegion(ctx, bucket)
	rewindable, _ := body.(*bytes.Reader)
	for attempt := 0; ; attempt++ {
		if rewindable != nil {
			if _, err := rewindable.Seek(0, io.SeekStart); err != nil {
				return nil, err
			}
		}
		req, err := http.NewRequestWithContext(ctx, method, c.objectURL(bucket, key, q).String(), body)
		if err != nil {
			return nil, err
		}
		if body != nil {
			req.ContentLength = size
			if size == 0 {
				req.Body = http.NoBody
			}
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		req.Header.Set("X-Amz-Content-Sha256", payload)
		if c.creds.AccessKeyID != "" {
			if err := c.signer.SignHTTP(ctx, c.creds, req, payload, "s3", region, time.Now()); err != nil {
				return nil, err
			}
		}
		resp, err := c.http.Do(req)
		retry := attempt < 2 && (body == nil || rewindable != nil) && ctx.Err() == nil
		if err != nil {
			if retry {
				continue
			}
			return nil, err
		}
		if resp.StatusCode/100 == 2 {
			return resp, nil
		}
		fail := readFailure(resp)
		if retry && (resp.StatusCode == http.StatusInternalServerError || resp.StatusCode == http.StatusServiceUnavailable) {
			continue
		}
		return nil, fail
	}
}

func readFailure(resp *http.Response) *s3Failure {
	defer resp.Body.Close()
	f := &s3Failure{Status: resp.StatusCode}
	var e struct {
		Code    string
		Message string
	}
	if b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody)); xml.Unmarshal(b, &e) == nil {
		f.Code, f.Message = e.Code, e.Message
	}
	if f.Code == "" { // HEAD answers carry no body
		switch resp.StatusCode {
		case http.StatusNotFound:
			f.Code = "NotFound"
		case http.StatusForbidden:
			f.Code = "AccessDenied"
		}
	}
	return f
}

// bucketRegion is the region given in the location, else asked of the bucket once on an
// AWS endpoint (a request signed for the wrong region is refused there), else us-east-1,
// which every other S3-compatible store accepts.
func (c *s3Client) bucketRegion(ctx context.Context, bucket string) string {
	c.regionOnce.Do(func() {
		if c.region != "" {
			return
		}
		c.region = "us-east-1"
		if !strings.HasSuffix(c.endpoint, "amazonaws.com") || c.creds.AccessKeyID == "" {
			return
		}
		u := &url.URL{Scheme: c.scheme, Host: c.endpoint, Path: "/" + bucket + "/", RawQuery: "location="}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return
		}
		req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
		if c.signer.SignHTTP(ctx, c.creds, req, emptySHA256, "s3", "us-east-1", time.Now()) != nil {
			return
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		var loc struct {
			Region string `xml:",chardata"`
		}
		if b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody)); resp.StatusCode == http.StatusOK && xml.Unmarshal(b, &loc) == nil && loc.Region != "" {
			c.region = strings.TrimSpace(loc.Region)
		}
	})
	return c.region
}

func (c *s3Client) bucketExists(ctx context.Context, bucket string) (bool, error) {
	resp, err := c.do(ctx, http.MethodHead, bucket, "", nil, nil, nil, 0, "")
	var f *s3Failure
	if errors.As(err, &f) && (f.Code == "NoSuchBucket" || f.Status == http.StatusNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	return true, nil
}

// stat returns an object's size.
func (c *s3Client) stat(ctx context.Context, bucket, key string) (int64, error) {
	resp, err := c.do(ctx, http.MethodHead, bucket, key, nil, nil, nil, 0, "")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.ContentLength, nil
}

func (c *s3Client) get(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	resp, err := c.do(ctx, http.MethodGet, bucket, key, nil, nil, nil, 0, "")
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

func (c *s3Client) remove(ctx context.Context, bucket, key string) error {
	resp, err := c.do(ctx, http.MethodDelete, bucket, key, nil, nil, nil, 0, "")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

var octetStream = http.Header{"Content-Type": {"application/octet-stream"}}

// put uploads size bytes from r whose sha256 is sum (the payload is signed with it, so
// the store refuses other bytes): in one PUT up to partSize, as a multipart upload above,
// reading partSize bytes at a time.
func (c *s3Client) put(ctx context.Context, bucket, key string, r io.Reader, size int64, sum string, partSize int64) error {
	if size <= partSize {
		resp, err := c.do(ctx, http.MethodPut, bucket, key, nil, octetStream, r, size, sum)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	resp, err := c.do(ctx, http.MethodPost, bucket, key, url.Values{"uploads": {""}}, octetStream, nil, 0, "")
	if err != nil {
		return err
	}
	var started struct {
		UploadID string `xml:"UploadId"`
	}
	err = decodeXML(resp, &started)
	if err == nil && started.UploadID == "" {
		err = errors.New("the store started a multipart upload without an upload id")
	}
	if err != nil {
		return err
	}
	if err := c.putParts(ctx, bucket, key, started.UploadID, r, size, partSize); err != nil {
		// best effort: a failed upload's parts would otherwise be kept (and billed)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if resp, aerr := c.do(ctx, http.MethodDelete, bucket, key, url.Values{"uploadId": {started.UploadID}}, nil, nil, 0, ""); aerr == nil {
			resp.Body.Close()
		}
		return err
	}
	return nil
}

type completedPart struct {
	PartNumber int
	ETag       string
}

func (c *s3Client) putParts(ctx context.Context, bucket, key, uploadID string, r io.Reader, size, partSize int64) error {
	buf := make([]byte, partSize)
	var parts []completedPart
	for n, left := 1, size; left > 0; n++ {
		b := buf[:min(left, partSize)]
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		left -= int64(len(b))
		h := sha256.Sum256(b)
		q := url.Values{"partNumber": {strconv.Itoa(n)}, "uploadId": {uploadID}}
		resp, err := c.do(ctx, http.MethodPut, bucket, key, q, nil, bytes.NewReader(b), int64(len(b)), hex.EncodeToString(h[:]))
		if err != nil {
			return err
		}
		resp.Body.Close()
		parts = append(parts, completedPart{PartNumber: n, ETag: resp.Header.Get("ETag")})
	}
	if n, err := r.Read(make([]byte, 1)); n > 0 || (err != nil && err != io.EOF) {
		return cmpErr(err, fmt.Errorf("the body is longer than its size, %d bytes", size))
	}
	body, err := xml.Marshal(struct {
		XMLName xml.Name        `xml:"CompleteMultipartUpload"`
		Parts   []completedPart `xml:"Part"`
	}{Parts: parts})
	if err != nil {
		return err
	}
	h := sha256.Sum256(body)
	resp, err := c.do(ctx, http.MethodPost, bucket, key, url.Values{"uploadId": {uploadID}}, nil, bytes.NewReader(body), int64(len(body)), hex.EncodeToString(h[:]))
	if err != nil {
		return err
	}
	// S3 may answer 200 and put the failure in the body.
	var done struct {
		XMLName xml.Name
		Code    string
		Message string
	}
	if err := decodeXML(resp, &done); err != nil {
		return err
	}
	if done.XMLName.Local == "Error" {
		return &s3Failure{Status: http.StatusOK, Code: done.Code, Message: done.Message}
	}
	return nil
}

func cmpErr(a, b error) error {
	if a != nil && a != io.EOF {
		return a
	}
	return b
}

func decodeXML(resp *http.Response, v any) error {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if err := xml.Unmarshal(b, v); err != nil {
		return fmt.Errorf("the store's answer is not the XML S3 sends: %w", err)
	}
	return nil
}

type listedObject struct {
	Key          string
	Size         int64
	LastModified time.Time
}

// list calls fn for every object under prefix, page by page (ListObjectsV2); with
// delimiter "/" only those directly under it.
func (c *s3Client) list(ctx context.Context, bucket, prefix, delimiter string, fn func(listedObject) error) error {
	token := ""
	for {
		q := url.Values{"list-type": {"2"}, "prefix": {prefix}}
		if delimiter != "" {
			q.Set("delimiter", delimiter)
		}
		if token != "" {
			q.Set("continuation-token", token)
		}
		resp, err := c.do(ctx, http.MethodGet, bucket, "", q, nil, nil, 0, "")
		if err != nil {
			return err
		}
		var page struct {
			IsTruncated           bool
			NextContinuationToken string
			Contents              []listedObject
		}
		if err := decodeXML(resp, &page); err != nil {
			return err
		}
		for _, o := range page.Contents {
			if err := fn(o); err != nil {
				return err
			}
		}
		if !page.IsTruncated || page.NextContinuationToken == "" || page.NextContinuationToken == token {
			return nil
		}
		token = page.NextContinuationToken
	}
}

// removeMany deletes keys with multi-object deletes of at most 1,000 keys; a key already
// gone is not an error.
func (c *s3Client) removeMany(ctx context.Context, bucket string, keys []string) error {
	type object struct{ Key string }
	for len(keys) > 0 {
		batch := keys[:min(len(keys), 1000)]
		keys = keys[len(batch):]
		req := struct {
			XMLName xml.Name `xml:"Delete"`
			Quiet   bool
			Objects []object `xml:"Object"`
		}{Quiet: true}
		for _, k := range batch {
			req.Objects = append(req.Objects, object{k})
		}
		body, err := xml.Marshal(req)
		if err != nil {
			return err
		}
		h := sha256.Sum256(body)
		m := md5.Sum(body) // S3 requires Content-MD5 on a multi-object delete
		hdr := http.Header{"Content-Md5": {base64.StdEncoding.EncodeToString(m[:])}, "Content-Type": {"application/xml"}}
		resp, err := c.do(ctx, http.MethodPost, bucket, "", url.Values{"delete": {""}}, hdr, bytes.NewReader(body), int64(len(body)), hex.EncodeToString(h[:]))
		if err != nil {
			return err
		}
		var res struct {
			Errors []struct{ Key, Code, Message string } `xml:"Error"`
		}
		if err := decodeXML(resp, &res); err != nil {
			return err
		}
		for _, e := range res.Errors {
			if e.Code != "NoSuchKey" {
				return fmt.Errorf("delete %s: %w", e.Key, &s3Failure{Status: http.StatusOK, Code: e.Code, Message: e.Message})
			}
		}
	}
	return nil
}
