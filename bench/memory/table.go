package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// printTable prints the rows of issue 26's target table (relay's side) from the JSON lines
// bench/memory/run.sh collected: label "relay" (the full round), "sqlite-patches" and
// "pg-patches" (sequential patches on each store), "extra" (MCP search, relay version,
// relay ask overhead). Every row names the load average of the run that produced it.
func printTable(files []string) error {
	runs := map[string]map[string]float64{}
	err := eachRound(files, func(label string, m map[string]float64) {
		if runs[label] == nil {
			runs[label] = map[string]float64{}
		}
		for k, v := range m { // a later round of a label overwrites
			runs[label][k] = v
		}
	})
	if err != nil {
		return err
	}
	get := func(label, key string) (float64, bool) {
		v, ok := runs[label][key]
		return v, ok
	}
	num := func(label, format string, keys ...string) string {
		var parts []string
		for _, k := range keys {
			v, ok := get(label, k)
			if !ok {
				parts = append(parts, "—")
				continue
			}
			parts = append(parts, fmt.Sprintf(format, v))
		}
		return strings.Join(parts, " / ")
	}
	load := func(label string) string {
		a, ok1 := get(label, "load1_start")
		b, ok2 := get(label, "load1_end")
		if !ok1 || !ok2 {
			return "—"
		}
		return fmt.Sprintf("%.1f → %.1f", a, b)
	}
	type row struct{ what, value, target, label string }
	rows := []row{
		{"100 KB text puts/s, 1 conn / 8 conns (p50 ms, 1 conn)", num("relay", "%.0f", "put_100k_c1_per_s", "put_100k_c8_per_s") + " (" + num("relay", "%.1f", "put_100k_c1_p50_ms") + ")", "≥ older daemon (469/s, p50 1.8 ms)", "relay"},
		{"100 KB binary puts/s, 1 conn / 8 conns (no indexing)", num("relay", "%.0f", "put_100k_bin_c1_per_s", "put_100k_bin_c8_per_s"), "≥ older daemon (543/s)", "relay"},
		{"2 KB text puts/s, 1 conn / 8 conns (10k load)", num("relay", "%.0f", "put_2k_c1_per_s", "put_2k_c8_per_s"), "≥ older daemon (1,262/s)", "relay"},
		{"sustained: 10k × 2 KB then 1k × 100 KB puts/s (the 100 KB part)", num("relay", "%.0f", "sustain_100k_per_s"), "≥ older daemon", "relay"},
		{"  index lag during it, max MB / artifacts", num("relay", "%.1f", "index_lag_max_mb") + " / " + num("relay", "%.0f", "index_lag_max_docs"), "bounded: 128 MB a thread, 512 MB in all", "relay"},
		{"  first search after it (index catch-up), ms", num("relay", "%.0f", "index_drain_ms"), "", "relay"},
		{"search p99 ms at 10k: one / two / phrase / miss", num("relay", "%.1f", "search_one_p99_ms_10k", "search_two_p99_ms_10k", "search_phrase_p99_ms_10k", "search_miss_p99_ms_10k"), "≤ 5 ms", "relay"},
		{"search p99 ms at 100k: one / two / phrase / miss", num("relay", "%.1f", "search_one_p99_ms_100k", "search_two_p99_ms_100k", "search_phrase_p99_ms_100k", "search_miss_p99_ms_100k"), "≤ 10 ms", "relay"},
		{"MCP memory search p50 / p99 ms at 1k notes", num("extra", "%.2f", "mcp_search_p50_ms", "mcp_search_p99_ms"), "p50 ≤ 2 ms", "extra"},
		{"fsyncs per search (whole daemon, 20 searches at 10k)", num("relay", "%.2f", "search_fsyncs_per_query_10k"), "0 on the request path", "relay"},
		{"sequential patches/s 0 → 10k facts (first 1k / last 1k)", num("relay", "%.0f", "patch_seq_per_s") + " (" + num("relay", "%.0f", "patch_seq_first_per_s", "patch_seq_last_per_s") + ")", "≥ 2,500/s flat, or ≥ 80 % of fsync rate", "relay"},
		{"  disk fsync rate at start / end", num("relay", "%.0f", "fsync_per_s", "fsync_end_per_s"), "", "relay"},
		{"8 concurrent writers, patches/s", num("relay", "%.0f", "patch_conc_per_s"), "≥ 10,000/s", "relay"},
		{"lost updates (4 writers × 100, no base version)", num("relay", "%.0f", "lost_updates"), "0", "relay"},
		{"RSS MB idle: 0.5 s after start / 10 s later; after the run / 10 s later / peak", num("relay", "%.1f", "rss_idle_mb", "rss_idle_quiet_mb") + "; " + num("relay", "%.1f", "rss_after_mb", "rss_quiet_mb", "rss_peak_mb"), "idle ≤ 15, after ≤ older (33)", "relay"},
		{"disk ÷ user bytes after the run", num("relay", "%.2f", "disk_ratio"), "", "relay"},
		{"sequential patches/s, SQLite / PostgreSQL (0 → 2k facts)", num("sqlite-patches", "%.0f", "patch_seq_per_s") + " / " + num("pg-patches", "%.0f", "patch_seq_per_s"), "PostgreSQL ≥ 50 % of SQLite", "pg-patches"},
		{"relay version, wall ms (median)", num("extra", "%.2f", "version_ms"), "≤ 3 ms", "extra"},
		{"relay ask overhead, wall ms (median)", num("extra", "%.2f", "ask_overhead_ms"), "≤ 3.5 ms", "extra"},
	}
	if a, ok := get("sqlite-patches", "patch_seq_per_s"); ok {
		if b, ok := get("pg-patches", "patch_seq_per_s"); ok && a > 0 {
			rows[16].value += fmt.Sprintf(" = %.0f %%", 100*b/a)
		}
	}
	fmt.Println("| measure | relay | target | load average (1 min, start → end) |")
	fmt.Println("|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s |\n", r.what, r.value, r.target, load(r.label))
	}
	return nil
}

// eachRound calls fn with the label and metrics of every JSON line in files, in order.
func eachRound(files []string, fn func(label string, metrics map[string]float64)) error {
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line struct {
				Label   string             `json:"label"`
				Metrics map[string]float64 `json:"metrics"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				f.Close()
				return fmt.Errorf("%s: %w", name, err)
			}
			fn(line.Label, line.Metrics)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return err
		}
	}
	return nil
}
