// Command memory measures the relay memory daemon on loopback with durable commits
// (SQLite WAL, synchronous=FULL): state patches/s from one client, header read latency,
// 100 KB artifact puts/s, and the header of a 10,000-fact thread.
//
//	go run ./bench/memory [-patches 5000] [-reads 5000] [-puts 1000] [-conns 1]
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/relaydev/relay/internal/memory/server"
)

func main() {
	patches := flag.Int("patches", 5000, "state patches to send")
	reads := flag.Int("reads", 5000, "header reads to time")
	puts := flag.Int("puts", 1000, "100 KB artifact puts")
	conns := flag.Int("conns", 1, "concurrent connections for the put test (patches are always sequential)")
	writers := flag.Int("writers", 8, "concurrent writers in the group-commit test (1 = skip)")
	grow := flag.Int("grow", 1000, "patches in the growing-state test")
	facts := flag.Int("facts", 10000, "facts in the big-thread header test")
	syncMode := flag.String("sync", "full", "store durability: full (fsync per commit) or normal")
	cpuprof := flag.String("cpuprofile", "", "write one CPU profile per phase to `prefix`.<phase>.prof (patch, concurrent, grow, header, put, bigheader)")
	flag.Parse()
	var profFile *os.File
	// phase ends the running phase's profile and starts the next one's.
	phase := func(name string) {
		if *cpuprof == "" {
			return
		}
		if profFile != nil {
			pprof.StopCPUProfile()
			check(profFile.Close())
			profFile = nil
		}
		if name == "" {
			return
		}
		f, err := os.Create(*cpuprof + "." + name + ".prof")
		check(err)
		check(pprof.StartCPUProfile(f))
		profFile = f
	}
	defer phase("")

	home, err := os.MkdirTemp("", "relay-bench-")
	check(err)
	defer os.RemoveAll(home)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan server.Info, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.RunOptions{Home: home, Port: 0, Version: "bench", Sync: *syncMode, Ready: func(i server.Info) { ready <- i }})
	}()
	var info server.Info
	select {
	case info = <-ready:
	case err := <-done:
		check(err)
	}
	base := info.URL
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	fmt.Printf("relay memory bench: %s, GOMAXPROCS=%d, %s, store %s (WAL, synchronous=%s), load average %s\n", runtime.Version(), runtime.GOMAXPROCS(0), base, home, *syncMode, loadavg())

	// 1. Sequential patches from one client, each stating its base version, on a bounded
	// state (50 facts, each patch replaces one value and appends nothing).
	tid := newThread(hc, base)
	var seed []map[string]any
	for j := 0; j < 50; j++ {
		seed = append(seed, map[string]any{"op": "add", "path": "/facts/-", "value": map[string]any{"id": "f" + strconv.Itoa(j), "key": "key-" + strconv.Itoa(j), "value": j}})
	}
	sb, _ := json.Marshal(seed)
	mustStatus(hc.Post(base+"/threads/"+tid+"/state/patch", "application/json", bytes.NewReader(sb)))(200)
	phase("patch")
	start, cpu0 := time.Now(), cpuTime()
	for i := 1; i <= *patches; i++ {
		p := fmt.Sprintf(`[{"op":"replace","path":"/facts/%d/value","value":%d}]`, i%50, i)
		req, _ := http.NewRequest("POST", base+"/threads/"+tid+"/state/patch", bytes.NewBufferString(p))
		req.Header.Set("If-Match", "v"+strconv.Itoa(i+1))
		req.Header.Set("Content-Type", "application/json")
		mustStatus(hc.Do(req))(200)
	}
	el := time.Since(start)
	fmt.Printf("state patches:     %d sequential on a 50-fact state in %v = %.0f patches/s (target >= 2000); CPU %v/patch (client+daemon)\n", *patches, el.Round(time.Millisecond), float64(*patches)/el.Seconds(), ((cpuTime() - cpu0) / time.Duration(*patches)).Round(time.Microsecond))

	// 1a. Concurrent writers, each on its own thread: group commit shares fsyncs.
	if *writers > 1 {
		var wwg sync.WaitGroup
		per := *patches / *writers
		phase("concurrent")
		start, cpu0 = time.Now(), cpuTime()
		for w := 0; w < *writers; w++ {
			wtid := newThread(hc, base)
			wwg.Add(1)
			go func() {
				defer wwg.Done()
				for i := 1; i <= per; i++ {
					p := fmt.Sprintf(`[{"op":"add","path":"/last_actions/-","value":{"at":"2026-01-01T00:00:00Z","description":"step %d"}},{"op":"remove","path":"/last_actions/0"}]`, i)
					if i == 1 {
						p = `[{"op":"add","path":"/last_actions/-","value":{"at":"2026-01-01T00:00:00Z","description":"start"}}]`
					}
					req, _ := http.NewRequest("POST", base+"/threads/"+wtid+"/state/patch", bytes.NewBufferString(p))
					req.Header.Set("If-Match", "v"+strconv.Itoa(i))
					mustStatus(hc.Do(req))(200)
				}
			}()
		}
		wwg.Wait()
		el = time.Since(start)
		fmt.Printf("concurrent:        %d writers x %d patches in %v = %.0f patches/s; CPU %v/patch\n", *writers, per, el.Round(time.Millisecond), float64(per**writers)/el.Seconds(), ((cpuTime() - cpu0) / time.Duration(per**writers)).Round(time.Microsecond))
	}

	// 1b. The same with a growing state: each patch appends a fact (cost grows with the document).
	gtid := newThread(hc, base)
	phase("grow")
	start, cpu0 = time.Now(), cpuTime()
	for i := 1; i <= *grow; i++ {
		p := fmt.Sprintf(`[{"op":"add","path":"/facts/-","value":{"id":"f%d","key":"k%d","value":%d}}]`, i, i, i)
		req, _ := http.NewRequest("POST", base+"/threads/"+gtid+"/state/patch", bytes.NewBufferString(p))
		req.Header.Set("If-Match", "v"+strconv.Itoa(i))
		mustStatus(hc.Do(req))(200)
	}
	el = time.Since(start)
	fmt.Printf("growing state:     %d appends (0 -> %d facts) in %v = %.0f patches/s; CPU %v/patch\n", *grow, *grow, el.Round(time.Millisecond), float64(*grow)/el.Seconds(), ((cpuTime() - cpu0) / time.Duration(*grow)).Round(time.Microsecond))

	// 2. Header read latency (thread above holds the patches' facts).
	phase("header")
	lat := timeGets(hc, base+"/threads/"+tid+"/state/header", *reads)
	fmt.Printf("header read:       n=%d p50=%v p99=%v max=%v (target p99 < 2ms)\n", *reads, pct(lat, 50), pct(lat, 99), lat[len(lat)-1])

	// 3. 100 KB artifact puts.
	atid := newThread(hc, base)
	bodies := make([][]byte, *puts)
	for i := range bodies {
		b := make([]byte, 100*1024)
		rand.Read(b)
		bodies[i] = b
	}
	var wg sync.WaitGroup
	next := make(chan []byte)
	phase("put")
	start, cpu0 = time.Now(), cpuTime()
	for c := 0; c < *conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range next {
				req, _ := http.NewRequest("POST", base+"/threads/"+atid+"/artifacts?type=binary", bytes.NewReader(b))
				req.Header.Set("Content-Type", "application/octet-stream")
				mustStatus(hc.Do(req))(201)
			}
		}()
	}
	for _, b := range bodies {
		next <- b
	}
	close(next)
	wg.Wait()
	el = time.Since(start)
	fmt.Printf("artifact puts:     %d x 100 KB over %d conn(s) in %v = %.0f puts/s (target >= 500); CPU %v/put\n", *puts, *conns, el.Round(time.Millisecond), float64(*puts)/el.Seconds(), ((cpuTime() - cpu0) / time.Duration(*puts)).Round(time.Microsecond))

	// 4. A thread with many facts: header stays <= 2 KB and is served fast.
	phase("bigheader")
	btid := newThread(hc, base)
	const per = 500
	for i := 0; i < *facts; i += per {
		var ops []map[string]any
		for j := i; j < i+per && j < *facts; j++ {
			ops = append(ops, map[string]any{"op": "add", "path": "/facts/-", "value": map[string]any{"id": "f" + strconv.Itoa(j), "key": "key-" + strconv.Itoa(j), "value": "a fact of moderate length number " + strconv.Itoa(j)}})
		}
		b, _ := json.Marshal(ops)
		req, _ := http.NewRequest("POST", base+"/threads/"+btid+"/state/patch", bytes.NewReader(b))
		mustStatus(hc.Do(req))(200)
	}
	resp, err := hc.Get(base + "/threads/" + btid + "/state")
	check(err)
	full, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp, err = hc.Get(base + "/threads/" + btid + "/state/header")
	check(err)
	hb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lat = timeGets(hc, base+"/threads/"+btid+"/state/header", *reads)
	fmt.Printf("10k-fact header:   state %d bytes, header %d bytes (X-Relay-Truncated=%s), p50=%v p99=%v (target <= 2048 bytes, < 2ms)\n",
		len(full), len(bytes.TrimSpace(hb)), resp.Header.Get("X-Relay-Truncated"), pct(lat, 50), pct(lat, 99))

	fmt.Printf("load average at the end: %s\n", loadavg())
	phase("")
	cancel()
	check(<-done)
}

// cpuTime is this process's user+system CPU time (client and daemon both run here), so
// figures can be compared across machines that are busy with other work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func newThread(hc *http.Client, base string) string {
	resp, err := hc.Post(base+"/threads", "application/json", bytes.NewBufferString(`{"name":"bench"}`))
	check(err)
	defer resp.Body.Close()
	var t struct {
		ID string `json:"thread_id"`
	}
	check(json.NewDecoder(resp.Body).Decode(&t))
	return t.ID
}

func timeGets(hc *http.Client, url string, n int) []time.Duration {
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t := time.Now()
		resp, err := hc.Get(url)
		check(err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			panic(resp.Status)
		}
		lat = append(lat, time.Since(t))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat
}

func pct(s []time.Duration, p int) time.Duration { return s[(len(s)-1)*p/100].Round(time.Microsecond) }

func mustStatus(resp *http.Response, err error) func(int) {
	check(err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return func(want int) {
		if resp.StatusCode != want {
			panic(fmt.Sprintf("status %d, want %d: %s", resp.StatusCode, want, b))
		}
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
