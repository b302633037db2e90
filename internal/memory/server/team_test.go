package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/backend"
	"github.com/relaydev/relay/internal/testsupport/pgtest"
	"github.com/relaydev/relay/internal/testsupport/s3test"
)

// teamClient talks to one daemon over HTTP.
type teamClient struct {
	t   *testing.T
	url string
	hc  *http.Client
}

func (c teamClient) do(method, path string, body []byte, hdr ...string) (int, http.Header, []byte, error) {
	req, _ := http.NewRequest(method, c.url+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// addFact adds a fact with If-Match on the version it read, retrying on 409 until it is
// accepted; it returns the accepted version, or an error when the daemon is unreachable.
func (c teamClient) addFact(tid, id string) (int, error) {
	for {
		code, hdr, _, err := c.do("GET", "/threads/"+tid+"/state", nil)
		if err != nil {
			return 0, err
		}
		if code != 200 {
			return 0, fmt.Errorf("read state: %d", code)
		}
		etag := strings.Trim(hdr.Get("ETag"), `"`)
		code, _, b, err := c.do("POST", "/threads/"+tid+"/state/patch",
			[]byte(`[{"op":"add","path":"/facts/-","value":{"id":"`+id+`","key":"k","value":1}}]`), "If-Match", etag)
		if err != nil {
			return 0, err
		}
		switch code {
		case 200:
			var res memory.PatchResult
			if err := json.Unmarshal(b, &res); err != nil {
				return 0, err
			}
			return res.Version, nil
		case 409:
			continue // another writer, maybe on the other daemon, got there first
		default:
			return 0, fmt.Errorf("patch %s: %d %s", id, code, b)
		}
	}
}

func factIDs(t *testing.T, c teamClient, tid string) (int, map[string]int) {
	t.Helper()
	code, _, b, err := c.do("GET", "/threads/"+tid+"/state", nil)
	if err != nil || code != 200 {
		t.Fatalf("read state from %s: %d %v", c.url, code, err)
	}
	var doc struct {
		Version int                   `json:"version"`
		Facts   []struct{ ID string } `json:"facts"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, f := range doc.Facts {
		seen[f.ID]++
	}
	return doc.Version, seen
}

// sseIDs reads a thread's event stream from c after id `after` until it has n events or the
// deadline passes; it returns the event ids in the order received.
func sseIDs(ctx context.Context, c teamClient, tid string, after int64, n int) ([]int64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", c.url+"/threads/"+tid+"/events/stream", nil)
	req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var ids []int64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && len(ids) < n {
		if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return ids, err
			}
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// TestTwoDaemonsOneStore runs two daemon processes on one PostgreSQL database: 8 writers,
// half on each daemon, add facts with If-Match and retry on 409. Every acknowledged fact is
// there exactly once (0 lost, 0 duplicated) through both daemons, and a follower of daemon
// B's event stream, disconnected halfway and resumed by id, sees every event written
// through either daemon exactly once, in order.
func TestTwoDaemonsOneStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts daemon processes")
	}
	url := pgtest.New(t)
	cmdA, urlA := startDaemonProcess(t, t.TempDir(), url)
	defer cmdA.Process.Kill()
	cmdB, urlB := startDaemonProcess(t, t.TempDir(), url)
	defer cmdB.Process.Kill()
	hc := &http.Client{Timeout: 30 * time.Second}
	a, b := teamClient{t, urlA, hc}, teamClient{t, urlB, hc}

	code, _, body, err := a.do("POST", "/threads", []byte(`{"name":"team"}`))
	if err != nil || code != 201 {
		t.Fatalf("create thread: %d %v", code, err)
	}
	var th memory.Thread
	json.Unmarshal(body, &th)
	if code, _, _, _ := b.do("GET", "/threads/"+th.ID, nil); code != 200 {
		t.Fatalf("daemon B does not see the thread created through A: %d", code)
	}

	const writers, each = 8, 20
	total := writers * each
	// Follow B's stream from the thread's first event: half of the patches, then resume.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type result struct {
		ids []int64
		err error
	}
	first := make(chan result, 1)
	go func() {
		ids, err := sseIDs(ctx, b, th.ID, th.LastEventID, total/2)
		first <- result{ids, err}
	}()

	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[string]int{}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := []teamClient{a, b}[w%2]
			for i := range each {
				id := fmt.Sprintf("w%d-%d", w, i)
				v, err := c.addFact(th.ID, id)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[id] = v
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	versions := map[int]bool{}
	for id, v := range acked {
		if versions[v] {
			t.Fatalf("version %d acknowledged twice (%s)", v, id)
		}
		versions[v] = true
	}
	for _, c := range []teamClient{a, b} {
		v, seen := factIDs(t, c, th.ID)
		lost, dup := 0, 0
		for id := range acked {
			switch seen[id] {
			case 0:
				lost++
			case 1:
			default:
				dup++
			}
		}
		if lost != 0 || dup != 0 || len(seen) != total || v != total+1 {
			t.Fatalf("through %s: %d lost, %d duplicated, %d facts, version %d (want %d facts at v%d)", c.url, lost, dup, len(seen), v, total, total+1)
		}
	}

	r := <-first
	if r.err != nil || len(r.ids) != total/2 {
		t.Fatalf("first half of B's stream: %d events, %v", len(r.ids), r.err)
	}
	rest, err := sseIDs(ctx, b, th.ID, r.ids[len(r.ids)-1], total-total/2)
	if err != nil {
		t.Fatal(err)
	}
	all := append(r.ids, rest...)
	code, _, body, err = a.do("GET", "/threads/"+th.ID+"/events?after="+strconv.FormatInt(th.LastEventID, 10)+"&limit=1000", nil)
	if err != nil || code != 200 {
		t.Fatalf("list events: %d %v", code, err)
	}
	var listed struct {
		Events []memory.Event `json:"events"`
	}
	if err := json.Unmarshal(body, &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed.Events) != total || len(all) != total {
		t.Fatalf("%d events listed, %d streamed by B, want %d", len(listed.Events), len(all), total)
	}
	for i, e := range listed.Events {
		if all[i] != e.ID {
			t.Fatalf("stream event %d is id %d, the log has %d", i, all[i], e.ID)
		}
	}
}

// TestKillOneDaemonUnderLoad kills one of two daemons with SIGKILL while writers on it and
// on the other are patching; every write acknowledged by either is readable through the
// survivor and through a daemon started afterwards.
func TestKillOneDaemonUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts daemon processes")
	}
	url := pgtest.New(t)
	cmdA, urlA := startDaemonProcess(t, t.TempDir(), url)
	defer cmdA.Process.Kill()
	cmdB, urlB := startDaemonProcess(t, t.TempDir(), url)
	defer cmdB.Process.Kill()
	hc := &http.Client{Timeout: 30 * time.Second}
	a, b := teamClient{t, urlA, hc}, teamClient{t, urlB, hc}
	code, _, body, err := a.do("POST", "/threads", []byte(`{}`))
	if err != nil || code != 201 {
		t.Fatalf("create thread: %d %v", code, err)
	}
	var th memory.Thread
	json.Unmarshal(body, &th)

	var mu sync.Mutex
	acked := map[string]bool{}
	ackedOnA := 0
	killed := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := []teamClient{a, b}[w%2]
			for i := 0; i < 40; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := c.addFact(th.ID, id); err != nil {
					if c.url == urlA {
						select {
						case <-killed:
							return // A is gone: this write was never acknowledged
						default:
						}
					}
					t.Error(err)
					return
				}
				mu.Lock()
				acked[id] = true
				if c.url == urlA {
					ackedOnA++
					if ackedOnA == 15 {
						cmdA.Process.Kill() // SIGKILL mid-load
						close(killed)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	cmdA.Wait()
	if t.Failed() {
		return
	}
	cmdC, urlC := startDaemonProcess(t, t.TempDir(), url)
	defer cmdC.Process.Kill()
	for _, c := range []teamClient{b, {t, urlC, hc}} {
		_, seen := factIDs(t, c, th.ID)
		for id := range acked {
			if seen[id] != 1 {
				t.Fatalf("acknowledged %s appears %d times through %s", id, seen[id], c.url)
			}
		}
	}
	if len(acked) < 40*2+15 {
		t.Fatalf("only %d writes acknowledged; the load did not run", len(acked))
	}
}

// TestLargeArtifactsThroughTheBucket puts a 20 MiB body through one daemon of a PostgreSQL
// store whose bodies live in a bucket (spooled, multipart upload) and reads it back
// streamed through another daemon; the same bytes through the second daemon are stored once.
func TestLargeArtifactsThroughTheBucket(t *testing.T) {
	srv := s3test.Start(t)
	loc := srv.Bucket(t, "large", "relay")
	url := pgtest.New(t)
	open := func() *httptest.Server {
		st, err := backend.Open(context.Background(), backend.Config{URL: url, Artifacts: loc})
		if err != nil {
			t.Fatal(err)
		}
		s := New(Options{Store: st, Version: "test"})
		h := httptest.NewServer(s.Handler())
		t.Cleanup(func() { s.Close(); h.Close(); st.Close() })
		return h
	}
	hc := &http.Client{Timeout: 2 * time.Minute}
	a, b := teamClient{t, open().URL, hc}, teamClient{t, open().URL, hc}
	code, _, body, err := a.do("POST", "/threads", []byte(`{}`))
	if err != nil || code != 201 {
		t.Fatalf("create thread: %d %v", code, err)
	}
	var th memory.Thread
	json.Unmarshal(body, &th)
	big := make([]byte, 20<<20)
	for i := range big {
		big[i] = byte(i*7 + i/4096)
	}
	put := func(c teamClient) (int, memory.Artifact) {
		req, _ := http.NewRequest("POST", c.url+"/threads/"+th.ID+"/artifacts?name=big.bin", bytes.NewReader(big))
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var art memory.Artifact
		json.NewDecoder(resp.Body).Decode(&art)
		return resp.StatusCode, art
	}
	code, art := put(a)
	if code != 201 || art.Size != int64(len(big)) || art.Type != memory.TypeBinary {
		t.Fatalf("put through A: %d %+v", code, art)
	}
	if code, again := put(b); code != 200 || !again.Deduplicated || again.Ref != art.Ref {
		t.Fatalf("same bytes through B: %d %+v", code, again)
	}
	code, hdr, got, err := b.do("GET", "/threads/"+th.ID+"/artifacts/"+art.Ref+"?raw=1", nil)
	if err != nil || code != 200 || !bytes.Equal(got, big) || hdr.Get("Content-Length") != strconv.Itoa(len(big)) {
		t.Fatalf("read through B: %d, %d bytes, %v", code, len(got), err)
	}
	if code, _, _, _ := b.do("GET", "/threads/"+th.ID+"/artifacts/"+art.Ref+"?raw=1", nil, "If-None-Match", `"`+art.Hash+`"`); code != 304 {
		t.Fatalf("conditional read: %d, want 304", code)
	}
	objects := 0
	for range srv.Client.ListObjects(context.Background(), "large", minio.ListObjectsOptions{Prefix: "relay/sha256/", Recursive: true}) {
		objects++
	}
	if objects != 1 {
		t.Fatalf("%d objects in the bucket, want the one body", objects)
	}
}
