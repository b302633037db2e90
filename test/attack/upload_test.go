package attack

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
)

// TestJSONUploadHostile sends JSON artifact uploads to the real daemon: large content with
// the metadata after it reads back byte for byte; a malformed escape deep inside a large
// content, a body over the cap and content over the artifact limit are refused, add no
// artifact and leave no spooled file behind.
func TestJSONUploadHostile(t *testing.T) {
	s := newSandbox(t)
	tmp := t.TempDir()
	d := startDaemon(t, s, "TMPDIR="+tmp)
	tid := d.NewThread(t, "uploads")
	count := func() float64 {
		var th struct {
			N float64 `json:"artifact_count"`
		}
		d.JSON(t, "GET", "/threads/"+tid, nil, &th)
		return th.N
	}

	text := strings.Repeat("a line with \"quotes\", a tab\tand ünïcödé 😀\n", 100_000) // ~4.6 MB
	esc, _ := json.Marshal(text)
	st, b := d.Do(t, "POST", "/threads/"+tid+"/artifacts", strings.NewReader(`{"content":`+string(esc)+`,"name":"big.md","created_by":"agent-a"}`), "Content-Type", "application/json")
	if st != 201 {
		t.Fatalf("JSON upload: %d %.300s", st, b)
	}
	var art struct{ Ref string }
	json.Unmarshal(b, &art)
	if st, got := d.Do(t, "GET", "/threads/"+tid+"/artifacts/"+art.Ref+"?raw=1", nil); st != 200 || string(got) != text {
		t.Fatalf("read back: %d, %d bytes, want %d", st, len(got), len(text))
	}
	before := count()

	for _, tc := range []struct {
		name string
		body io.Reader
		want int
		msg  string
	}{
		{"bad escape after 4 MB", strings.NewReader(`{"name":"x","content":"` + strings.Repeat("b", 4<<20) + `\x"}`), 400, "malformed JSON at byte"},
		{"content over 50 MiB", io.MultiReader(strings.NewReader(`{"content":"`), bytes.NewReader(bytes.Repeat([]byte("c"), 51<<20)), strings.NewReader(`"}`)), 413, "the artifact is larger than the limit"},
		{"body over 70 MiB", io.MultiReader(strings.NewReader(`{"content":"`), bytes.NewReader(bytes.Repeat([]byte(`\n`), 36<<20)), strings.NewReader(`"}`)), 413, "request body is larger than the limit"},
	} {
		st, b := d.Do(t, "POST", "/threads/"+tid+"/artifacts", tc.body, "Content-Type", "application/json")
		if st != tc.want || !strings.Contains(string(b), tc.msg) {
			t.Errorf("%s: %d %.300s; want %d with %q", tc.name, st, b, tc.want, tc.msg)
		}
	}
	if n := count(); n != before {
		t.Errorf("refused uploads changed the artifact count from %v to %v", before, n)
	}
	left, _ := os.ReadDir(tmp)
	for _, e := range left {
		if strings.HasPrefix(e.Name(), "relay-body-") {
			t.Errorf("a refused upload left its spool file %s", e.Name())
		}
	}
}
