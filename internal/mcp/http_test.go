package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// serveHTTP starts the real `relay mcp --http` and returns its URL (from
// the line it prints on stderr) and the API token it checks.
func (w *world) serveHTTP(t *testing.T) (url, token string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, w.relay, "mcp", "--http")
	cmd.Dir, cmd.Env = w.project, w.env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	var seen bytes.Buffer
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		seen.WriteString(line + "\n")
		if i := strings.Index(line, "http://"); i >= 0 && strings.Contains(line, "Streamable HTTP") {
			url = strings.TrimRight(strings.Fields(line[i:])[0], ";")
			break
		}
	}
	if url == "" {
		t.Fatalf("relay mcp --http printed no URL:\n%s", seen.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	raw, err := os.ReadFile(filepath.Join(w.home, ".relay", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg.Token == "" {
		t.Fatalf("config.json token: %v %s", err, raw)
	}
	return url, cfg.Token
}

func TestHTTPTransport(t *testing.T) {
	w := newWorld(t)
	url, token := w.serveHTTP(t)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("url %q: want loopback, path /mcp", url)
	}
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(mod func(*http.Request)) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		mod(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if r := post(func(*http.Request) {}); r.StatusCode != http.StatusUnauthorized || !strings.Contains(r.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("no token: %d %v, want 401 with WWW-Authenticate", r.StatusCode, r.Header)
	}
	if r := post(func(q *http.Request) { q.Header.Set("Authorization", "Bearer wrong") }); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d, want 401", r.StatusCode)
	}
	if r := post(func(q *http.Request) { q.Header.Set("Authorization", "Bearer "+token); q.Host = "evil.example" }); r.StatusCode != http.StatusForbidden {
		t.Fatalf("rebinding Host: %d, want 403", r.StatusCode)
	}
	if r := post(func(q *http.Request) {
		q.Header.Set("Authorization", "Bearer "+token)
		q.Header.Set("Origin", "http://evil.example")
	}); r.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign Origin: %d, want 403", r.StatusCode)
	}
	if r := post(func(q *http.Request) { q.Header.Set("Authorization", "Bearer "+token) }); r.StatusCode != http.StatusOK {
		t.Fatalf("with token: %d, want 200", r.StatusCode)
	}

	bin := inspectorBin(t)
	inspect := func(args ...string) string {
		t.Helper()
		full := append([]string{url, "--transport", "http", "--header", "Authorization: Bearer " + token}, args...)
		out, err := w.inspectCLI(t, bin, full...)
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		return out
	}
	out := inspect("--method", "tools/list")
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("tools/list output: %v\n%s", err, out)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "ask,edit_files,fetch,read,write_memory" {
		t.Fatalf("tools over HTTP: %v", names)
	}
	out = inspect("--method", "tools/call", "--tool-name", "read", "--tool-arg", "op=header")
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.IsError || len(res.Content) == 0 ||
		!strings.Contains(res.Content[0].Text, `"t":`) || !strings.Contains(res.Content[0].Text, `"v":1`) {
		t.Fatalf("read op=header over HTTP: %v\n%s", err, out)
	}
}
