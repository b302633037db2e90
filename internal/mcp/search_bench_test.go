package mcp_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path"
	"runtime/pprof"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/relaydev/relay/internal/mcp"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/backend"
	"github.com/relaydev/relay/internal/memory/server"
	"github.com/relaydev/relay/internal/testsupport"
	"github.com/relaydev/relay/internal/testsupport/realtext"
)

// loopProfile writes a CPU profile of BenchmarkSearchCall1kNotes' timed calls alone, one
// file per sub-benchmark (the path, a dot and its name):
// go test -run '^$' -bench SearchCall1kNotes ./internal/mcp -args -searchprofile /tmp/search.prof
var loopProfile = flag.String("searchprofile", "", "BenchmarkSearchCall1kNotes: write CPU profiles of the timed searches alone to this path plus .new and .cached")

// BenchmarkSearchCall1kNotes is one memory search as an agent makes it, end to end in one
// process: the SDK client calls read op=search, relay's MCP server (wired as relay mcp
// wires it) posts /cap/invoke to a real daemon handler over loopback HTTP, and the daemon
// runs retrieval.search on a SQLite store (full sync, the daemon's default) holding 1,000
// notes of ~2 KB of real text (slices of this repository's Go and Markdown files). In
// "new" every query is new (no cache hit), so each call pays the search, its result
// artifact and its bookkeeping; in "cached" every query was asked before. bench/mcp times the same call across the real processes; this one is for
// profiles (-cpuprofile) and CPU per call on a shared machine (cpu-ns/op: client, MCP
// layer and daemon together).
func BenchmarkSearchCall1kNotes(b *testing.B) {
	const notes = 1000
	text := realtext.ModuleText(b)
	terms := realtext.Terms(text)
	home := b.TempDir()
	ctx := context.Background()
	st, err := backend.Open(ctx, backend.Config{Home: home})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	const token = "bench-token"
	d := server.New(server.Options{Store: st, Token: token})
	hs := httptest.NewServer(d.Handler())
	b.Cleanup(hs.Close)
	b.Cleanup(d.Close)

	env := map[string]string{"RELAY_URL": hs.URL, "RELAY_TOKEN": token}
	project := b.TempDir()
	jobs := mcp.Wire(mcp.Options{ErrOut: io.Discard, WorkDir: func() (string, error) { return project, nil },
		Home: func() (string, error) { return home, nil }, Getenv: func(k string) string { return env[k] },
		Environ: func() []string { return nil }, Version: "bench"})
	sctx, cancel := context.WithCancel(ctx)
	b.Cleanup(cancel)
	srvT, cliT := sdk.NewInMemoryTransports()
	go func() { _ = mcp.New(jobs).Run(sctx, srvT) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(sctx, cliT, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	call := func(tb testing.TB, args map[string]any) {
		tb.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read", Arguments: args})
		if err != nil || res.IsError {
			tb.Fatalf("read %v: %v %+v", args, err, res)
		}
	}
	call(b, map[string]any{"op": "header"}) // makes the project's thread, as an agent's first call does
	thread, err := jobs.DefaultThread(ctx, false)
	if err != nil || thread == "" {
		b.Fatalf("the project's thread: %q %v", thread, err)
	}
	for i := range notes {
		off := (i * 7919 * 2048) % (len(text) - 2048)
		body := fmt.Sprintf("note %04d\n", i) + strings.ToValidUTF8(text[off:off+2000], "")
		if _, err := st.PutArtifact(ctx, thread, memory.PutArtifactParams{Name: fmt.Sprintf("note%04d.md", i), Type: memory.TypeMarkdown,
			Content: []byte(body), CreatedBy: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	query := func(i int) string { // new every time: a cached search would skip what this measures
		switch i % 4 {
		case 0:
			return terms[rng.IntN(len(terms))] + fmt.Sprintf(" OR zq%dx", i)
		case 1:
			return terms[rng.IntN(len(terms))] + " " + terms[rng.IntN(len(terms))]
		case 2:
			return fmt.Sprintf(`"note %04d"`, rng.IntN(notes))
		default:
			return fmt.Sprintf("zqxv%dwq", i)
		}
	}
	for i := range 20 { // the first searches wait for the index to take the notes
		call(b, map[string]any{"op": "search", "query": query(i)})
	}
	b.Run("new", func(b *testing.B) {
		i := 20
		timeCalls(b, func() {
			call(b, map[string]any{"op": "search", "query": query(i)})
			i++
		})
	})
	// A search an agent repeats is a cache hit: the daemon answers from the cache entry and
	// writes only the call's bookkeeping.
	repeated := make([]string, 20)
	for k := range repeated {
		repeated[k] = fmt.Sprintf("%s %s", terms[rng.IntN(len(terms))], terms[rng.IntN(len(terms))])
		call(b, map[string]any{"op": "search", "query": repeated[k]})
	}
	b.Run("cached", func(b *testing.B) {
		i := 0
		timeCalls(b, func() {
			call(b, map[string]any{"op": "search", "query": repeated[i%len(repeated)]})
			i++
		})
	})
}

// timeCalls times call in b's loop and reports the CPU of the whole process per call
// (cpu-ns/op), with -searchprofile a CPU profile of the loop alone.
func timeCalls(b *testing.B, call func()) {
	if *loopProfile != "" { // -cpuprofile would mostly show the setup: 1,000 puts and their indexing
		f, err := os.Create(*loopProfile + "." + path.Base(b.Name()))
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	cpu0 := testsupport.CPUTime()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		call()
	}
	b.StopTimer()
	b.ReportMetric(float64(testsupport.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
}
