package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	rawInit        = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	rawInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	rawList        = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
)

// serveLines runs one stdio session over the given input lines and returns
// every line the server wrote, once the session has ended.
func serveLines(t *testing.T, jobs Jobs, in io.Reader, maxFrame int) []map[string]any {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := New(jobs).Run(ctx, &Stdio{In: in, Out: &out, MaxFrame: maxFrame})
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("session: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the session did not end at EOF")
	}
	var msgs []map[string]any
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("server wrote a line that is not JSON: %q", sc.Text())
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func lines(ls ...string) io.Reader { return strings.NewReader(strings.Join(ls, "\n") + "\n") }

func byID(t *testing.T, msgs []map[string]any, id float64) map[string]any {
	t.Helper()
	for _, m := range msgs {
		if m["id"] == id {
			return m
		}
	}
	t.Fatalf("no reply with id %v in %v", id, msgs)
	return nil
}

// The case: printf '%s\n' "$INIT" "$INITIALIZED" "$LIST" | relay mcp
// answered nothing, because the SDK drops requests in flight at EOF.
func TestStdioRepliesToEverythingReadBeforeEOF(t *testing.T) {
	for i := range 20 {
		msgs := serveLines(t, Jobs{Memory: newFakeMemory()}, lines(rawInit, rawInitialized, rawList), 0)
		if len(msgs) != 2 {
			t.Fatalf("run %d: %d replies, want 2: %v", i, len(msgs), msgs)
		}
		if byID(t, msgs, 2)["result"] == nil {
			t.Fatalf("run %d: tools/list has no result: %v", i, msgs[1])
		}
	}
}

// eofReader closes seen when the input is used up.
type eofReader struct {
	r    io.Reader
	once sync.Once
	seen chan struct{}
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if errors.Is(err, io.EOF) {
		e.once.Do(func() { close(e.seen) })
	}
	return n, err
}

// A tool still running when stdin ends finishes and its result is written.
func TestStdioWaitsForACallRunningAtEOF(t *testing.T) {
	in := &eofReader{r: lines(rawInit, rawInitialized, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask","arguments":{"prompt":"q"}}}`), seen: make(chan struct{})}
	jobs := Jobs{Memory: newFakeMemory(), Ask: func(ctx context.Context, a AskArgs) ([]Answer, error) {
		<-in.seen // answer only after the host has closed stdin
		return []Answer{{Backend: "codex", Answer: "AFTER-EOF"}}, nil
	}}
	msgs := serveLines(t, jobs, in, 0)
	res, _ := json.Marshal(byID(t, msgs, 7)["result"])
	if !strings.Contains(string(res), "AFTER-EOF") {
		t.Fatalf("the call running at EOF was not answered: %s", res)
	}
}

// Issue 22 row 13: one message over the frame limit is an error result, and
// the session goes on (the SDK ends it).
func TestStdioTooLargeCallIsAnErrorResult(t *testing.T) {
	big := strings.Repeat("x", 5000)
	cases := map[string]string{
		"id first": `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"edit_files","arguments":{"new_string":"` + big + `"}}}`,
		"id last":  `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"edit_files","arguments":{"new_string":"` + big + `","x":{"id":9}}},"id":3}`,
		"escapes":  `{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"s":"\"id\":4,\\"}},"id":3,"x":"` + big + `"}`,
	}
	for name, call := range cases {
		t.Run(name, func(t *testing.T) {
			msgs := serveLines(t, Jobs{Memory: newFakeMemory()}, lines(rawInit, rawInitialized, call, rawList), 1024)
			if len(msgs) != 3 {
				t.Fatalf("%d replies, want 3: %v", len(msgs), msgs)
			}
			res, _ := byID(t, msgs, 3)["result"].(map[string]any)
			text, _ := json.Marshal(res["content"])
			if res["isError"] != true || !strings.Contains(string(text), "reads at most 1024 bytes per message") || !strings.Contains(string(text), "Try: ") {
				t.Fatalf("the large call's reply: %v", msgs)
			}
			if byID(t, msgs, 2)["result"] == nil {
				t.Fatal("the session did not go on after the large call")
			}
		})
	}
}

func TestStdioTooLargeOtherRequestIsAJSONRPCError(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":"big","method":"resources/read","params":{"uri":"` + strings.Repeat("u", 3000) + `"}}`
	note := `{"jsonrpc":"2.0","method":"notifications/x","params":{"p":"` + strings.Repeat("n", 3000) + `"}}`
	msgs := serveLines(t, Jobs{Memory: newFakeMemory()}, lines(rawInit, rawInitialized, big, note, rawList), 1024)
	if len(msgs) != 3 {
		t.Fatalf("%d replies, want 3 (none for the notification): %v", len(msgs), msgs)
	}
	var bigReply map[string]any
	for _, m := range msgs {
		if m["id"] == "big" {
			bigReply = m
		}
	}
	e, _ := bigReply["error"].(map[string]any)
	if e == nil || e["code"] != float64(codeInvalidRequest) {
		t.Fatalf("reply to the large request: %v", bigReply)
	}
	byID(t, msgs, 2)
}

// A line that is not JSON, or JSON that is not JSON-RPC, ends the SDK's
// session; relay answers it and goes on.
func TestStdioBadLinesDoNotEndTheSession(t *testing.T) {
	msgs := serveLines(t, Jobs{Memory: newFakeMemory()}, lines(rawInit, "", "not json", `{"foo":1}`, rawInitialized, rawList), 0)
	if len(msgs) != 4 {
		t.Fatalf("%d replies, want 4: %v", len(msgs), msgs)
	}
	codes := map[float64]bool{}
	for _, m := range msgs {
		if e, ok := m["error"].(map[string]any); ok {
			codes[e["code"].(float64)] = true
		}
	}
	if !codes[codeParseError] || !codes[codeInvalidRequest] {
		t.Fatalf("want a parse error and an invalid request error: %v", msgs)
	}
	byID(t, msgs, 2)
}

// The last message may come without its newline.
func TestStdioLastLineWithoutNewline(t *testing.T) {
	msgs := serveLines(t, Jobs{Memory: newFakeMemory()}, strings.NewReader(rawInit+"\n"+rawInitialized+"\r\n"+rawList), 0)
	if len(msgs) != 2 {
		t.Fatalf("%d replies, want 2: %v", len(msgs), msgs)
	}
}

func TestFrameScan(t *testing.T) {
	for _, c := range []struct{ in, id, method string }{
		{`{"id":1,"method":"tools/call"}`, `1`, "tools/call"},
		{` { "method" : "a" , "id" : "x\"y" } `, `"x\"y"`, "a"},
		{`{"params":{"id":5,"method":"no"},"id":-2}`, `-2`, ""},
		{`{"id":{"a":1}}`, ``, ""},
		{`{"id":[1]}`, ``, ""},
		{`{"id":null}`, ``, ""},
		{`{"x":"}\\","id":7}`, `7`, ""},
		{`{"id":"` + strings.Repeat("a", 300) + `"}`, ``, ""},
	} {
		s := &frameScan{}
		s.write([]byte(c.in))
		if got := string(s.requestID()); got != c.id || s.methodName() != c.method {
			t.Errorf("%s: id %q method %q, want %q %q", c.in, got, s.methodName(), c.id, c.method)
		}
	}
}

// FuzzFrameScan: whatever the bytes, the scan never panics, and on a JSON-RPC
// object it finds the same id a JSON decoder does.
func FuzzFrameScan(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`))
	f.Add([]byte(`{"id":"a\\\"b","method":"m"}`))
	f.Add([]byte(`[{"id":1}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := &frameScan{}
		// in two pieces: the scan keeps its state across writes
		s.write(b[:len(b)/2])
		s.write(b[len(b)/2:])
		got := s.requestID()
		var m map[string]json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(b))
		if dec.Decode(&m) != nil || dec.More() || !json.Valid(b) || hasDuplicateOrEscapedKeys(b) {
			return
		}
		want, ok := m["id"]
		if !ok || len(want) == 0 || len(want) >= scanCap {
			return
		}
		if c := want[0]; !(c == '"' || c == '-' || c >= '0' && c <= '9') {
			if got != nil {
				t.Fatalf("%s: id %s is not a JSON-RPC id, scan found %s", b, want, got)
			}
			return
		}
		var x, y any
		if json.Unmarshal(got, &x) != nil || json.Unmarshal(want, &y) != nil || fmt.Sprint(x) != fmt.Sprint(y) {
			t.Fatalf("%s: scan found id %s, decoder %s", b, got, want)
		}
	})
}

// hasDuplicateOrEscapedKeys skips inputs where decoders legitimately differ
// (the last duplicate wins; "\u0069d" is "id" to a decoder, not to the scan).
func hasDuplicateOrEscapedKeys(b []byte) bool {
	return bytes.Count(b, []byte(`"id"`)) != 1 || bytes.Contains(b, []byte(`\u`))
}
