package server

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/sqlite"
)

// TestSSEFrameCannotBeForged: whatever an event's type, id or data hold, a
// frame parses back as exactly one event with the data intact.
func TestSSEFrameCannotBeForged(t *testing.T) {
	for _, tc := range []struct{ id, event, data string }{
		{"1", "cap.invoked", `{"a":1}`},
		{"2", "x\nevent: admin\ndata: {\"pwned\":true}\n", `{}`},
		{"3", "x\r\nid: 999", `{}`},
		{"4", "ok", "{\n\"a\":\n1}\r\n"},
		{"5\nevent: admin", "ok", `{}`},
		{"6", "ok", "line1\rdata: forged\r\n\r\nevent: admin"},
		{"7", "", `{}`},
		{"8", "\x00", `{}`},
	} {
		frame := sseFrame(tc.id, tc.event, []byte(tc.data))
		var events int
		var dataLines []string
		var gotEvent string
		sc := bufio.NewScanner(bytes.NewReader(frame))
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				events++
			case strings.HasPrefix(line, "event: "):
				gotEvent = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				dataLines = append(dataLines, strings.TrimPrefix(line, "data: "))
			case strings.HasPrefix(line, "id: "):
			default:
				t.Errorf("%q: unexpected line %q in %q", tc.event, line, frame)
			}
		}
		if events != 1 || bytes.Count(frame, []byte("\n\n")) != 1 || !bytes.HasSuffix(frame, []byte("\n\n")) {
			t.Errorf("event %q id %q: frame %q is not exactly one event", tc.event, tc.id, frame)
		}
		if gotEvent != "invalid" && gotEvent != tc.event {
			t.Errorf("event %q became %q", tc.event, gotEvent)
		}
		want := strings.ReplaceAll(strings.ReplaceAll(tc.data, "\r\n", "\n"), "\r", "\n")
		if got := strings.Join(dataLines, "\n"); got != want {
			t.Errorf("data %q came back as %q", want, got)
		}
	}
}

// TestServedMime: no stored mime makes a browser run the artifact or sniff it.
func TestServedMime(t *testing.T) {
	for in, want := range map[string]string{
		"text/plain; charset=utf-8":          "text/plain; charset=utf-8",
		"text/markdown; charset=utf-8":       "text/markdown; charset=utf-8",
		"application/json":                   "application/json",
		"image/png":                          "image/png",
		"text/html; charset=utf-8":           "text/plain; charset=utf-8",
		"text/html":                          "text/plain; charset=utf-8",
		"image/svg+xml":                      "text/plain; charset=utf-8",
		"application/xhtml+xml":              "text/plain; charset=utf-8",
		"application/javascript":             "text/plain; charset=utf-8",
		"text/xml":                           "text/plain; charset=utf-8",
		"application/x-shockwave-flash; a=b": "application/x-shockwave-flash; a=b",
		"TEXT/HTML":                          "application/octet-stream",
		"text/html\r\nSet-Cookie: a":         "application/octet-stream",
		"nonsense":                           "application/octet-stream",
		"":                                   "application/octet-stream",
	} {
		if got := servedMime(in); got != want {
			t.Errorf("servedMime(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCorruptStateReadsAreNot500: a store that already holds a snapshot of []
// or null (imported before bundles were validated) answers reads of that
// thread with a 422 that names the thread, never a 500, and other threads
// read as before.
func TestCorruptStateReadsAreNot500(t *testing.T) {
	for _, doc := range []string{`[]`, `null`, `"x"`, `{}`} {
		a := newTestAPI(t, "tok")
		ctx := context.Background()
		bad, err := a.store.CreateThread(ctx, memory.CreateThreadParams{Name: "bad"})
		if err != nil {
			t.Fatal(err)
		}
		good, _ := a.store.CreateThread(ctx, memory.CreateThreadParams{Name: "good"})
		if err := a.store.WriteTx(ctx, func(tx sqlite.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE state_snapshots SET doc = ? WHERE thread_id = ?`, []byte(doc), bad.ID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		a.store.Forget(bad.ID)
		for _, p := range []string{"/state", "/state/header", "/state?version=1"} {
			st, _, body := a.do("GET", "/threads/"+bad.ID+p, "", nil)
			if st != http.StatusUnprocessableEntity || !strings.Contains(string(body), "corrupt_state") || !strings.Contains(string(body), bad.ID) {
				t.Errorf("snapshot %s: GET %s: %d %s", doc, p, st, body)
			}
		}
		if st, _, body := a.do("GET", "/threads/"+good.ID+"/state", "", nil); st != 200 {
			t.Errorf("the other thread: %d %s", st, body)
		}
	}
}
