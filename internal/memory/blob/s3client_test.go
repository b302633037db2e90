package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestS3CredentialsChain(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "credentials")
	if err := os.WriteFile(file, []byte("# comment\n[default]\naws_access_key_id = DEF\naws_secret_access_key = defsecret\n\n[profile work]\nAWS_ACCESS_KEY_ID=WORK\naws_secret_access_key= worksecret\naws_session_token = tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
	for _, tc := range []struct {
		env                 map[string]string
		id, secret, session string
	}{
		{env: nil, id: "DEF", secret: "defsecret"},
		{env: map[string]string{"AWS_PROFILE": "work"}, id: "WORK", secret: "worksecret", session: "tok"},
		{env: map[string]string{"AWS_PROFILE": "missing"}},
		{env: map[string]string{"AWS_ACCESS_KEY_ID": "ENV", "AWS_SECRET_ACCESS_KEY": "envsecret"}, id: "ENV", secret: "envsecret"},
		{env: map[string]string{"AWS_ACCESS_KEY": "OLD", "AWS_SECRET_KEY": "oldsecret"}, id: "OLD", secret: "oldsecret"},
		{env: map[string]string{"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none")}},
	} {
		t.Run(fmt.Sprint(tc.env), func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c, err := s3Credentials()
			if err != nil {
				t.Fatal(err)
			}
			if c.AccessKeyID != tc.id || c.SecretAccessKey != tc.secret || c.SessionToken != tc.session {
				t.Errorf("got %q/%q/%q, want %q/%q/%q", c.AccessKeyID, c.SecretAccessKey, c.SessionToken, tc.id, tc.secret, tc.session)
			}
		})
	}
}

func FuzzINISection(f *testing.F) {
	f.Add("[default]\naws_access_key_id = A\n", "default")
	f.Add("[profile x]\nk=v\n[x]\nk2 = v2\n;c\n#c\nnoequals\n", "x")
	f.Fuzz(func(t *testing.T, text, name string) {
		kv, err := iniSection(strings.NewReader(text), name)
		if err != nil {
			return // a line longer than the scanner's buffer
		}
		for k, v := range kv {
			if k != strings.ToLower(k) || k != strings.TrimSpace(k) || v != strings.TrimSpace(v) {
				t.Fatalf("key %q value %q not normalised", k, v)
			}
		}
	})
}

// fakeS3 answers what versitygw does not let a test provoke: listings in several pages,
// a multi-object delete that fails for one key, and a multipart upload whose completion
// answers 200 with an error in the body.
func fakeS3(t *testing.T) (*s3Client, *[]string) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=ID/") {
			t.Errorf("unsigned request %s %s", r.Method, r.URL)
		}
		q := r.URL.Query()
		switch {
		case r.Method == http.MethodGet && q.Get("list-type") == "2":
			if q.Get("continuation-token") == "" {
				fmt.Fprint(w, `<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>next 1</NextContinuationToken><Contents><Key>p/a</Key><Size>1</Size></Contents></ListBucketResult>`)
				return
			}
			if q.Get("continuation-token") != "next 1" {
				t.Errorf("continuation token %q", q.Get("continuation-token"))
			}
			fmt.Fprint(w, `<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>p/b</Key><Size>2</Size></Contents></ListBucketResult>`)
		case r.Method == http.MethodPost && q.Has("delete"):
			if r.Header.Get("Content-Md5") == "" {
				t.Error("multi-object delete without Content-MD5")
			}
			b, _ := io.ReadAll(r.Body)
			if strings.Contains(string(b), "<Key>locked</Key>") {
				fmt.Fprint(w, `<DeleteResult><Error><Key>gone</Key><Code>NoSuchKey</Code></Error><Error><Key>locked</Key><Code>AccessDenied</Code><Message>no</Message></Error></DeleteResult>`)
				return
			}
			fmt.Fprint(w, `<DeleteResult></DeleteResult>`)
		case r.Method == http.MethodPost && q.Has("uploads"):
			fmt.Fprint(w, `<InitiateMultipartUploadResult><UploadId>up1</UploadId></InitiateMultipartUploadResult>`)
		case r.Method == http.MethodPut && q.Get("uploadId") == "up1":
			w.Header().Set("ETag", `"e`+q.Get("partNumber")+`"`)
		case r.Method == http.MethodPost && q.Get("uploadId") == "up1":
			b, _ := io.ReadAll(r.Body)
			if !strings.Contains(string(b), `<Part><PartNumber>2</PartNumber><ETag>&#34;e2&#34;</ETag></Part>`) {
				t.Errorf("completion lists %s", b)
			}
			fmt.Fprint(w, `<Error><Code>InternalError</Code><Message>try again</Message></Error>`)
		case r.Method == http.MethodDelete && q.Get("uploadId") == "up1":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "ID")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	s, err := OpenS3(context.Background(), &url.URL{Scheme: "s3", Host: "bkt", Path: "/p", RawQuery: "endpoint=" + url.QueryEscape(srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	if !s.c.pathStyle || s.c.endpoint != u.Host {
		t.Fatalf("endpoint %s path style %v", s.c.endpoint, s.c.pathStyle)
	}
	return s.c, &seen
}

func TestS3ClientListsEveryPage(t *testing.T) {
	c, _ := fakeS3(t)
	var keys []string
	err := c.list(context.Background(), "bkt", "p/", "", func(o listedObject) error { keys = append(keys, o.Key); return nil })
	if err != nil || strings.Join(keys, ",") != "p/a,p/b" {
		t.Fatalf("listed %v, %v", keys, err)
	}
}

func TestS3ClientRemoveManyReportsAllButMissing(t *testing.T) {
	c, _ := fakeS3(t)
	if err := c.removeMany(context.Background(), "bkt", []string{"a", "gone"}); err != nil {
		t.Fatal(err)
	}
	err := c.removeMany(context.Background(), "bkt", []string{"gone", "locked"})
	var f *s3Failure
	if !errors.As(err, &f) || f.Code != "AccessDenied" || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("got %v, want the AccessDenied of key locked", err)
	}
}

func TestS3ClientMultipartFailureInBodyAborts(t *testing.T) {
	c, seen := fakeS3(t)
	body := strings.Repeat("x", 10)
	err := c.put(context.Background(), "bkt", "k", strings.NewReader(body), int64(len(body)), Sum([]byte(body)), 6)
	var f *s3Failure
	if !errors.As(err, &f) || f.Code != "InternalError" {
		t.Fatalf("got %v, want the InternalError the completion answered with status 200", err)
	}
	if last := (*seen)[len(*seen)-1]; last != "DELETE /bkt/k?uploadId=up1" {
		t.Fatalf("last request %q, want the upload aborted", last)
	}
}
