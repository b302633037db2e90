package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/sqlite"
	"github.com/relaydev/relay/internal/testsupport"
	"github.com/relaydev/relay/internal/testsupport/realtext"
)

// BenchmarkPutArtifactJSON: one artifact uploaded as JSON through the daemon's handler,
// without the network: what bench/memory's put phases send (the body read, decoded,
// hashed and stored durably), so allocs/op shows what each put leaves to the collector.
//   - text2KB, text100KB: slices of this package's Go source in "content"; the search
//     index is built in the background, and the timing ends once it has caught up.
//   - binary100KB: random bytes in "content_base64" typed binary (nothing to index).
func BenchmarkPutArtifactJSON(b *testing.B) {
	for _, c := range []struct {
		name   string
		size   int
		binary bool
	}{{"text2KB", 2 << 10, false}, {"text100KB", 100 << 10, false}, {"binary100KB", 100 << 10, true}} {
		b.Run(c.name, func(b *testing.B) { benchPutJSON(b, c.size, c.binary) })
	}
}

func benchPutJSON(b *testing.B, size int, binary bool) {
	src := realtext.Files(b, "*.go", size+50<<10)
	st, err := sqlite.OpenSQLite(b.TempDir(), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s := New(Options{Store: st, Version: "bench"})
	defer func() { s.Close(); st.Close() }()
	h := s.Handler()
	ctx := context.Background()
	th, err := st.CreateThread(ctx, memory.CreateThreadParams{})
	if err != nil {
		b.Fatal(err)
	}
	content := make([]byte, size)
	if binary {
		rand.Read(content)
	}
	bodies := make([][]byte, b.N) // encoded before the timer: the client's work, not the daemon's
	for i := range bodies {
		if !binary {
			off := (i * 7919) % (len(src) - len(content))
			copy(content, src[off:])
		}
		copy(content, strconv.Itoa(i)+"-") // distinct content, no dedupe
		var in map[string]string
		if binary {
			in = map[string]string{"type": memory.TypeBinary, "content_base64": base64.StdEncoding.EncodeToString(content)}
		} else {
			in = map[string]string{"type": memory.TypeText, "content": string(content)}
		}
		if bodies[i], err = json.Marshal(in); err != nil {
			b.Fatal(err)
		}
	}
	path := "/threads/" + th.ID + "/artifacts"
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := testsupport.CPUTime()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1"+path, bytes.NewReader(bodies[i]))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("put %d: %d %s", i, rec.Code, rec.Body.Bytes())
		}
		bodies[i] = nil
	}
	// The index's work counts too: a search of the thread waits until it covers every put.
	if _, err := st.Search(ctx, th.ID, memory.SearchQuery{Query: "func", Limit: 1}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(testsupport.CPUTime()-cpu0)/1e3/float64(b.N), "cpu-us/op")
}
