#!/usr/bin/env bash
# Every row of issue 26's target table, relay's side, in one command; prints the table
# with the machine's load average beside each figure. About 8-12 minutes on an idle
# 2-core machine (much longer on a busy one: take figures for notes only when it is quiet).
#
#   bench/memory/run.sh [OUT_DIR]
#
# What runs, in turn (never side by side):
#   1. bench/memory, one round on a fresh daemon (synchronous=FULL): patches 0 -> 10k facts,
#      8 writers, lost updates, 100 KB text and binary puts over 1 and 8 connections,
#      sustained ingestion (10k x 2 KB then 1k x 100 KB, index lag sampled), freshness,
#      searches at 10k (+ fsyncs counted with strace), growth to 100k and searches there,
#      RSS and disk;
#   2. sequential patches 0 -> 2k facts on SQLite, then on a throw-away PostgreSQL started
#      here with its default durability (fsync, synchronous_commit on) over loopback TCP;
#   3. bench/mcp: read op=search over MCP stdio at 1k notes;
#   4. bench/startup.sh (relay version) and bench/ask-overhead.sh (relay ask).
# Raw outputs and rounds.jsonl stay in OUT_DIR (default: a temp dir). QUICK=1 runs tiny
# sizes to check the harness itself (its figures mean nothing).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$(mktemp -d "${TMPDIR:-/tmp}/relay-bench-memory.XXXXXX")}"
mkdir -p "$out"
out="$(cd "$out" && pwd)" # the builds below run in the repository's root
bin="$out/bin"; mkdir -p "$bin"
cd "$root"
# relay as `make install` builds it (static, stripped)
make -s build BUILD_OUT="$bin/relay"
go build -o "$bin/memload" ./bench/memory
go build -o "$bin/mcpbench" ./bench/mcp
jsonl="$out/rounds.jsonl"
main_args=(-docs 100000) patch_args=(-facts 2000) notes=1000 calls=200 runs=300
if [ "${QUICK:-}" = 1 ]; then
  main_args=(-facts 300 -big 20 -small 500 -sustain-big 20 -queries 20)
  patch_args=(-facts 200) notes=50 calls=20 runs=20
fi
: > "$jsonl"
load1() { cut -d' ' -f1 /proc/loadavg; }
echo "bench/memory/run.sh: results in $out; load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"

echo "== 1/4 the memory daemon under load"
"$bin/memload" -corpus "$root" -relay "$bin/relay" -label relay -json "$jsonl" "${main_args[@]}" | tee "$out/memload.txt"

echo "== 2/4 sequential patches: SQLite, then PostgreSQL"
"$bin/memload" -corpus "$root" -relay "$bin/relay" -label sqlite-patches -json "$jsonl" -only patches "${patch_args[@]}" -writers 1 | tee "$out/sqlite-patches.txt"
pgbin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
if [ -n "$pgbin" ] && [ -x "$pgbin/initdb" ]; then
  pgdir="$(mktemp -d "${TMPDIR:-/tmp}/relay-bench-pg.XXXXXX")"
  as_pg=()
  if [ "$(id -u)" = 0 ]; then chown postgres "$pgdir"; as_pg=(runuser -u postgres --); fi
  port=$((20000 + RANDOM % 20000))
  "${as_pg[@]}" "$pgbin/initdb" -D "$pgdir/data" -U relay --auth=trust -E UTF8 > "$pgdir/initdb.log" 2>&1
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/pg.log" -w \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$pgdir" start > /dev/null
  trap '"${as_pg[@]}" "$pgbin/pg_ctl" -D "$pgdir/data" -m fast stop > /dev/null 2>&1 || true; rm -rf "$pgdir"' EXIT
  "${as_pg[@]}" "$pgbin/createdb" -h 127.0.0.1 -p "$port" -U relay bench
  "$bin/memload" -corpus "$root" -relay "$bin/relay" -label pg-patches -json "$jsonl" -only patches "${patch_args[@]}" -writers 1 \
    -store "postgres://relay@127.0.0.1:$port/bench?sslmode=disable" | tee "$out/pg-patches.txt"
else
  echo "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): its row stays empty"
fi

echo "== 3/4 MCP memory search at 1k notes"
l0=$(load1)
"$bin/mcpbench" -relay "$bin/relay" -search-notes "$notes" -n "$calls" | tee "$out/mcp.txt"
mcp_p50=$(awk '/op=search over MCP/ { for (i = 1; i <= NF; i++) if ($i == "p50") print $(i + 1) / 1000 }' "$out/mcp.txt")
mcp_p99=$(awk '/op=search over MCP/ { for (i = 1; i <= NF; i++) if ($i == "p99") print $(i + 1) / 1000 }' "$out/mcp.txt")

echo "== 4/4 relay version and relay ask"
bash bench/startup.sh "$runs" | tee "$out/startup.txt"
bash bench/ask-overhead.sh "$runs" | tee "$out/ask.txt"
version_ms=$(awk '/relay version wall:/ { for (i = 1; i <= NF; i++) if ($i == "median") print $(i + 1) }' "$out/startup.txt")
ask_ms=$(awk '/relay overhead \(wall\)/ { for (i = 1; i <= NF; i++) if ($i == "median") print $(i + 1) }' "$out/ask.txt")
printf '{"label":"extra","metrics":{"mcp_search_p50_ms":%s,"mcp_search_p99_ms":%s,"version_ms":%s,"ask_overhead_ms":%s,"load1_start":%s,"load1_end":%s}}\n' \
  "${mcp_p50:-0}" "${mcp_p99:-0}" "${version_ms:-0}" "${ask_ms:-0}" "$l0" "$(load1)" >> "$jsonl"

echo
echo "== issue 26 targets, relay's side ($(date -u +%FT%TZ), $(nproc) cores, $(go version | awk '{print $3}'))"
"$bin/memload" -table "$jsonl" | tee "$out/table.md"
echo "raw outputs in $out"
