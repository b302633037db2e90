package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/backend"
	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/memory/blobgc"
	"github.com/relaydev/relay/internal/testsupport/pgtest"
	"github.com/relaydev/relay/internal/testsupport/s3test"
)

// TestSweepWhileTwoDaemonsPut runs sweeps of the bucket (grace 0: every unreferenced body
// is fair game at once) back to back through two daemons of one PostgreSQL store while 4
// writers, half on each daemon, put artifacts, and while a third party uploads the very
// bodies the writers are about to put, without artifacts (as crashed puts leave them). So
// a put usually finds its body already in the bucket, unreferenced, and spends tens of
// milliseconds indexing its text before it commits: a sweep looking then must be kept off
// by the put's pin. Every acknowledged artifact reads back through both daemons, and a
// last sweep leaves exactly the referenced bodies.
func TestSweepWhileTwoDaemonsPut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and versitygw")
	}
	ctx := context.Background()
	srv := s3test.Start(t)
	loc := srv.Bucket(t, "sweep", "relay")
	url := pgtest.New(t)
	var cs []teamClient
	hc := &http.Client{Timeout: time.Minute}
	for range 2 {
		st, err := backend.Open(ctx, backend.Config{URL: url, Artifacts: loc})
		if err != nil {
			t.Fatal(err)
		}
		s := New(Options{Store: st, Version: "test"})
		h := httptest.NewServer(s.Handler())
		t.Cleanup(func() { s.Close(); h.Close(); st.Close() })
		cs = append(cs, teamClient{t, h.URL, hc})
	}
	bs, err := blob.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}

	// Every body a writer will put (distinct, 192 KiB of text each), and junk no one puts.
	const writers, each = 4, 8
	bodies := make([][]byte, writers*each)
	for i := range bodies {
		var b bytes.Buffer
		for j := 0; b.Len() < 192<<10; j++ {
			fmt.Fprintf(&b, "Body %d line %d: the quick brown fox %d jumps over the lazy dog %d.\n", i, j, i*j, j)
		}
		bodies[i] = b.Bytes()
	}
	junk := [][]byte{[]byte("left by a crash"), []byte("left by a failed import")}
	for _, b := range junk {
		if _, err := bs.Put(ctx, blob.Sum(b), int64(len(b)), bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	var next [writers]atomic.Int64 // each writer's next body

	stop := make(chan struct{})
	var bg sync.WaitGroup
	// The uploader: the next body of every writer, without an artifact, again and again.
	bg.Add(1)
	go func() {
		defer bg.Done()
		for {
			for w := range writers {
				select {
				case <-stop:
					return
				default:
				}
				i := next[w].Load()
				if i >= each {
					continue
				}
				b := bodies[w*each+int(i)]
				if _, err := bs.Put(ctx, blob.Sum(b), int64(len(b)), bytes.NewReader(b)); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	// Sweeps, back to back, alternating daemons.
	var sweeps, deleted atomic.Int64
	bg.Add(1)
	go func() {
		defer bg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			code, _, body, err := cs[i%2].do("POST", "/store/gc?grace=0", nil)
			if err != nil {
				t.Error(err)
				return
			}
			if code == http.StatusConflict { // the other daemon is sweeping
				continue
			}
			var rep blobgc.Report
			if code != 200 || json.Unmarshal(body, &rep) != nil {
				t.Errorf("sweep: %d %s", code, body)
				return
			}
			sweeps.Add(1)
			deleted.Add(int64(rep.Deleted))
		}
	}()

	// 8 writers, each in its own thread, half on each daemon.
	type acked struct {
		thread, ref string
		content     []byte
	}
	var mu sync.Mutex
	var puts []acked
	var wg sync.WaitGroup
	for w := range writers {
		c := cs[w%2]
		code, _, body, err := c.do("POST", "/threads", []byte(`{}`))
		if err != nil || code != 201 {
			t.Fatalf("create thread: %d %v", code, err)
		}
		var th memory.Thread
		json.Unmarshal(body, &th)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				content := bodies[w*each+i]
				code, _, body, err := c.do("POST", "/threads/"+th.ID+"/artifacts?name=n.txt", content, "Content-Type", "application/octet-stream")
				next[w].Add(1)
				if err != nil || (code != 201 && code != 200) {
					t.Errorf("put through %s: %d %s %v", c.url, code, body, err)
					return
				}
				var a memory.Artifact
				json.Unmarshal(body, &a)
				mu.Lock()
				puts = append(puts, acked{th.ID, a.Ref, content})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	if t.Failed() {
		return
	}
	if sweeps.Load() < 2 || deleted.Load() == 0 {
		t.Fatalf("%d sweeps deleted %d bodies while the writers ran; the sweep did not race the puts", sweeps.Load(), deleted.Load())
	}
	t.Logf("%d puts while %d sweeps deleted %d bodies", len(puts), sweeps.Load(), deleted.Load())

	for _, p := range puts {
		for _, c := range cs {
			code, _, got, err := c.do("GET", "/threads/"+p.thread+"/artifacts/"+p.ref+"?raw=1", nil)
			if err != nil || code != 200 || !bytes.Equal(got, p.content) {
				t.Fatalf("acknowledged artifact %s through %s after the sweeps: %d %q %v", p.ref, c.url, code, got, err)
			}
		}
	}
	// A last sweep leaves exactly the referenced bodies: the junk is gone.
	code, _, body, err := cs[0].do("POST", "/store/gc?grace=0", nil)
	if err != nil || code != 200 {
		t.Fatalf("last sweep: %d %s %v", code, body, err)
	}
	left := map[string]bool{}
	lister := bs.(blob.Collectable)
	if err := lister.List(ctx, func(o blob.Object) error { left[o.Sum] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, p := range puts {
		want[blob.Sum(p.content)] = true
	}
	if len(left) != len(want) {
		t.Fatalf("%d bodies left in the bucket, %d referenced", len(left), len(want))
	}
	for s := range want {
		if !left[s] {
			t.Fatalf("referenced body %s is gone", s[:12])
		}
	}
	// The dry run through either daemon now finds nothing to collect.
	code, _, body, err = cs[1].do("GET", "/store/gc", nil)
	var rep blobgc.Report
	if err != nil || code != 200 || json.Unmarshal(body, &rep) != nil || rep.Orphans != 0 || rep.Objects != len(want) || !rep.DryRun {
		t.Fatalf("dry run after the last sweep: %d %s %v", code, body, err)
	}
}

// TestArtifactLargerThanTheDatabaseLimit: with a bucket, a 72 MiB raw upload (over the 50
// MiB limit of bodies kept in a database, and over the 70 MiB cap of other requests) is
// stored and read back byte for byte; without one it is refused with 413.
func TestArtifactLargerThanTheDatabaseLimit(t *testing.T) {
	ctx := context.Background()
	big := bytes.Repeat([]byte("0123456789abcdef"), 72<<16) // 72 MiB
	for _, bucket := range []bool{true, false} {
		cfg := backend.Config{Home: t.TempDir()}
		if bucket {
			cfg.Artifacts = "file://" + t.TempDir()
		}
		st, err := backend.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := New(Options{Store: st, Version: "test"})
		h := httptest.NewServer(s.Handler())
		c := teamClient{t, h.URL, &http.Client{Timeout: 2 * time.Minute}}
		code, _, body, err := c.do("POST", "/threads", []byte(`{}`))
		var th memory.Thread
		if err != nil || code != 201 || json.Unmarshal(body, &th) != nil {
			t.Fatalf("create thread: %d %v", code, err)
		}
		code, _, body, err = c.do("POST", "/threads/"+th.ID+"/artifacts?name=big.bin", big, "Content-Type", "application/octet-stream")
		if !bucket {
			if err != nil || code != http.StatusRequestEntityTooLarge {
				t.Fatalf("72 MiB without a bucket: %d %s %v, want 413", code, body, err)
			}
		} else {
			var a memory.Artifact
			if err != nil || code != 201 || json.Unmarshal(body, &a) != nil || a.Size != int64(len(big)) {
				t.Fatalf("72 MiB with a bucket: %d %s %v", code, body, err)
			}
			code, _, got, err := c.do("GET", "/threads/"+th.ID+"/artifacts/"+a.Ref+"?raw=1", nil)
			if err != nil || code != 200 || !bytes.Equal(got, big) {
				t.Fatalf("read back: %d, %d bytes, %v", code, len(got), err)
			}
		}
		s.Close()
		h.Close()
		st.Close()
	}
}
