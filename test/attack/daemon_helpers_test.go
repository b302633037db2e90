package attack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// daemon is a relay memory daemon started by `relay up` in a sandbox.
type daemon struct {
	s     *sandbox
	URL   string
	Token string
}

// startDaemon runs `relay up` on a free loopback port with extra environment
// (e.g. RELAY_FETCH_ALLOW) and stops it when the test ends.
func startDaemon(t *testing.T, s *sandbox, env ...string) *daemon {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s.Env = append(s.Env, env...)
	r := s.Run("", "up", "--port", strconv.Itoa(port))
	if r.Code != 0 {
		t.Fatalf("relay up: %s", r)
	}
	t.Cleanup(func() { s.Run("", "down") })
	var info struct {
		URL string `json:"url"`
	}
	b, err := os.ReadFile(filepath.Join(s.Relay, "daemon.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Token string `json:"token"`
	}
	b, err = os.ReadFile(filepath.Join(s.Relay, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	return &daemon{s: s, URL: info.URL, Token: cfg.Token}
}

// Do sends one API request with the daemon's token and returns status and body.
func (d *daemon) Do(t *testing.T, method, path string, body io.Reader, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, d.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.Token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp.StatusCode, b
}

// JSON sends a JSON body and decodes a JSON answer into out (may be nil).
func (d *daemon) JSON(t *testing.T, method, path string, in, out any) int {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	st, b := d.Do(t, method, path, body, "Content-Type", "application/json")
	if out != nil && st < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return st
}

// NewThread creates a thread and returns its id.
func (d *daemon) NewThread(t *testing.T, name string) string {
	t.Helper()
	var th struct {
		ID string `json:"thread_id"`
	}
	if st := d.JSON(t, "POST", "/threads", map[string]string{"name": name}, &th); st != 200 && st != 201 {
		t.Fatalf("create thread %q: status %d", name, st)
	}
	return th.ID
}

// RunTTY runs relay with stdout and stderr on a terminal and returns all it
// printed there.
func (s *sandbox) RunTTY(args ...string) Result {
	s.t.Helper()
	m, sl := openPTY(s.t)
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, relayBin, args...)
	cmd.Dir = s.Project
	cmd.Env = append(append([]string{}, s.Env...), "TERM=xterm-256color")
	cmd.Stdout, cmd.Stderr = sl, sl
	if err := cmd.Start(); err != nil {
		sl.Close()
		s.t.Fatalf("start relay: %v", err)
	}
	sl.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		// reading the master ends with EIO once every slave descriptor is closed
		_, _ = io.Copy(&out, m)
		close(done)
	}()
	err := cmd.Wait()
	<-done
	r := Result{Stdout: out.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	default:
		s.t.Fatalf("relay %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// terminalSafe fails when text a terminal would obey reached it: any ESC,
// BEL, backspace, lone CR, DEL, other C0 byte, C1 control (raw or UTF-8) or
// bidi override. Relay's own colours are off here (NO_COLOR).
func terminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for i := 0; i < len(out); i++ {
		b := out[i]
		switch {
		case b == '\n' || b == '\t':
		case b == '\r' && i+1 < len(out) && out[i+1] == '\n':
		case b < 0x20 || b == 0x7f:
			t.Errorf("%s: control byte %#x reached the terminal at %d: %q", what, b, i, around(out, i))
			return
		case b == 0xc2 && i+1 < len(out) && out[i+1] >= 0x80 && out[i+1] <= 0x9f:
			t.Errorf("%s: C1 control U+00%X reached the terminal at %d: %q", what, out[i+1], i, around(out, i))
			return
		case b == 0xe2 && i+2 < len(out) && out[i+1] == 0x80 && out[i+2] >= 0xaa && out[i+2] <= 0xae:
			t.Errorf("%s: bidi override reached the terminal at %d: %q", what, i, around(out, i))
			return
		case b >= 0x80 && b <= 0x9f && (i == 0 || out[i-1] < 0xc0):
			// a continuation byte is fine inside a UTF-8 character; checked loosely
		}
	}
}

func around(s string, i int) string {
	lo, hi := max(0, i-20), min(len(s), i+20)
	return s[lo:hi]
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
