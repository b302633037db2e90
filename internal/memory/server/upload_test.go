package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/memory/backend"
	"github.com/relaydev/relay/internal/memory/sqlite"
)

// newBucketAPI serves a SQLite store whose bodies live in a directory bucket: the store that
// takes bodies as streams.
func newBucketAPI(t *testing.T) *testAPI {
	t.Helper()
	st, err := backend.Open(context.Background(), backend.Config{Home: t.TempDir(), Artifacts: "file://" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Store: st, Version: "test"})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); srv.Close(); st.Close() })
	a := &testAPI{t: t, srv: srv}
	if sq, ok := st.(*sqlite.SQLite); ok {
		a.store = sq
	}
	return a
}

// TestJSONUploadStreams sends JSON uploads bigger than the spool threshold, with escapes,
// non-ASCII text and the metadata before and after the content, to both kinds of store: the
// bytes read back are exactly encoding/json's decoding of the content.
func TestJSONUploadStreams(t *testing.T) {
	var text strings.Builder
	for i := 0; text.Len() < 3*spoolThreshold; i++ {
		text.WriteString("line \"quoted\"\tand tabbed, naïve café ☕ 😀 \\ slash / ")
		text.WriteString(strings.Repeat("x", i%97))
		text.WriteString("\n")
	}
	content := text.String()
	esc, _ := json.Marshal(content) // escapes < > & as \u003c too
	for name, a := range map[string]*testAPI{"sqlite": newTestAPI(t, ""), "bucket": newBucketAPI(t)} {
		t.Run(name, func(t *testing.T) {
			tid := a.newThread()
			for _, body := range []string{
				`{"name":"before.md","type":"markdown","content":` + string(esc) + `}`,
				`{"content":` + string(esc[:len(esc)-1]) + `after"` + `, "name":"after.md", "created_by":"agent-a", "source_refs":[]}`,
				`{"content_base64":"` + base64.StdEncoding.EncodeToString([]byte(content+"b64")) + `","name":"b64.md"}`,
			} {
				code, _, b := a.do("POST", "/threads/"+tid+"/artifacts", "application/json", []byte(body))
				if code != 201 {
					t.Fatalf("upload: %d %.300s", code, b)
				}
				var art struct {
					Ref, Name, Hash string
					Provenance      struct {
						CreatedBy string `json:"created_by"`
					}
				}
				json.Unmarshal(b, &art)
				code, _, got := a.do("GET", "/threads/"+tid+"/artifacts/"+art.Ref+"?raw=1", "", nil)
				want := content + map[string]string{"after.md": "after", "b64.md": "b64"}[art.Name]
				if code != 200 || string(got) != want {
					t.Fatalf("%s read back: %d, %d bytes, want %d", art.Name, code, len(got), len(want))
				}
				if sum := sha256.Sum256([]byte(want)); art.Hash != hex.EncodeToString(sum[:]) {
					t.Fatalf("%s hash %s, want the sha256 of its decoded content", art.Name, art.Hash)
				}
				if art.Name == "after.md" && art.Provenance.CreatedBy != "agent-a" {
					t.Fatalf("metadata after the content was lost: %+v", art)
				}
			}
		})
	}
}

// TestJSONUploadErrors: malformed content inside a large upload, too large a content, both
// content fields, and bad base64 fail with the messages the whole-body decoder gave.
func TestJSONUploadErrors(t *testing.T) {
	a := newTestAPI(t, "")
	tid := a.newThread()
	big := strings.Repeat("a", 2*spoolThreshold)
	for _, tc := range []struct {
		name, body string
		code       int
		msg        string
	}{
		{"bad escape late in content", `{"content":"` + big + `\q"}`, 400, "malformed JSON at byte " + itoa(len(`{"content":"`)+len(big)+2)},
		{"control character", "{\"content\":\"a\nb\"}", 400, `in string literal`},
		{"syntax error after content", `{"content":"` + big + `" "name":"x"}`, 400, "malformed JSON at byte " + itoa(len(`{"content":"`)+len(big)+3)},
		{"truncated", `{"content":"` + big, 400, "malformed JSON"},
		{"both", `{"content":"a","content_base64":"AA=="}`, 400, "send either content or content_base64, not both"},
		{"neither", `{"name":"x"}`, 400, "JSON artifact upload needs content"},
		{"bad base64", `{"content_base64":"!!"}`, 400, "content_base64 is not valid base64"},
		{"base64 cut short", `{"content_base64":"QUJ"}`, 400, "content_base64 is not valid base64"},
		{"bad base64 late", `{"content_base64":"` + strings.Repeat("QUJD", spoolThreshold/2) + `!"}`, 400, "content_base64 is not valid base64"},
		{"base64 too large", `{"content_base64":"` + strings.Repeat("QUJD", MaxArtifactBody/3+1) + `"}`, 413, "the artifact is larger than the limit of"},
		{"wrong type", `{"content":5}`, 400, `must be string, got number`},
		{"too large", `{"content":"` + strings.Repeat("a", MaxArtifactBody+1) + `"}`, 413, "the artifact is larger than the limit of"},
		{"data after", `{"content":"a"} {}`, 400, "request body has data after the JSON value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, b := a.do("POST", "/threads/"+tid+"/artifacts", "application/json", []byte(tc.body))
			if code != tc.code || !strings.Contains(string(b), tc.msg) {
				t.Fatalf("got %d %s; want %d with %q", code, b, tc.code, tc.msg)
			}
		})
	}
	// The body cap of a store without a bucket stays MaxArtifactJSON.
	code, _, b := a.do("POST", "/threads/"+tid+"/artifacts", "application/json", bytes.Repeat([]byte(" "), MaxArtifactJSON+1))
	if code != 413 || !strings.Contains(string(b), "request body is larger than the limit") {
		t.Fatalf("over the JSON cap: %d %s", code, b)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
