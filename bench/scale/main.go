// Command scale measures the memory store at team scale, PostgreSQL beside SQLite, on the
// same machine in one run: it starts a real daemon per backend (relay up --foreground on a
// temporary RELAY_HOME; for PostgreSQL on a throw-away server of its own, or -store), loads
// -threads threads and -artifacts artifacts of realistic text (windows of this repository's
// documentation and Go sources, 0.5 to 8 KiB, a tenth of them in one large thread, the rest
// spread evenly), and reports:
//
//   - the put rate while loading (-conns concurrent clients);
//   - search p50/p99 (retrieval.search, one term, two terms, a phrase, a miss) in the large
//     thread and in small ones, with every artifact in the index;
//   - header p99 of random threads (each with a few facts);
//   - sequential patches/s on one thread, and with 8 concurrent writers on 8 threads;
//   - disk: relay.db and search.db for SQLite, pg_database_size for PostgreSQL.
//
// The full run (100,000 artifacts, 10,000 threads; about half an hour on 2 cores):
//
//	go run ./bench/scale
//
// A quick check at small scale:
//
//	go run ./bench/scale -artifacts 2000 -threads 200
//
// Figures are only comparable on a quiet machine; the load client shares it with the
// daemon and PostgreSQL.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/relaydev/relay/bench/internal/build"
	"github.com/relaydev/relay/internal/relayhome"
	"github.com/relaydev/relay/internal/testsupport/pgtest"
)

type config struct {
	relay, store                      string
	artifacts, threads, conns, search int
	patches                           int
}

func main() {
	var c config
	flag.StringVar(&c.relay, "relay", "", "relay binary (default: go build ./cmd/relay)")
	flag.StringVar(&c.store, "store", "", "postgres:// URL of an empty database (default: a throw-away server started here)")
	flag.IntVar(&c.artifacts, "artifacts", 100_000, "artifacts to load")
	flag.IntVar(&c.threads, "threads", 10_000, "threads to spread them over")
	flag.IntVar(&c.conns, "conns", 8, "concurrent clients while loading")
	flag.IntVar(&c.search, "searches", 200, "searches per query kind and thread size")
	flag.IntVar(&c.patches, "patches", 2000, "sequential patches measured")
	backends := flag.String("backends", "sqlite,postgres", "which backends to run")
	flag.Parse()
	if c.threads < 2 || c.artifacts < c.threads {
		fail(errors.New("-threads must be at least 2 and -artifacts at least -threads"))
	}
	tmp, err := os.MkdirTemp("", "relay-bench-scale-")
	fail(err)
	defer os.RemoveAll(tmp)
	if c.relay == "" {
		c.relay = filepath.Join(tmp, "relay")
		if err := build.Relay("", c.relay); err != nil {
			fail(err)
		}
	}
	corp, err := loadCorpus(".")
	fail(err)
	var results []result
	for _, b := range strings.Split(*backends, ",") {
		r := result{backend: b}
		store := ""
		if b == "postgres" {
			store = c.store
			if store == "" {
				bin, err := pgtest.Bin()
				fail(err)
				srv, err := pgtest.Start(bin)
				fail(err)
				defer pgtest.Stop()
				store, err = srv.CreateDB(context.Background(), "relay_scale")
				fail(err)
				_ = srv
			}
		}
		fmt.Fprintf(os.Stderr, "%s: loading %d artifacts into %d threads…\n", b, c.artifacts, c.threads)
		fail(runBackend(&c, corp, filepath.Join(tmp, b), store, &r))
		results = append(results, r)
	}
	print(c, results)
}

type result struct {
	backend                             string
	putRate, patchSeq, patchConc        float64
	search                              map[string][2]time.Duration // kind → p50, p99
	headerP50, headerP99                time.Duration
	disk                                int64
	stored                              int64
	loadTime                            time.Duration
	threadsCreatedPerSec, rssKB, peakKB float64
}

func runBackend(c *config, corp *corpus, home, store string, r *result) error {
	d, err := startDaemon(c.relay, home, store)
	if err != nil {
		return err
	}
	defer d.stop()
	cl := &client{url: d.url, hc: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}

	// Threads.
	start := time.Now()
	threads := make([]string, c.threads)
	if err := parallel(c.conns, c.threads, func(i int) error {
		var th struct {
			ID string `json:"thread_id"`
		}
		err := cl.json("POST", "/threads", map[string]string{"name": fmt.Sprintf("scale thread %d", i)}, &th)
		threads[i] = th.ID
		return err
	}); err != nil {
		return fmt.Errorf("create threads: %w", err)
	}
	r.threadsCreatedPerSec = float64(c.threads) / time.Since(start).Seconds()

	// Artifacts: a tenth in thread 0 (the large thread), the rest round-robin.
	big := c.artifacts / 10
	var stored atomic.Int64
	start = time.Now()
	if err := parallel(c.conns, c.artifacts, func(i int) error {
		tid := threads[0]
		if i >= big {
			tid = threads[1+(i-big)%(c.threads-1)]
		}
		name, body := corp.doc(i)
		stored.Add(int64(len(body)))
		return cl.raw("POST", "/threads/"+tid+"/artifacts?name="+url.QueryEscape(name), body)
	}); err != nil {
		return fmt.Errorf("put artifacts: %w", err)
	}
	r.loadTime = time.Since(start)
	r.putRate = float64(c.artifacts) / r.loadTime.Seconds()
	r.stored = stored.Load()

	// Facts for the headers: 5 per thread on the first 1,000 threads.
	nh := min(1000, c.threads)
	if err := parallel(c.conns, nh*5, func(i int) error {
		return cl.patch(threads[i%nh], i)
	}); err != nil {
		return fmt.Errorf("patch: %w", err)
	}

	// Search: the large thread and small ones.
	r.search = map[string][2]time.Duration{}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, q := range []struct{ kind, query string }{
		{"one term", corp.word(rng)},
		{"two terms", corp.word(rng) + " " + corp.word(rng)},
		{"phrase", `"` + corp.phrase(rng) + `"`},
		{"miss", "zyzzogeton"},
	} {
		for _, where := range []string{"large", "small"} {
			var ts []time.Duration
			for i := range c.search {
				tid := threads[0]
				if where == "small" {
					tid = threads[1+i%(c.threads-1)]
				}
				t0 := time.Now()
				if err := cl.json("POST", "/cap/invoke", map[string]any{"thread_id": tid, "capability": "retrieval.search",
					"args": map[string]any{"query": q.query}, "no_cache": true}, nil); err != nil {
					return fmt.Errorf("search %q: %w", q.query, err)
				}
				ts = append(ts, time.Since(t0))
			}
			slices.Sort(ts)
			r.search[q.kind+", "+where+" thread"] = [2]time.Duration{pct(ts, 50), pct(ts, 99)}
		}
	}

	// Headers of random threads that have facts.
	var hs []time.Duration
	for i := range 1000 {
		t0 := time.Now()
		if err := cl.raw("GET", "/threads/"+threads[rng.IntN(nh)]+"/state/header", nil); err != nil {
			return err
		}
		_ = i
		hs = append(hs, time.Since(t0))
	}
	slices.Sort(hs)
	r.headerP50, r.headerP99 = pct(hs, 50), pct(hs, 99)

	// Patches: sequential on one thread, then 8 writers on 8 threads.
	start = time.Now()
	for i := range c.patches {
		if err := cl.patch(threads[1], 10_000_000+i); err != nil { // fact ids of their own: the header facts use 0 … 5×threads
			return err
		}
	}
	r.patchSeq = float64(c.patches) / time.Since(start).Seconds()
	start = time.Now()
	if err := parallel(8, c.patches, func(i int) error { return cl.patch(threads[2+i%8], 20_000_000+i) }); err != nil {
		return err
	}
	r.patchConc = float64(c.patches) / time.Since(start).Seconds()

	r.rssKB, r.peakKB = d.rss()
	if store == "" {
		r.disk = dirSize(home)
	} else {
		conn, err := pgx.Connect(context.Background(), store)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		if err := conn.QueryRow(context.Background(), `SELECT pg_database_size(current_database())`).Scan(&r.disk); err != nil {
			return err
		}
	}
	return nil
}

func print(c config, rs []result) {
	fmt.Printf("\n%d artifacts (%.0f MiB of text) in %d threads, %d of them in one thread; %d concurrent clients while loading\n\n",
		c.artifacts, float64(rs[0].stored)/(1<<20), c.threads, c.artifacts/10, c.conns)
	fmt.Printf("| | %s |\n|---|%s\n", strings.Join(names(rs), " | "), strings.Repeat("---|", len(rs)))
	row := func(label string, f func(result) string) {
		var cells []string
		for _, r := range rs {
			cells = append(cells, f(r))
		}
		fmt.Printf("| %s | %s |\n", label, strings.Join(cells, " | "))
	}
	row("threads created/s", func(r result) string { return fmt.Sprintf("%.0f", r.threadsCreatedPerSec) })
	row("puts/s while loading", func(r result) string { return fmt.Sprintf("%.0f (load %s)", r.putRate, r.loadTime.Round(time.Second)) })
	var kinds []string
	for k := range rs[0].search {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		row("search p50 / p99, "+k, func(r result) string {
			v := r.search[k]
			return fmt.Sprintf("%s / %s", v[0], v[1])
		})
	}
	row("header p50 / p99", func(r result) string { return fmt.Sprintf("%s / %s", r.headerP50, r.headerP99) })
	row("sequential patches/s", func(r result) string { return fmt.Sprintf("%.0f", r.patchSeq) })
	row("patches/s, 8 writers", func(r result) string { return fmt.Sprintf("%.0f", r.patchConc) })
	row("disk", func(r result) string {
		return fmt.Sprintf("%.0f MiB (%.1f× the text)", float64(r.disk)/(1<<20), float64(r.disk)/float64(max(r.stored, 1)))
	})
	row("daemon RSS / peak", func(r result) string { return fmt.Sprintf("%.0f / %.0f MiB", r.rssKB/1024, r.peakKB/1024) })
}

func names(rs []result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.backend)
	}
	return out
}

func pct(s []time.Duration, p int) time.Duration {
	return s[(len(s)-1)*p/100].Round(10 * time.Microsecond)
}

// parallel runs fn(0..n-1) on conns goroutines and returns the first error.
func parallel(conns, n int, fn func(int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
					next.Store(int64(n))
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

type client struct {
	url string
	hc  *http.Client
}

func (c *client) do(method, path, ctype string, body []byte, out any) error {
	req, err := http.NewRequest(method, c.url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func (c *client) json(method, path string, in, out any) error {
	b, _ := json.Marshal(in)
	return c.do(method, path, "application/json", b, out)
}

func (c *client) raw(method, path string, body []byte) error {
	return c.do(method, path, "application/octet-stream", body, nil)
}

func (c *client) patch(tid string, i int) error {
	return c.do("POST", "/threads/"+tid+"/state/patch", "application/json",
		[]byte(fmt.Sprintf(`[{"op":"add","path":"/facts/-","value":{"id":"f%d","key":"k%d","value":"fact number %d"}}]`, i, i%50, i)), nil)
}

type daemon struct {
	url  string
	pid  int
	stop func()
}

func startDaemon(relay, home, store string) (*daemon, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	args := []string{"up", "--foreground", "--no-auth"} // loopback only; the bench measures the store
	if store != "" {
		args = append(args, "--store", store)
	}
	cmd := exec.Command(relay, args...)
	cmd.Env = append(os.Environ(), "RELAY_HOME="+home)
	logf, err := os.Create(home + ".log")
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(home + ".log")
			return nil, fmt.Errorf("the daemon exited at start (%v): %s", err, b)
		case <-time.After(20 * time.Millisecond):
		}
		info, err := relayhome.ReadInfo(home)
		if err != nil || info.PID != cmd.Process.Pid {
			continue
		}
		if resp, err := http.Get(info.URL + "/health"); err == nil {
			resp.Body.Close()
			return &daemon{url: info.URL, pid: cmd.Process.Pid, stop: stop}, nil
		}
	}
	stop()
	return nil, errors.New("the daemon did not become ready within 60s")
}

// rss is the daemon's resident set and its peak, in KB.
func (d *daemon) rss() (cur, peak float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		var v float64
		if n, _ := fmt.Sscanf(line, "VmRSS: %f", &v); n == 1 {
			cur = v
		}
		if n, _ := fmt.Sscanf(line, "VmHWM: %f", &v); n == 1 {
			peak = v
		}
	}
	return cur, peak
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// corpus is realistic text: this repository's docs and Go sources, cut into windows.
type corpus struct {
	text  []byte
	words []string
}

func loadCorpus(root string) (*corpus, error) {
	var buf bytes.Buffer
	for _, dir := range []string{"docs", "internal", "README.md"} {
		filepath.WalkDir(filepath.Join(root, dir), func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !(strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".go")) {
				return nil
			}
			b, err := os.ReadFile(p)
			if err == nil {
				buf.Write(b)
				buf.WriteByte('\n')
			}
			return nil
		})
	}
	if buf.Len() < 1<<20 {
		return nil, errors.New("run from the repository root: the corpus is its docs and sources")
	}
	c := &corpus{text: buf.Bytes()}
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(string(c.text), func(r rune) bool { return !(r >= 'a' && r <= 'z') }) {
		if len(w) >= 5 && len(w) <= 12 && !seen[w] {
			seen[w] = true
			c.words = append(c.words, w)
		}
	}
	slices.Sort(c.words)
	return c, nil
}

// doc is artifact i: a window of 0.5 to 8 KiB of the corpus, named like the files agents
// store.
func (c *corpus) doc(i int) (string, []byte) {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	size := 512 + rng.IntN(8<<10-512)
	off := rng.IntN(len(c.text) - size)
	body := append([]byte(fmt.Sprintf("artifact %d\n", i)), c.text[off:off+size]...)
	name := [...]string{"notes-%d.md", "tool-output-%d.txt", "snippet-%d.go"}[i%3]
	return fmt.Sprintf(name, i), body
}

func (c *corpus) word(rng *rand.Rand) string { return c.words[rng.IntN(len(c.words))] }

// phrase is two consecutive words of the corpus.
func (c *corpus) phrase(rng *rand.Rand) string {
	for {
		off := rng.IntN(len(c.text) - 200)
		f := strings.Fields(string(c.text[off : off+200]))
		if len(f) > 4 && isWord(f[2]) && isWord(f[3]) {
			return f[2] + " " + f[3]
		}
	}
}

func isWord(s string) bool {
	if len(s) < 3 {
		return false
	}
	for _, r := range s {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}
