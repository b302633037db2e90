// Command team measures several relay daemons sharing one PostgreSQL store: it starts
// -daemons daemons (each its own RELAY_HOME, as on separate machines) on -store and runs
// -writers concurrent writers spread over them, then checks that nothing was lost or
// duplicated.
//
//	go run ./bench/team -store postgres://relay@127.0.0.1:5432/bench [-writers 8] [-daemons 2] [-patches 250]
//
// Two workloads: "own thread" (each writer patches its own thread, the common case of one
// agent per thread) and "one thread" (every writer patches the same thread with If-Match on
// the version it read and retries on 409; the worst case, where daemons contend).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relaydev/relay/bench/internal/build"
)

func main() {
	relay := flag.String("relay", "", "relay binary (default: go build ./cmd/relay)")
	store := flag.String("store", "", "postgres:// URL every daemon uses (required)")
	daemons := flag.Int("daemons", 2, "daemons sharing the store")
	writers := flag.Int("writers", 8, "concurrent writers, spread round-robin over the daemons")
	patches := flag.Int("patches", 250, "patches per writer")
	flag.Parse()
	if *store == "" {
		fail(fmt.Errorf("-store postgres://… is required"))
	}
	bin := *relay
	if bin == "" {
		dir, err := os.MkdirTemp("", "relay-bench-team-")
		fail(err)
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "relay")
		fail(build.Relay("", bin))
	}
	var urls []string
	for i := range *daemons {
		home, err := os.MkdirTemp("", "relay-bench-home-")
		fail(err)
		defer os.RemoveAll(home)
		cmd := exec.Command(bin, "up", "--json", "--port", fmt.Sprint(17600+i*10), "--store", *store)
		cmd.Env = append(os.Environ(), "RELAY_HOME="+home)
		out, err := cmd.Output()
		if err != nil {
			fail(fmt.Errorf("relay up: %v", err))
		}
		var info struct{ URL string }
		fail(json.Unmarshal(out, &info))
		urls = append(urls, info.URL)
		defer func() {
			down := exec.Command(bin, "down")
			down.Env = append(os.Environ(), "RELAY_HOME="+home)
			down.Run()
		}()
	}
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	fmt.Printf("%d daemons on one PostgreSQL store, %d writers, %d patches each\n", *daemons, *writers, *patches)
	for _, shared := range []bool{false, true} {
		run(hc, urls, *writers, *patches, shared)
	}
}

func run(hc *http.Client, urls []string, writers, patches int, shared bool) {
	threads := make([]string, writers)
	for w := range threads {
		if shared && w > 0 {
			threads[w] = threads[0]
			continue
		}
		var th struct {
			ID string `json:"thread_id"`
		}
		_, body := call(hc, "POST", urls[w%len(urls)]+"/threads", `{}`, "")
		fail(json.Unmarshal(body, &th))
		threads[w] = th.ID
	}
	var mu sync.Mutex
	var lat []time.Duration
	conflicts := 0
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := urls[w%len(urls)] + "/threads/" + threads[w]
			for i := range patches {
				patch := fmt.Sprintf(`[{"op":"add","path":"/facts/-","value":{"id":"w%d-%d","key":"k","value":%d}}]`, w, i, i)
				t0 := time.Now()
				for {
					code, hdr, _ := callH(hc, "GET", base+"/state", "", "")
					if code != 200 {
						fail(fmt.Errorf("read state: %d", code))
					}
					code, _, b := callH(hc, "POST", base+"/state/patch", patch, strings.Trim(hdr.Get("ETag"), `"`))
					if code == 409 {
						mu.Lock()
						conflicts++
						mu.Unlock()
						continue
					}
					if code != 200 {
						fail(fmt.Errorf("patch: %d %s", code, b))
					}
					break
				}
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	// Verify through the last daemon: every fact once.
	seen := map[string]int{}
	for _, id := range uniq(threads) {
		_, body := call(hc, "GET", urls[len(urls)-1]+"/threads/"+id+"/state", "", "")
		var doc struct {
			Facts []struct{ ID string } `json:"facts"`
		}
		fail(json.Unmarshal(body, &doc))
		for _, f := range doc.Facts {
			seen[f.ID]++
		}
	}
	lost, dup := 0, 0
	for w := range writers {
		for i := range patches {
			switch seen[fmt.Sprintf("w%d-%d", w, i)] {
			case 0:
				lost++
			case 1:
			default:
				dup++
			}
		}
	}
	slices.Sort(lat)
	name := "own thread per writer"
	if shared {
		name = "one thread, If-Match + retry"
	}
	n := writers * patches
	fmt.Printf("%-30s %6.0f patches/s  p50 %-8s p99 %-8s  409 retries %d  lost %d  duplicated %d\n",
		name, float64(n)/elapsed.Seconds(), lat[n/2].Round(time.Microsecond*10), lat[n*99/100].Round(time.Microsecond*10), conflicts, lost, dup)
}

func uniq(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return slices.Compact(c)
}

func call(hc *http.Client, method, url, body, ifMatch string) (int, []byte) {
	code, _, b := callH(hc, method, url, body, ifMatch)
	if code >= 300 {
		fail(fmt.Errorf("%s %s: %d %s", method, url, code, b))
	}
	return code, b
}

func callH(hc *http.Client, method, url, body, ifMatch string) (int, http.Header, []byte) {
	req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	fail(err)
	req.Header.Set("Content-Type", "application/json")
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	resp, err := hc.Do(req)
	fail(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	fail(err)
	return resp.StatusCode, resp.Header, b
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/team:", err)
		os.Exit(1)
	}
}
