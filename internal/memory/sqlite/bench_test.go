package sqlite

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/testsupport"
	"github.com/relaydev/relay/internal/testsupport/realtext"
)

// BenchmarkPatchState: one durable (synchronous=FULL) patch on a 50-fact state, no HTTP.
func BenchmarkPatchState(b *testing.B) {
	for _, mode := range []string{"full", "normal"} {
		b.Run("sync="+mode, func(b *testing.B) {
			ctx := context.Background()
			s, err := OpenSQLite(b.TempDir(), Options{Sync: mode})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			th, _ := s.CreateThread(ctx, memory.CreateThreadParams{})
			var ops []map[string]any
			for j := 0; j < 50; j++ {
				ops = append(ops, map[string]any{"op": "add", "path": "/facts/-", "value": map[string]any{"id": "f" + strconv.Itoa(j), "key": "k", "value": j}})
			}
			p, _ := json.Marshal(ops)
			if _, err := s.PatchState(ctx, th.ID, p, 1, ""); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				patch := []byte(fmt.Sprintf(`[{"op":"replace","path":"/facts/%d/value","value":%d}]`, i%50, i))
				if _, err := s.PatchState(ctx, th.ID, patch, i+2, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHeader10kFacts: the header of a 10,000-fact thread, cached (what the daemon
// serves) and rebuilt after each change.
func BenchmarkHeader10kFacts(b *testing.B) {
	ctx := context.Background()
	s, err := OpenSQLite(b.TempDir(), Options{Sync: "normal"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	th, _ := s.CreateThread(ctx, memory.CreateThreadParams{})
	for i := 0; i < 10000; i += 1000 {
		var ops []map[string]any
		for j := i; j < i+1000; j++ {
			ops = append(ops, map[string]any{"op": "add", "path": "/facts/-", "value": map[string]any{"id": "f" + strconv.Itoa(j), "key": "key-" + strconv.Itoa(j), "value": "a fact of moderate length " + strconv.Itoa(j)}})
		}
		p, _ := json.Marshal(ops)
		if _, err := s.PatchState(ctx, th.ID, p, 0, ""); err != nil {
			b.Fatal(err)
		}
	}
	h, err := s.Header(ctx, th.ID)
	if err != nil || len(h.JSON) > 2048 {
		b.Fatalf("header %d bytes: %v", len(h.JSON), err)
	}
	b.Run("cached", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := s.Header(ctx, th.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("uncached", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s.AddMetrics(ctx, th.ID, memory.Metrics{}) // drops the cached header (and costs one commit)
			if _, err := s.Header(ctx, th.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPutArtifact100KB: one durable 100 KB artifact put, no HTTP.
//   - text: slices of this package's own Go source typed text, what users store (source,
//     markdown, logs); the index is built in the background, and the timing ends once it
//     has caught up, so indexing is counted too.
//   - binary: random bytes typed binary: the put path alone, with nothing to index.
func BenchmarkPutArtifact100KB(b *testing.B) {
	for _, kind := range []string{"text", "binary"} {
		b.Run(kind, func(b *testing.B) { benchPut(b, 100<<10, kind) })
	}
}

// BenchmarkPutArtifact2KB: the small text put (notes, tool output), index included as above.
func BenchmarkPutArtifact2KB(b *testing.B) { benchPut(b, 2<<10, "text") }

func benchPut(b *testing.B, size int, kind string) {
	src := realtext.Files(b, "*.go", size+50<<10)
	ctx := context.Background()
	s, err := OpenSQLite(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	th, _ := s.CreateThread(ctx, memory.CreateThreadParams{})
	content := make([]byte, size)
	typ := memory.TypeText
	if kind == "binary" {
		typ = memory.TypeBinary
		rand.Read(content)
	}
	b.SetBytes(int64(len(content)))
	b.ResetTimer()
	cpu0 := testsupport.CPUTime()
	for i := 0; i < b.N; i++ {
		if kind == "text" {
			off := (i * 7919) % (len(src) - len(content))
			copy(content, src[off:])
		}
		copy(content, strconv.Itoa(i)+"-") // distinct content, no dedupe
		if _, err := s.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Type: typ, Content: content}); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.waitIndexed(ctx, th.ID); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(testsupport.CPUTime()-cpu0)/1e3/float64(b.N), "cpu-us/op")
}

// BenchmarkPatchAppend: what bench/memory's patch phase sends, without HTTP: durable
// appends of one ~100-byte fact each, with the base version, to growing states; seq is one
// writer, writers8 eight writers on threads of their own (group commit). cpu-us/op is the
// process's CPU per patch (fsync's kernel time included), steadier than ns/op on a shared
// machine.
func BenchmarkPatchAppend(b *testing.B) {
	for _, writers := range []int{1, 8} {
		name := "seq"
		if writers > 1 {
			name = fmt.Sprintf("writers%d", writers)
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			s, err := OpenSQLite(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			tids := make([]string, writers)
			for w := range tids {
				th, err := s.CreateThread(ctx, memory.CreateThreadParams{})
				if err != nil {
					b.Fatal(err)
				}
				tids[w] = th.ID
			}
			errs := make(chan error, writers)
			cpu0, batches0, ops0 := testsupport.CPUTime(), s.batches.Load(), s.batchedOps.Load()
			b.ResetTimer()
			for w, tid := range tids {
				go func() {
					for i := 1; i <= b.N/writers+min(1, max(0, b.N%writers-w)); i++ {
						patch := fmt.Appendf(nil, `[{"op":"add","path":"/facts/-","value":{"id":"f%d","key":"build.step.%d","value":"step %d finished: 14 files changed, tests pass"}}]`, i, i, i)
						if _, err := s.PatchState(ctx, tid, patch, i, ""); err != nil {
							errs <- err
							return
						}
					}
					errs <- nil
				}()
			}
			for range tids {
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(testsupport.CPUTime()-cpu0)/1e3/float64(b.N), "cpu-us/op")
			b.ReportMetric(float64(s.batchedOps.Load()-ops0)/float64(s.batches.Load()-batches0), "ops/batch")
			// the WAL file keeps its largest length: a commit that grows it waits on a
			// slower fsync than one that overwrites it (checkpoint.go)
			if fi, err := os.Stat(s.path + "-wal"); err == nil {
				b.ReportMetric(float64(fi.Size())/(1<<20), "wal-MB")
			}
		})
	}
}

// BenchmarkListThreads: the thread listing (newest first) of a store with 10,000 threads
// written a second apart, the first 50 (the default) and the first 1,000 (what resolving a
// thread by name reads). The listing sorts each minute's threads (schema.go): with all
// 10,000 written within one minute the first 50 take 1.9 ms (0.4 with an index of
// updated_at itself, which every commit rewrote).
func BenchmarkListThreads(b *testing.B) {
	ctx := context.Background()
	var tick atomic.Int64
	clock := func() time.Time { return time.Date(2026, 11, 1, 0, 0, int(tick.Add(1)), 0, time.UTC) }
	s, err := OpenSQLite(b.TempDir(), Options{Sync: "normal", Now: clock})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 10000; i++ {
		if _, err := s.CreateThread(ctx, memory.CreateThreadParams{Name: "thread " + strconv.Itoa(i)}); err != nil {
			b.Fatal(err)
		}
	}
	for _, limit := range []int{50, 1000} {
		b.Run("limit="+strconv.Itoa(limit), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				ts, err := s.ListThreads(ctx, limit)
				if err != nil || len(ts) != limit {
					b.Fatalf("%d threads: %v", len(ts), err)
				}
			}
		})
	}
}
