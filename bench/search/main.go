// Command search measures retrieval.search at scale: it puts N generated ~2 KB artifacts
// into one thread of a real store (indexed by the store's background indexer), reports put
// throughput per window as the index grows, then runs bm25 top-10 queries and reports
// latency percentiles per query kind.
//
//	go run ./bench/search -n 100000
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/memory/sqlite"
	"github.com/relaydev/relay/internal/testsupport"

	"github.com/relaydev/relay/internal/memory"
)

func main() {
	n := flag.Int("n", 100000, "artifacts to index")
	window := flag.Int("window", 10000, "report put throughput every this many artifacts")
	queries := flag.Int("q", 500, "queries per kind")
	dir := flag.String("dir", "", "store directory (default: a temp dir, removed after)")
	reuse := flag.Bool("reuse", false, "with -dir: skip indexing and query the thread already there")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	optimize := flag.Bool("optimize", false, "with -reuse: merge the FTS index into one segment first (FTS5 'optimize') and time it")
	flag.IntVar(&sqlite.MaxRanked, "max-ranked", sqlite.MaxRanked, "bm25 ranks at most this many newest matches")
	flag.Parse()
	optimizeFirst = *optimize
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if err := run(*n, *window, *queries, *dir, *reuse); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// corpus makes deterministic pseudo-English: a 20,000-word vocabulary drawn with a Zipf law,
// like natural text, so some words are common and most are rare.
type corpus struct {
	words []string
	zipf  *rand.Zipf
	rng   *rand.Rand
}

func newCorpus(seed uint64) *corpus {
	rng := rand.New(rand.NewPCG(1, 1)) // one vocabulary for documents and queries
	syl := []string{"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qui", "dra", "ston", "mer", "ble", "gan", "fir", "hol", "jek", "wun"}
	seen := map[string]bool{}
	var words []string
	for len(words) < 20000 {
		k := 1 + rng.IntN(4)
		var b strings.Builder
		for range k {
			b.WriteString(syl[rng.IntN(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	rng = rand.New(rand.NewPCG(seed, seed)) // the word stream differs per seed
	return &corpus{words: words, zipf: rand.NewZipf(rng, 1.1, 2, uint64(len(words)-1)), rng: rng}
}

func (c *corpus) word() string { return c.words[c.zipf.Uint64()] }

func (c *corpus) doc(size int) string {
	var b strings.Builder
	for b.Len() < size {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.word())
	}
	return b.String()
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

var optimizeFirst bool

func run(n, window, nq int, dir string, reuse bool) error {
	ctx := context.Background()
	if dir == "" {
		d, err := os.MkdirTemp("", "relay-bench-search-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	st, err := sqlite.OpenSQLite(dir, sqlite.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	var th memory.Thread
	if reuse {
		ths, err := st.ListThreads(ctx, 1)
		if err != nil || len(ths) == 0 {
			return fmt.Errorf("-reuse: no thread in %s (%v)", dir, err)
		}
		th = ths[0]
		fmt.Printf("reusing thread %s with %d artifacts in %s\n", th.ID, th.ArtifactCount, dir)
		if optimizeFirst {
			t0 := time.Now()
			if err := st.OptimizeSearch(ctx); err != nil {
				return err
			}
			fmt.Printf("FTS5 optimize took %s\n", time.Since(t0).Round(time.Millisecond))
		}
		return query(ctx, st, th, nq)
	}
	th, err = st.CreateThread(ctx, memory.CreateThreadParams{Name: "bench"})
	if err != nil {
		return err
	}
	c := newCorpus(1)
	fmt.Printf("indexing %d artifacts of ~2 KB into one thread (%s)\n", n, dir)
	var rates []float64
	start := time.Now()
	winStart := start
	var bytes int64
	for i := 1; i <= n; i++ {
		body := fmt.Sprintf("# doc %d\n%s", i, c.doc(2000))
		bytes += int64(len(body))
		if _, err := st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: fmt.Sprintf("doc-%d.md", i), Type: "markdown", Content: []byte(body)}); err != nil {
			return fmt.Errorf("put %d: %w", i, err)
		}
		if i%window == 0 {
			r := float64(window) / time.Since(winStart).Seconds()
			rates = append(rates, r)
			fmt.Printf("  puts %6d-%6d: %7.0f puts/s\n", i-window+1, i, r)
			winStart = time.Now()
		}
	}
	total := time.Since(start)
	fmt.Printf("stored %d artifacts (%.1f MB) in %s: %.0f puts/s overall\n", n, float64(bytes)/1e6, total.Round(time.Millisecond), float64(n)/total.Seconds())
	// Puts are acknowledged before they are indexed (a background indexer); query a full index.
	t0 := time.Now()
	for {
		pending, err := st.IndexPending(ctx)
		if err != nil {
			return err
		}
		if pending == 0 {
			break
		}
		if _, err := st.Search(ctx, th.ID, memory.SearchQuery{Query: "x"}); err != nil {
			return err
		}
	}
	fmt.Printf("the index caught up %s after the last put\n", time.Since(t0).Round(time.Millisecond))
	if len(rates) >= 2 {
		fmt.Printf("put throughput last window / first window: %.2f (must stay >= 0.50)\n", rates[len(rates)-1]/rates[0])
	}
	if fi, err := os.Stat(st.Path()); err == nil {
		fmt.Printf("database size: %.1f MB\n", float64(fi.Size())/1e6)
	}

	return query(ctx, st, th, nq)
}

func query(ctx context.Context, st *sqlite.SQLite, th memory.Thread, nq int) error {
	qc := newCorpus(2) // same vocabulary and law, another stream: realistic query terms
	kinds := []struct {
		name string
		make func() string
	}{
		{"one term", func() string { return qc.word() }},
		{"two terms (AND)", func() string { return qc.word() + " " + qc.word() }},
		{"phrase", func() string { return `"` + qc.word() + " " + qc.word() + `"` }},
		{"prefix (4 chars)", func() string {
			w := qc.word()
			return w[:min(4, len(w))] + "*"
		}},
		{"common term", func() string { return qc.words[qc.rng.IntN(20)] }},
	}
	fmt.Printf("bm25 top-10 queries, %d per kind, ranking at most %d newest matches:\n", nq, sqlite.MaxRanked)
	var all []time.Duration
	for _, k := range kinds {
		var lat []time.Duration
		hitsTotal := 0
		cpu0 := testsupport.CPUTime()
		for range nq {
			q := k.make()
			t0 := time.Now()
			hits, err := st.Search(ctx, th.ID, memory.SearchQuery{Query: q, Limit: 10})
			if err != nil {
				return fmt.Errorf("query %q: %w", q, err)
			}
			lat = append(lat, time.Since(t0))
			hitsTotal += len(hits)
		}
		cpu := (testsupport.CPUTime() - cpu0) / time.Duration(nq)
		all = append(all, lat...)
		fmt.Printf("  %-18s p50 %8s  p99 %8s  max %8s  cpu/query %8s  (avg hits %.1f)\n", k.name, pct(lat, .5).Round(time.Microsecond), pct(lat, .99).Round(time.Microsecond), pct(lat, 1).Round(time.Microsecond), cpu.Round(time.Microsecond), float64(hitsTotal)/float64(nq))
	}
	fmt.Printf("  %-18s p50 %8s  p99 %8s\n", "all", pct(all, .5).Round(time.Microsecond), pct(all, .99).Round(time.Microsecond))
	return nil
}
