// Command bigartifact measures the daemon's peak memory while a 1 GiB artifact goes through
// it: a JSON upload ({"content": …}, unescaped as it is read), a raw upload, a streamed read, an export to a bundle, an import of that bundle as a
// copy, and `relay migrate` of the store into a second one with its own bucket. With its
// bodies in a bucket (a directory by default, or -artifacts s3://…), no step may hold the
// body whole: the peak resident set (VmHWM of the daemon, ru_maxrss of relay migrate) must
// stay far below the artifact's size.
//
//	go run ./bench/bigartifact                 # 1 GiB, SQLite, bodies in a directory
//	go run ./bench/bigartifact -size 64MiB     # quick
//	go run ./bench/bigartifact -json-only      # only the JSON upload
//
// Not a CI test: it writes several GiB to the temporary directory and takes minutes.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/relaydev/relay/bench/internal/build"
	"github.com/relaydev/relay/internal/relayhome"
)

func main() {
	relay := flag.String("relay", "", "relay binary (default: go build ./cmd/relay)")
	sizeFlag := flag.String("size", "1GiB", "artifact size (KiB, MiB, GiB suffixes)")
	artifacts := flag.String("artifacts", "", "bucket for the bodies (default: file:// a temporary directory)")
	store := flag.String("store", "", "store URL (default: SQLite in a temporary RELAY_HOME)")
	jsonOnly := flag.Bool("json-only", false, "stop after the JSON upload")
	flag.Parse()
	size, err := parseSize(*sizeFlag)
	fail(err)
	tmp, err := os.MkdirTemp("", "relay-bench-big-")
	fail(err)
	defer os.RemoveAll(tmp)
	if *relay == "" {
		*relay = filepath.Join(tmp, "relay")
		if err := build.Relay("", *relay); err != nil {
			fail(err)
		}
	}
	if *artifacts == "" {
		*artifacts = "file://" + filepath.Join(tmp, "bucket")
	}
	home := filepath.Join(tmp, "home")
	d := start(*relay, home, *store, *artifacts)
	hc := &http.Client{Timeout: time.Hour}
	fmt.Printf("artifact: %s of text; bodies in %s\n\n", human(size), *artifacts)
	fmt.Printf("| step | time | daemon peak RSS after it |\n|---|---|---|\n")
	step := func(name string, fn func()) {
		t0 := time.Now()
		fn()
		fmt.Printf("| %s | %s | %s |\n", name, time.Since(t0).Round(time.Millisecond), human(d.peak()))
	}
	fmt.Printf("| daemon idle | | %s |\n", human(d.peak()))

	var th struct {
		ID string `json:"thread_id"`
	}
	post(hc, d.url+"/threads", "application/json", strings.NewReader(`{"name":"big"}`), &th)
	var art struct{ Ref, Hash string }
	var sum string
	// First, so the peak after it is the JSON upload's own (the raw upload's bytes differ).
	step("upload (JSON {\"content\": …}, unescaped as read, spooled, streamed to the bucket)", func() {
		src := &textStream{left: size, h: sha256.New(), rng: rand.New(rand.NewPCG(2, 2))}
		body := io.MultiReader(strings.NewReader(`{"name":"big-json.log","content":"`), &jsonEscaper{r: src}, strings.NewReader(`","created_by":"bench"}`))
		post(hc, d.url+"/threads/"+th.ID+"/artifacts", "application/json", body, &art)
		if want := hex.EncodeToString(src.h.Sum(nil)); art.Hash != want {
			fail(fmt.Errorf("stored hash %s, sent %s", art.Hash, want))
		}
	})
	if *jsonOnly {
		d.stop()
		return
	}
	step("upload (raw POST, spooled, streamed to the bucket)", func() {
		src := &textStream{left: size, h: sha256.New(), rng: rand.New(rand.NewPCG(1, 1))}
		post(hc, d.url+"/threads/"+th.ID+"/artifacts?name=big.log", "application/octet-stream", src, &art)
		sum = hex.EncodeToString(src.h.Sum(nil))
		if art.Hash != sum {
			fail(fmt.Errorf("stored hash %s, sent %s", art.Hash, sum))
		}
	})
	step("read (GET ?raw=1, streamed)", func() {
		resp, err := hc.Get(d.url + "/threads/" + th.ID + "/artifacts/" + art.Ref + "?raw=1")
		fail(err)
		h := sha256.New()
		n, err := io.Copy(h, resp.Body)
		resp.Body.Close()
		fail(err)
		if n != size || hex.EncodeToString(h.Sum(nil)) != sum {
			fail(fmt.Errorf("read back %d bytes, hash differs or size", n))
		}
	})
	bundle := filepath.Join(tmp, "big.zip")
	step("export (bundle, streamed)", func() {
		resp, err := hc.Get(d.url + "/threads/" + th.ID + "/export")
		fail(err)
		f, err := os.Create(bundle)
		fail(err)
		_, err = io.Copy(f, resp.Body)
		resp.Body.Close()
		f.Close()
		fail(err)
		if resp.StatusCode != 200 {
			fail(fmt.Errorf("export: %s", resp.Status))
		}
	})
	step("import (the bundle as a copy, streamed)", func() {
		f, err := os.Open(bundle)
		fail(err)
		defer f.Close()
		var res map[string]any
		post(hc, d.url+"/import?as_new=1", "application/zip", f, &res)
	})
	d.stop()

	// relay migrate into a second SQLite store with its own bucket: the migrating
	// process's own peak.
	dst := filepath.Join(tmp, "dst")
	cmd := exec.Command(*relay, "migrate", "--from", storeURL(*store, home), "--to", "sqlite://"+dst,
		"--from-artifacts", *artifacts, "--artifacts", "file://"+filepath.Join(tmp, "bucket2"))
	cmd.Env = append(os.Environ(), "RELAY_HOME="+home, "RELAY_ARTIFACTS="+*artifacts)
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		fail(fmt.Errorf("relay migrate: %v: %s", err, out))
	}
	peak := "n/a"
	if n := maxRSS(cmd.ProcessState); n > 0 {
		peak = human(n)
	}
	fmt.Printf("| relay migrate (its own process) | %s | %s |\n", time.Since(t0).Round(time.Millisecond), peak)
}

func storeURL(store, home string) string {
	if store != "" {
		return store
	}
	return "sqlite://" + home
}

// textStream is size bytes of log-like text, hashed as it is read.
type textStream struct {
	left int64
	h    hash.Hash
	rng  *rand.Rand
	buf  bytes.Buffer
	line int
}

func (t *textStream) Read(p []byte) (int, error) {
	if t.left <= 0 {
		return 0, io.EOF
	}
	for t.buf.Len() < len(p) && int64(t.buf.Len()) < t.left {
		t.line++
		fmt.Fprintf(&t.buf, "%s line %d: build step %d finished in %d ms with status %s\n",
			time.Unix(int64(1700000000+t.line), 0).UTC().Format(time.RFC3339), t.line, t.rng.IntN(500), t.rng.IntN(10000),
			[...]string{"ok", "ok", "ok", "cached", "retried"}[t.rng.IntN(5)])
	}
	n := min(len(p), t.buf.Len(), int(min(t.left, int64(len(p)))))
	copy(p, t.buf.Next(n))
	t.left -= int64(n)
	t.h.Write(p[:n])
	return n, nil
}

// jsonEscaper reads r as the inside of a JSON string: newlines (every line has one) and
// quotes escaped.
type jsonEscaper struct {
	r   io.Reader
	out []byte
}

func (j *jsonEscaper) Read(p []byte) (int, error) {
	if len(j.out) == 0 {
		buf := make([]byte, 32<<10)
		n, err := j.r.Read(buf)
		if n == 0 {
			return 0, err
		}
		b, _ := json.Marshal(string(buf[:n]))
		j.out = b[1 : len(b)-1]
	}
	n := copy(p, j.out)
	j.out = j.out[n:]
	return n, nil
}

type daemon struct {
	url  string
	pid  int
	stop func()
}

func start(relay, home, store, artifacts string) *daemon {
	fail(os.MkdirAll(home, 0o700))
	args := []string{"up", "--foreground", "--no-auth", "--artifacts", artifacts}
	if store != "" {
		args = append(args, "--store", store)
	}
	cmd := exec.Command(relay, args...)
	cmd.Env = append(os.Environ(), "RELAY_HOME="+home, "RELAY_ARTIFACTS_GC=off")
	logf, err := os.Create(home + ".log")
	fail(err)
	cmd.Stdout, cmd.Stderr = logf, logf
	fail(cmd.Start())
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			b, _ := os.ReadFile(home + ".log")
			fail(fmt.Errorf("the daemon exited at start: %s", b))
		default:
		}
		if info, err := relayhome.ReadInfo(home); err == nil && info.PID == cmd.Process.Pid {
			if resp, err := http.Get(info.URL + "/health"); err == nil {
				resp.Body.Close()
				return &daemon{url: info.URL, pid: cmd.Process.Pid, stop: stop}
			}
		}
	}
	stop()
	fail(errors.New("the daemon did not become ready"))
	return nil
}

// peak is the daemon's peak resident set (VmHWM), in bytes.
func (d *daemon) peak() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if n, _ := fmt.Sscanf(line, "VmHWM: %d", &kb); n == 1 {
			return kb * 1024
		}
	}
	return 0
}

func post(hc *http.Client, url, ctype string, body io.Reader, out any) {
	req, err := http.NewRequest("POST", url, body)
	fail(err)
	req.Header.Set("Content-Type", ctype)
	resp, err := hc.Do(req)
	fail(err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		fail(fmt.Errorf("POST %s: %s %s", url, resp.Status, b))
	}
	fail(json.Unmarshal(b, out))
}

func parseSize(s string) (int64, error) {
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"", 1}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			var n int64
			if _, err := fmt.Sscanf(v, "%d", &n); err != nil || n <= 0 {
				return 0, fmt.Errorf("-size %q: use e.g. 1GiB or 64MiB", s)
			}
			return n * u.mul, nil
		}
	}
	return 0, nil
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bigartifact:", err)
		os.Exit(1)
	}
}
