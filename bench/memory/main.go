// Command memory is the load client for the relay memory daemon: it starts a real daemon
// (`relay up --foreground` on a temporary RELAY_HOME, durable commits) or drives any daemon
// at -url that speaks the same REST API, and measures, on realistic text:
//
//   - the disk's own fsync rate (write + fdatasync on the same filesystem), the limit for
//     durable commits;
//   - state patches, sequential and from concurrent writers, as the state grows to -facts;
//   - the header read p99 at 1,000 facts and lost updates from 4 concurrent writers;
//   - 100 KB and 2 KB text artifact puts (or random binary with -binary), each kind after
//     the index caught up with the last;
//   - how long after a put's acknowledgement the artifact is found by search;
//   - retrieval.search p50/p99 for one term, two terms, a phrase, a prefix and a miss at
//     10k artifacts (and 100k with -docs 100000), once the index is idle;
//   - disk used against the bytes the user stored, and daemon RSS idle, after load and peak.
//
// Each of -rounds rounds uses a fresh daemon; the summary is the median per metric.
// -json appends one line per round, and -report prints medians per label of such files
// side by side (bench/compare uses both).
//
//	go run ./bench/memory                         # one round against relay built from this tree
//	go run ./bench/memory -rounds 3 -docs 100000  # the full run
//	go run ./bench/memory -url http://127.0.0.1:7475 -pid 1234 -home ~/.other  # another daemon
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relaydev/relay/bench/internal/build"
)

type config struct {
	relay, url, home, store, sync, token, corpusDir, label, jsonOut, upload string
	pid, rounds, facts, writers, big, small, docs, queries, sustainBig      int
	conns                                                                   []int
	binary, inprocess                                                       bool
	quiet                                                                   time.Duration
	cpuprofile, blockprofile, mutexprofile, tracefile                       string
	only                                                                    map[string]bool
}

// phase reports whether -only selects the named phase (all phases when -only is empty).
func (c *config) phase(name string) bool { return len(c.only) == 0 || c.only[name] }

func main() {
	var cfg config
	var conns string
	flag.StringVar(&cfg.relay, "relay", "", "relay binary to start (default: go build ./cmd/relay from this tree)")
	flag.StringVar(&cfg.url, "url", "", "drive the daemon already at this URL instead of starting one")
	flag.IntVar(&cfg.pid, "pid", 0, "with -url: the daemon's pid, to read its RSS")
	flag.StringVar(&cfg.home, "home", "", "with -url: the daemon's data directory, to measure its disk use")
	flag.StringVar(&cfg.store, "store", "", "passed to `relay up --store` (e.g. a postgres:// URL); default the embedded SQLite store")
	flag.StringVar(&cfg.sync, "sync", "full", "RELAY_DB_SYNC of the started daemon: full (fsync per commit) or normal")
	flag.StringVar(&cfg.token, "token", os.Getenv("RELAY_TOKEN"), "API token of the daemon at -url")
	flag.StringVar(&cfg.corpusDir, "corpus", "", "repository whose .go/.md files make the text (default: this module's root)")
	flag.StringVar(&cfg.label, "label", "relay", "label of this run in -json and -report")
	flag.StringVar(&cfg.jsonOut, "json", "", "append one JSON line per round to this file")
	flag.StringVar(&cfg.upload, "upload", "json", "artifact upload form: json ({name,type,content}; any daemon of this API) or raw (octet-stream body)")
	flag.IntVar(&cfg.rounds, "rounds", 1, "rounds, each on a fresh daemon; the summary is the median")
	flag.IntVar(&cfg.facts, "facts", 10000, "sequential patches, each appending a fact (state grows 0 -> facts); the concurrent test sends as many")
	flag.IntVar(&cfg.writers, "writers", 8, "concurrent writers in the group-commit test, each on its own thread")
	flag.IntVar(&cfg.big, "big", 1000, "100 KB artifact puts per connection count")
	flag.IntVar(&cfg.small, "small", 10000, "2 KB artifacts loaded into the search thread")
	flag.IntVar(&cfg.sustainBig, "sustain-big", 1000, "100 KB artifacts put right after the 2 KB load (sustained ingestion), into a thread of their own")
	flag.DurationVar(&cfg.quiet, "quiet", 10*time.Second, "read the daemon's RSS again once it has had no request for this long, after it starts and after the load (0: don't)")
	flag.IntVar(&cfg.docs, "docs", 0, "then grow the search thread to this many artifacts (e.g. 100000) and search again")
	flag.IntVar(&cfg.queries, "queries", 200, "search queries per kind (0: no searches, e.g. for a daemon that limits calls per thread)")
	flag.StringVar(&conns, "conns", "1,8", "connection counts for the put tests")
	flag.BoolVar(&cfg.binary, "binary", false, "put random binary (type binary, not full-text indexed) instead of text")
	flag.BoolVar(&cfg.inprocess, "inprocess", false, "run the daemon inside this process (RSS then includes the client; allows -cpuprofile)")
	flag.StringVar(&cfg.cpuprofile, "cpuprofile", "", "with -inprocess: CPU profile of the whole round to this file")
	flag.StringVar(&cfg.blockprofile, "blockprofile", "", "with -inprocess: blocking profile (where goroutines wait) to this file")
	flag.StringVar(&cfg.tracefile, "trace", "", "with -inprocess: execution trace of the searches at -small docs to this file (go tool trace; -pprof=sync shows where they wait)")
	flag.StringVar(&cfg.mutexprofile, "mutexprofile", "", "with -inprocess: mutex contention profile to this file")
	only := flag.String("only", "", "run only these phases (comma-separated: patches, lost, puts, small, search, bigdocs)")
	report := flag.Bool("report", false, "print medians per label of the -json files given as arguments, and exit")
	table := flag.Bool("table", false, "print the issue-26 target table from the -json files given as arguments (bench/memory/run.sh), and exit")
	flag.Parse()
	if *report {
		check(printReport(flag.Args()))
		return
	}
	if *table {
		check(printTable(flag.Args()))
		return
	}
	for _, c := range strings.Split(conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			check(fmt.Errorf("-conns %q: want numbers like 1,8", conns))
		}
		cfg.conns = append(cfg.conns, n)
	}
	if *only != "" {
		cfg.only = map[string]bool{}
		for _, p := range strings.Split(*only, ",") {
			cfg.only[strings.TrimSpace(p)] = true
		}
	}
	if cfg.upload != "json" && cfg.upload != "raw" {
		check(fmt.Errorf("-upload %q: use json or raw", cfg.upload))
	}
	if cfg.corpusDir == "" {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		check(err)
		cfg.corpusDir = filepath.Dir(strings.TrimSpace(string(out)))
	}
	corp, err := loadCorpus(cfg.corpusDir)
	check(err)
	if cfg.url == "" && !cfg.inprocess && cfg.relay == "" {
		dir, err := os.MkdirTemp("", "relay-bench-bin-")
		check(err)
		defer os.RemoveAll(dir)
		cfg.relay = filepath.Join(dir, "relay")
		check(build.Relay(cfg.corpusDir, cfg.relay))
	}
	if cfg.cpuprofile != "" {
		if !cfg.inprocess {
			check(errors.New("-cpuprofile needs -inprocess (the daemon must run in this process)"))
		}
		f, err := os.Create(cfg.cpuprofile)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	if cfg.tracefile != "" && (!cfg.inprocess || cfg.binary || cfg.queries == 0 || !cfg.phase("small")) {
		check(errors.New("-trace needs -inprocess and the searches it traces (the small phase, text, -queries > 0)"))
	}
	if cfg.blockprofile != "" || cfg.mutexprofile != "" {
		if !cfg.inprocess {
			check(errors.New("-blockprofile and -mutexprofile need -inprocess"))
		}
		if cfg.blockprofile != "" {
			runtime.SetBlockProfileRate(10_000) // one sample per 10 µs blocked
			defer writeProfile("block", cfg.blockprofile)
		}
		if cfg.mutexprofile != "" {
			runtime.SetMutexProfileFraction(5)
			defer writeProfile("mutex", cfg.mutexprofile)
		}
	}
	var all []map[string]float64
	for r := 1; r <= cfg.rounds; r++ {
		fmt.Printf("== round %d/%d (%s), load average %s\n", r, cfg.rounds, cfg.label, loadavg())
		res, err := runRound(&cfg, corp)
		check(err)
		all = append(all, res)
		if cfg.jsonOut != "" {
			f, err := os.OpenFile(cfg.jsonOut, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			check(err)
			b, _ := json.Marshal(map[string]any{"label": cfg.label, "round": r, "at": time.Now().UTC().Format(time.RFC3339), "go": runtime.Version(), "metrics": res})
			_, err = f.Write(append(b, '\n'))
			check(errors.Join(err, f.Close()))
		}
	}
	if cfg.rounds > 1 {
		fmt.Printf("== median of %d rounds (min-max)\n", cfg.rounds)
		printMedians(all)
	}
}

// run holds one round's HTTP client and results.
type run struct {
	cfg  *config
	hc   *http.Client
	base string
	res  map[string]float64
	d    *daemon
	// userBytes counts what the client stored: artifact contents and patch bodies.
	userBytes atomic.Int64
}

func (r *run) set(key string, v float64) { r.res[key] = v }

func runRound(cfg *config, corp *corpus) (map[string]float64, error) {
	tmp, err := os.MkdirTemp("", "relay-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	home := filepath.Join(tmp, "home")
	r := &run{cfg: cfg, res: map[string]float64{}}
	r.set("load1_start", load1())
	fsDir := tmp
	if cfg.home != "" {
		fsDir = cfg.home
	}
	if rate, err := fsyncRate(fsDir, 2*time.Second); err == nil {
		r.set("fsync_per_s", rate)
		fmt.Printf("disk fsync rate:   %.0f write+fdatasync/s on %s (the ceiling for one durable commit at a time)\n", rate, fsDir)
	} else if errors.Is(err, errors.ErrUnsupported) {
		fmt.Println("disk fsync rate:   n/a (fdatasync is Linux's)")
	}
	d, err := startDaemon(cfg, home)
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.stop() }()
	r.base, r.d = d.url, d
	r.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	time.Sleep(500 * time.Millisecond) // let start-up garbage settle before the idle RSS
	if cur, _ := d.rss(); cur > 0 {
		r.set("rss_idle_mb", cur/1024)
		fmt.Printf("daemon RSS idle:   %.1f MB (pid %d)\n", cur/1024, d.pid)
		// and once it has sat idle, as a daemon a user started and left does (relay gives
		// back memory and code pages after 5 s without a request)
		if cfg.quiet > 0 {
			time.Sleep(cfg.quiet)
			if cur, _ := d.rss(); cur > 0 {
				r.set("rss_idle_quiet_mb", cur/1024)
				fmt.Printf("daemon RSS idle:   %.1f MB after %v with no request\n", cur/1024, cfg.quiet)
			}
		}
	}

	if cfg.phase("patches") {
		if err := r.patches(); err != nil {
			return nil, err
		}
	}
	if cfg.phase("lost") {
		if err := r.lostUpdates(); err != nil {
			return nil, err
		}
	}
	if cfg.phase("puts") {
		if err := r.puts(corp); err != nil {
			return nil, err
		}
	}
	if !cfg.phase("small") {
		return r.finish(d, fsDir)
	}
	sid, err := r.sustained(corp)
	if err != nil {
		return nil, err
	}
	if !cfg.binary && cfg.queries > 0 {
		// The first search after the load waits until the indexer has caught up with the
		// thread: how far the index trails a burst of puts.
		t0, c0 := time.Now(), d.cpu()
		if _, err := r.search(sid, "drain"); err != nil {
			return nil, err
		}
		r.set("index_drain_ms", ms(time.Since(t0)))
		fmt.Printf("index catch-up:    the first search after the load answered in %v (daemon CPU %v meanwhile)\n", time.Since(t0).Round(time.Millisecond), d.cpu()-c0)
		if err := r.freshness(corp, sid); err != nil {
			return nil, err
		}
		if err := r.settle("the freshness puts"); err != nil { // the 100 KB thread's backlog
			return nil, err
		}
		stop := startTrace(cfg.tracefile)
		err := r.searches(corp, sid, fmt.Sprintf("%dk", cfg.small/1000))
		check(stop())
		if err != nil {
			return nil, err
		}
	}
	if cfg.docs > cfg.small {
		if _, err := r.load(corp, cfg.small, cfg.docs, sid); err != nil {
			return nil, err
		}
		if !cfg.binary && cfg.queries > 0 {
			if err := r.settle("the load"); err != nil {
				return nil, err
			}
			if err := r.searches(corp, sid, fmt.Sprintf("%dk", cfg.docs/1000)); err != nil {
				return nil, err
			}
		}
	}
	return r.finish(d, fsDir)
}

// finish records RSS, disk use and the fsync rate at the end of a round.
func (r *run) finish(d *daemon, fsDir string) (map[string]float64, error) {
	cfg := r.cfg
	if cur, peak := d.rss(); cur > 0 {
		r.set("rss_after_mb", cur/1024)
		r.set("rss_peak_mb", peak/1024)
		fmt.Printf("daemon RSS:        %.1f MB after the load, peak %.1f MB\n", cur/1024, peak/1024)
		// A daemon may give memory back once it is idle (relay does after 5 s): what it
		// holds while it waits for the next burst is what a user's machine pays.
		if cfg.quiet > 0 {
			time.Sleep(cfg.quiet)
			if cur, _ := d.rss(); cur > 0 {
				r.set("rss_quiet_mb", cur/1024)
				fmt.Printf("daemon RSS:        %.1f MB after %v with no request\n", cur/1024, cfg.quiet)
			}
		}
	}
	if d.home != "" {
		if cfg.store == "" {
			if err := d.stop(); err != nil { // a clean stop checkpoints the WAL, as a user's `relay down` does
				return nil, err
			}
			d.stop = func() error { return nil }
		}
		total, mirror := diskUsage(d.home, "threads")
		user := float64(r.userBytes.Load())
		r.set("disk_mb", float64(total)/1e6)
		r.set("disk_mirror_mb", float64(mirror)/1e6)
		r.set("user_mb", user/1e6)
		r.set("disk_ratio", float64(total-mirror)/user)
		r.set("disk_ratio_with_mirror", float64(total)/user)
		fmt.Printf("disk:              %.1f MB used (%.1f MB of it the file mirror) for %.1f MB stored by the user: %.2fx without the mirror, %.2fx with it (target <= 1.3x)\n",
			float64(total)/1e6, float64(mirror)/1e6, user/1e6, float64(total-mirror)/user, float64(total)/user)
	}
	if rate, err := fsyncRate(fsDir, time.Second); err == nil {
		r.set("fsync_end_per_s", rate)
		fmt.Printf("disk fsync rate:   %.0f/s at the end\n", rate)
	}
	r.set("load1_end", load1())
	fmt.Printf("load average at the end: %s\n", loadavg())
	return r.res, nil
}

// patches: sequential appends growing one thread's state to -facts facts (windows of
// 1,000 show whether the rate stays flat), the header p99 at 1,000 facts, then -writers
// writers appending to their own threads.
func (r *run) patches() error {
	tid, err := r.newThread()
	if err != nil {
		return err
	}
	n := r.cfg.facts
	window := max(1, min(1000, n/10))
	var rates []float64
	start, cpu0 := time.Now(), r.d.cpu()
	ws := start
	var paused, pausedCPU time.Duration
	for i := 1; i <= n; i++ {
		if err := r.appendFact(tid, i, i); err != nil {
			return err
		}
		if i%window == 0 {
			rates = append(rates, float64(window)/time.Since(ws).Seconds())
			if i == 1000 {
				t0, c0 := time.Now(), r.d.cpu()
				lat, err := r.timeGets(r.base+"/threads/"+tid+"/state/header", 1000)
				if err != nil {
					return err
				}
				r.set("header_p50_us_1k", us(pct(lat, 50)))
				r.set("header_p99_us_1k", us(pct(lat, 99)))
				fmt.Printf("header at 1k facts: p50 %v p99 %v (%d reads)\n", pct(lat, 50), pct(lat, 99), len(lat))
				paused += time.Since(t0)
				pausedCPU += r.d.cpu() - c0
			}
			ws = time.Now()
		}
	}
	el := time.Since(start) - paused
	cpu := r.cpuPerOp("patch_seq", r.d.cpu()-cpu0-pausedCPU, n)
	r.set("patch_seq_per_s", float64(n)/el.Seconds())
	if len(rates) > 0 {
		r.set("patch_seq_first_per_s", rates[0])
		r.set("patch_seq_last_per_s", rates[len(rates)-1])
	}
	fmt.Printf("patches seq:       %d appends (0 -> %d facts) = %.0f/s, daemon CPU %s/patch; per %d: %s (target >= 2500/s, flat)\n", n, n, float64(n)/el.Seconds(), cpu, window, fmtRates(rates))

	w := r.cfg.writers
	if w < 2 {
		return nil
	}
	per := n / w
	tids := make([]string, w)
	for i := range tids {
		if tids[i], err = r.newThread(); err != nil {
			return err
		}
	}
	errs := make(chan error, w)
	start, cpu0 = time.Now(), r.d.cpu()
	for _, t := range tids {
		go func() {
			for i := 1; i <= per; i++ {
				if err := r.appendFact(t, i, i); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range w {
		if e := <-errs; e != nil {
			err = e
		}
	}
	if err != nil {
		return err
	}
	el = time.Since(start)
	cpu = r.cpuPerOp("patch_conc", r.d.cpu()-cpu0, per*w)
	r.set("patch_conc_per_s", float64(per*w)/el.Seconds())
	fmt.Printf("patches %d writers: %d x %d appends = %.0f/s, daemon CPU %s/patch (target >= 10000/s)\n", w, w, per, float64(per*w)/el.Seconds(), cpu)
	return nil
}

// appendFact sends one patch appending fact i, stating base version v when v > 0.
func (r *run) appendFact(tid string, i, v int) error {
	body := fmt.Sprintf(`[{"op":"add","path":"/facts/-","value":{"id":"f%d","key":"build.step.%d","value":"step %d finished: 14 files changed, tests pass"}}]`, i, i, i)
	req, _ := http.NewRequest("POST", r.base+"/threads/"+tid+"/state/patch", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if v > 0 {
		req.Header.Set("If-Match", "v"+strconv.Itoa(v))
	}
	r.userBytes.Add(int64(len(body)))
	_, err := r.do(req, 200)
	return err
}

// lostUpdates: 4 writers append 100 facts each to one thread with no base version; a store
// that serializes patches keeps all 400.
func (r *run) lostUpdates() error {
	tid, err := r.newThread()
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				if r.appendFact(tid, w*1000+i, 0) != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	b, err := r.get(r.base + "/threads/" + tid + "/state")
	if err != nil {
		return err
	}
	var st struct {
		Facts []json.RawMessage `json:"facts"`
		State *struct {
			Facts []json.RawMessage `json:"facts"`
		} `json:"state"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("read state: %w", err)
	}
	n := len(st.Facts)
	if st.State != nil && n == 0 {
		n = len(st.State.Facts)
	}
	lost := 400 - int(failed.Load()) - n
	r.set("lost_updates", float64(lost))
	fmt.Printf("lost updates:      %d of 400 (4 writers x 100 appends, %d refused)\n", lost, failed.Load())
	return nil
}

// puts: -big 100 KB artifacts over each connection count of -conns, each into its own
// thread: text (indexed), then binary (random bytes typed binary: the put path without
// indexing, as the older daemon's "binary" row measures; with -binary both are binary).
func (r *run) puts(corp *corpus) error {
	for _, binary := range []bool{r.cfg.binary, true} {
		kind := "text"
		if binary {
			kind = "binary"
		}
		for _, c := range r.cfg.conns {
			tid, err := r.newThread()
			if err != nil {
				return err
			}
			cpu0 := r.d.cpu()
			el, lat, err := r.putMany(corp, tid, 1_000_000*c, r.cfg.big, 100*1024, c, binary)
			if err != nil {
				return err
			}
			key := fmt.Sprintf("put_100k_c%d", c)
			if binary && !r.cfg.binary {
				key = fmt.Sprintf("put_100k_bin_c%d", c)
			}
			cpu := r.cpuPerOp(key, r.d.cpu()-cpu0, r.cfg.big)
			r.set(key+"_per_s", float64(r.cfg.big)/el.Seconds())
			r.set(key+"_p50_ms", ms(pct(lat, 50)))
			fmt.Printf("puts 100 KB %-6s %d over %d conn(s) = %.0f/s, p50 %v p99 %v, daemon CPU %s/put\n", kind+":", r.cfg.big, c, float64(r.cfg.big)/el.Seconds(), pct(lat, 50), pct(lat, 99), cpu)
			if err := r.settle("these puts"); err != nil {
				return err
			}
		}
		if r.cfg.binary {
			break
		}
	}
	return nil
}

// sustained is the sustained-ingestion test: -small 2 KB documents into the search thread
// (the first fifth over one connection, the rest over the largest -conns), then at once
// -sustain-big 100 KB documents into another thread, while the index lag (the daemon's
// /status index_pending_bytes) is sampled every 50 ms. It returns the search thread.
func (r *run) sustained(corp *corpus) (string, error) {
	stop := make(chan struct{})
	sampled := make(chan [2]float64, 1)
	go func() {
		var maxBytes, maxDocs float64
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				sampled <- [2]float64{maxBytes, maxDocs}
				return
			case <-t.C:
			}
			b, err := r.get(r.base + "/status")
			if err != nil {
				continue
			}
			var st struct {
				Store struct {
					Pending      float64 `json:"index_pending"`
					PendingBytes float64 `json:"index_pending_bytes"`
				} `json:"store"`
			}
			if json.Unmarshal(b, &st) == nil {
				maxBytes, maxDocs = max(maxBytes, st.Store.PendingBytes), max(maxDocs, st.Store.Pending)
			}
		}
	}()
	t0 := time.Now()
	sid, err := r.load(corp, 0, r.cfg.small, "")
	if err != nil {
		close(stop)
		<-sampled
		return "", err
	}
	if n := r.cfg.sustainBig; n > 0 {
		big, err := r.newThread()
		if err != nil {
			close(stop)
			<-sampled
			return "", err
		}
		c := r.cfg.conns[len(r.cfg.conns)-1]
		cpu0 := r.d.cpu()
		el, lat, err := r.putMany(corp, big, 3_000_000, n, 100*1024, c, r.cfg.binary)
		if err != nil {
			close(stop)
			<-sampled
			return "", err
		}
		cpu := r.cpuPerOp("sustain_100k", r.d.cpu()-cpu0, n)
		r.set("sustain_100k_per_s", float64(n)/el.Seconds())
		fmt.Printf("sustained:         then %d x 100 KB over %d conns = %.0f/s, p50 %v, daemon CPU %s/put\n", n, c, float64(n)/el.Seconds(), pct(lat, 50), cpu)
	}
	close(stop)
	m := <-sampled
	r.set("index_lag_max_mb", m[0]/1e6)
	r.set("index_lag_max_docs", m[1])
	fmt.Printf("index lag:         at most %.1f MB (%.0f artifacts) unindexed during the %v of sustained ingestion (bound: 128 MB per thread, 512 MB in all)\n", m[0]/1e6, m[1], time.Since(t0).Round(time.Millisecond))
	return sid, nil
}

// cpuPerOp records the daemon's CPU per operation of a phase (indexing behind the puts
// counts only as far as it ran during the phase) and returns it for printing.
func (r *run) cpuPerOp(key string, cpu time.Duration, n int) string {
	if cpu <= 0 || n == 0 {
		return "?"
	}
	per := cpu / time.Duration(n)
	r.set(key+"_cpu_us", float64(per)/1e3)
	return per.Round(time.Microsecond).String()
}

func (r *run) kind() string {
	if r.cfg.binary {
		return "binary"
	}
	return "text"
}

// load puts 2 KB documents from..to into the search thread (created when sid is ""): the
// first fifth over one connection, the rest over the largest -conns.
func (r *run) load(corp *corpus, from, to int, sid string) (string, error) {
	if sid == "" {
		var err error
		if sid, err = r.newThread(); err != nil {
			return "", err
		}
	}
	c := r.cfg.conns[len(r.cfg.conns)-1]
	if from == 0 {
		one := to / 5
		cpu0 := r.d.cpu()
		el, _, err := r.putMany(corp, sid, 0, one, 2048, 1, r.cfg.binary)
		if err != nil {
			return "", err
		}
		cpu := r.cpuPerOp("put_2k_c1", r.d.cpu()-cpu0, one)
		r.set("put_2k_c1_per_s", float64(one)/el.Seconds())
		fmt.Printf("puts 2 KB %s:     %d over 1 conn = %.0f/s, daemon CPU %s/put (target >= 5000/s)\n", r.kind(), one, float64(one)/el.Seconds(), cpu)
		from = one
	}
	cpu0 := r.d.cpu()
	el, _, err := r.putMany(corp, sid, from, to-from, 2048, c, r.cfg.binary)
	if err != nil {
		return "", err
	}
	key := fmt.Sprintf("put_2k_c%d", c)
	if from >= r.cfg.small {
		key = fmt.Sprintf("put_2k_c%d_to%dk", c, to/1000)
	}
	cpu := r.cpuPerOp(key, r.d.cpu()-cpu0, to-from)
	r.set(key+"_per_s", float64(to-from)/el.Seconds())
	fmt.Printf("puts 2 KB %s:     %d over %d conns (thread at %d -> %d) = %.0f/s, daemon CPU %s/put\n", r.kind(), to-from, c, from, to, float64(to-from)/el.Seconds(), cpu)
	return sid, nil
}

// putMany puts n documents numbered first.. of about size bytes over conns connections
// (random binary when binary) and returns the elapsed time and the sorted latencies.
func (r *run) putMany(corp *corpus, tid string, first, n, size, conns int, binary bool) (time.Duration, []time.Duration, error) {
	next := make(chan int, conns)
	errs := make(chan error, conns)
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	start := time.Now()
	for range conns {
		go func() {
			for i := range next {
				t0 := time.Now()
				if err := r.put(corp, tid, i, size, binary); err != nil {
					errs <- err
					for range next { // drain so the producer finishes
					}
					return
				}
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
			errs <- nil
		}()
	}
	for i := first; i < first+n; i++ {
		next <- i
	}
	close(next)
	var err error
	for range conns {
		if e := <-errs; e != nil {
			err = e
		}
	}
	el := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) == 0 {
		lat = []time.Duration{0}
	}
	return el, lat, err
}

// put stores document i (text from the corpus, or random binary typed binary).
func (r *run) put(corp *corpus, tid string, i, size int, binary bool) error {
	name, typ, body := corp.doc(i, size)
	if binary {
		body = make([]byte, size)
		rand.Read(body)
		name, typ = fmt.Sprintf("blob%07d.bin", i), "binary"
	}
	r.userBytes.Add(int64(len(body)))
	var req *http.Request
	if r.cfg.upload == "raw" {
		q := url.Values{"name": {name}, "type": {typ}}
		req, _ = http.NewRequest("POST", r.base+"/threads/"+tid+"/artifacts?"+q.Encode(), bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/octet-stream")
	} else {
		m := map[string]string{"name": name, "type": typ}
		if binary {
			m["content_base64"] = base64.StdEncoding.EncodeToString(body)
		} else {
			m["content"] = string(body)
		}
		b, _ := json.Marshal(m)
		req, _ = http.NewRequest("POST", r.base+"/threads/"+tid+"/artifacts", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
	}
	_, err := r.do(req, 201)
	return err
}

// freshness: how long after a put is acknowledged its unique word is found by search.
func (r *run) freshness(corp *corpus, sid string) error {
	var worst, sum time.Duration
	const n = 20
	for i := range n {
		word := fmt.Sprintf("freshword%dx%d", time.Now().UnixNano()%1e6, i)
		_, typ, body := corp.doc(5_000_000+i, 2048)
		body = append([]byte(word+"\n"), body...)
		b, _ := json.Marshal(map[string]string{"name": word + ".txt", "type": typ, "content": string(body)})
		req, _ := http.NewRequest("POST", r.base+"/threads/"+sid+"/artifacts", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		if _, err := r.do(req, 201); err != nil {
			return err
		}
		r.userBytes.Add(int64(len(body)))
		acked := time.Now()
		for {
			hits, err := r.search(sid, word)
			if err != nil {
				return err
			}
			if hits > 0 {
				break
			}
			if time.Since(acked) > 10*time.Second {
				return fmt.Errorf("artifact with %q not searchable 10s after its put was acknowledged", word)
			}
			time.Sleep(time.Millisecond)
		}
		d := time.Since(acked)
		sum += d
		worst = max(worst, d)
	}
	r.set("fresh_max_ms", ms(worst))
	fmt.Printf("search freshness:  put acknowledged -> found by search: mean %v, max %v over %d puts (target <= 100 ms)\n", (sum / n).Round(time.Microsecond), worst.Round(time.Microsecond), n)
	return nil
}

// startTrace starts an execution trace to path ("": none) and returns what stops it.
func startTrace(path string) func() error {
	if path == "" {
		return func() error { return nil }
	}
	f, err := os.Create(path)
	check(err)
	check(trace.Start(f))
	return func() error { trace.Stop(); return f.Close() }
}

// searches runs -queries queries of each kind through retrieval.search (no cache).
func (r *run) searches(corp *corpus, sid, at string) error {
	for _, kind := range []string{"one", "two", "phrase", "prefix", "miss"} {
		var lat []time.Duration
		hits := 0
		cpu0 := r.d.cpu()
		for _, q := range corp.queries(kind, r.cfg.queries) {
			t0 := time.Now()
			h, err := r.search(sid, q)
			if err != nil {
				return err
			}
			lat = append(lat, time.Since(t0))
			hits += h
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		cpu := r.cpuPerOp("search_"+kind+"_"+at, r.d.cpu()-cpu0, len(lat))
		r.set("search_"+kind+"_p50_ms_"+at, ms(pct(lat, 50)))
		r.set("search_"+kind+"_p99_ms_"+at, ms(pct(lat, 99)))
		fmt.Printf("search %-6s at %s: p50 %v p99 %v max %v, daemon CPU %s/query, avg %.1f hits (target p99 < 5 ms at 10k, < 10 ms at 100k)\n", kind, at, pct(lat, 50), pct(lat, 99), lat[len(lat)-1].Round(time.Microsecond), cpu, float64(hits)/float64(len(lat)))
	}
	return r.searchFsyncs(corp, sid, at)
}

// searchFsyncs counts the daemon's fsyncs during 20 searches (cache misses: each stores
// its result list, a cache entry, a call-log row, an event and metrics), once the indexer
// is idle and after a second's pause, so the background checkpoint of earlier writes is
// done. The count covers every thread of the daemon: a search that outlasts the
// checkpointer's 500 ms delay for deferred writes also counts its background sync.
func (r *run) searchFsyncs(corp *corpus, sid, at string) error {
	// the indexer's own checkpoints of search.db are not a search's: wait until it is idle
	if _, err := r.indexIdle(); err != nil {
		return err
	}
	time.Sleep(time.Second)
	qs := corp.queries("two", 20)
	n, err := r.d.fsyncsDuring(func() error {
		for _, q := range qs {
			if _, err := r.search(sid, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n < 0 {
		fmt.Println("search fsyncs:     not counted (needs strace and permission to trace the daemon)")
		return nil
	}
	r.set("search_fsyncs_per_query_"+at, float64(n)/float64(len(qs)))
	fmt.Printf("search fsyncs:     %d fsync/fdatasync calls in the daemon during %d searches at %s (target 0 on the request path)\n", n, len(qs), at)
	return nil
}

// indexIdle waits until the daemon's search index has caught up with every put (its
// /status index_pending is 0) and merged its segments once idle (index_merge_due false),
// and returns how long that took. A daemon without /status
// (the older prototype indexes nothing in the background) is idle at once.
func (r *run) indexIdle() (time.Duration, error) {
	t0 := time.Now()
	for deadline := t0.Add(5 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		b, err := r.get(r.base + "/status")
		if err != nil {
			return 0, nil
		}
		var st struct {
			Store *struct {
				Pending  int  `json:"index_pending"`
				MergeDue bool `json:"index_merge_due"`
			} `json:"store"`
		}
		if json.Unmarshal(b, &st) != nil || st.Store == nil || (st.Store.Pending == 0 && !st.Store.MergeDue) {
			return time.Since(t0), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the search index still trails by %d artifacts (merge due: %v) after %v", st.Store.Pending, st.Store.MergeDue, time.Since(t0).Round(time.Second))
		}
	}
}

// settle waits for the index to catch up after a phase of puts, so the next phase times
// its own work and not the indexing this one left behind, and prints how long it took.
func (r *run) settle(after string) error {
	c0 := r.d.cpu()
	took, err := r.indexIdle()
	if err != nil {
		return err
	}
	if took > 100*time.Millisecond {
		fmt.Printf("  index caught up %v after %s (daemon CPU %v meanwhile)\n", took.Round(time.Millisecond), after, (r.d.cpu() - c0).Round(time.Millisecond))
	}
	return nil
}

// search returns how many hits retrieval.search found for q.
func (r *run) search(sid, q string) (int, error) {
	b, _ := json.Marshal(map[string]any{"thread_id": sid, "capability": "retrieval.search", "args": map[string]any{"query": q, "limit": 10}, "no_cache": true})
	req, _ := http.NewRequest("POST", r.base+"/cap/invoke", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	out, err := r.do(req, 200)
	if err != nil {
		return 0, err
	}
	var res struct {
		Preview struct {
			Count int `json:"count"`
		} `json:"preview"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return 0, fmt.Errorf("search %q: %w: %.200s", q, err, out)
	}
	return res.Preview.Count, nil
}

func (r *run) newThread() (string, error) {
	req, _ := http.NewRequest("POST", r.base+"/threads", strings.NewReader(`{"name":"bench","if_name_taken":"next"}`)) // names are unique per store
	req.Header.Set("Content-Type", "application/json")
	b, err := r.do(req, 0)
	if err != nil {
		return "", err
	}
	var t struct {
		ID string `json:"thread_id"`
	}
	if err := json.Unmarshal(b, &t); err != nil || t.ID == "" {
		return "", fmt.Errorf("create thread: %v: %.200s", err, b)
	}
	return t.ID, nil
}

func (r *run) get(u string) ([]byte, error) {
	req, _ := http.NewRequest("GET", u, nil)
	return r.do(req, 200)
}

// do sends req and checks the status (want 0: any 2xx).
func (r *run) do(req *http.Request, want int) ([]byte, error) {
	if r.cfg.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.cfg.token)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if (want == 0 && resp.StatusCode/100 != 2) || (want != 0 && resp.StatusCode != want) {
		return nil, fmt.Errorf("%s %s: status %d: %.300s", req.Method, req.URL.Path, resp.StatusCode, b)
	}
	return b, nil
}

func (r *run) timeGets(u string, n int) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if _, err := r.get(u); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, nil
}

func pct(s []time.Duration, p int) time.Duration { return s[(len(s)-1)*p/100].Round(time.Microsecond) }

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
func us(d time.Duration) float64 { return float64(d) / 1e3 }

func fmtRates(rates []float64) string {
	s := make([]string, len(rates))
	for i, r := range rates {
		s[i] = strconv.Itoa(int(r))
	}
	return strings.Join(s, " ")
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func load1() float64 {
	f := strings.Fields(loadavg())
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func median(v []float64) (med, lo, hi float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

func metricKeys(rounds []map[string]float64) []string {
	seen := map[string]bool{}
	var keys []string
	for _, r := range rounds {
		for k := range r {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

func printMedians(rounds []map[string]float64) {
	for _, k := range metricKeys(rounds) {
		var v []float64
		for _, r := range rounds {
			if x, ok := r[k]; ok {
				v = append(v, x)
			}
		}
		m, lo, hi := median(v)
		fmt.Printf("  %-32s %10.2f   (%.2f-%.2f)\n", k, m, lo, hi)
	}
}

// printReport reads -json files and prints the median of each metric per label, side by
// side, with the ratio of every label to the first.
func printReport(files []string) error {
	if len(files) == 0 {
		return errors.New("-report needs the -json files to summarize as arguments")
	}
	byLabel := map[string][]map[string]float64{}
	var labels []string
	err := eachRound(files, func(label string, m map[string]float64) {
		if _, ok := byLabel[label]; !ok {
			labels = append(labels, label)
		}
		byLabel[label] = append(byLabel[label], m)
	})
	if err != nil {
		return err
	}
	var all []map[string]float64
	for _, l := range labels {
		all = append(all, byLabel[l]...)
	}
	fmt.Printf("| metric |")
	for _, l := range labels {
		fmt.Printf(" %s (median of %d) |", l, len(byLabel[l]))
	}
	for _, l := range labels[1:] {
		fmt.Printf(" %s ÷ %s |", l, labels[0])
	}
	fmt.Printf("\n|---|%s\n", strings.Repeat("---|", 2*len(labels)-1))
	for _, k := range metricKeys(all) {
		fmt.Printf("| %s |", k)
		meds := make([]float64, len(labels))
		for i, l := range labels {
			var v []float64
			for _, r := range byLabel[l] {
				if x, ok := r[k]; ok {
					v = append(v, x)
				}
			}
			if len(v) == 0 {
				fmt.Printf(" — |")
				meds[i] = -1
				continue
			}
			m, lo, hi := median(v)
			meds[i] = m
			fmt.Printf(" %.2f (%.2f-%.2f) |", m, lo, hi)
		}
		for i := 1; i < len(labels); i++ {
			if meds[0] > 0 && meds[i] >= 0 {
				fmt.Printf(" %.2f |", meds[i]/meds[0])
			} else {
				fmt.Printf(" — |")
			}
		}
		fmt.Println()
	}
	return nil
}

func writeProfile(name, path string) {
	f, err := os.Create(path)
	check(err)
	check(errors.Join(pprof.Lookup(name).WriteTo(f, 0), f.Close()))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}
