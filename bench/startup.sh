#!/usr/bin/env bash
# relay start-up cost: wall and CPU time of `relay version` (what every command pays before
# doing its work), and the package inits that run before main, slowest first
# (GODEBUG=inittrace=1). Target: relay version <= 3 ms wall.
#
#   bench/startup.sh [RUNS]     (default 300)
set -euo pipefail

runs="${1:-300}"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/relay-startup.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# built as `make install` builds it (static, stripped)
make -s -C "$root" build BUILD_OUT="$work/relay"
export RELAY_HOME="$work/home"

"$work/relay" version > /dev/null # warm the page cache
samples=()
for ((i = 0; i < runs; i++)); do
  t0=$(date +%s%N)
  "$work/relay" version > /dev/null
  t1=$(date +%s%N)
  samples+=($(( (t1 - t0) / 1000 )))
done
printf '%s\n' "${samples[@]}" | sort -n > "$work/wall.us"
TIMEFORMAT='%U %S'
cpu=$( { time (for ((i = 0; i < runs; i++)); do "$work/relay" version > /dev/null; done) ; } 2>&1 )

awk -v n="$runs" '{ a[NR] = $1 } END {
  printf "relay version wall: min %.2f ms  median %.2f ms  p90 %.2f ms  (%d runs; target <= 3 ms)\n",
    a[1] / 1000, a[int((NR + 1) / 2)] / 1000, a[int(NR * 0.9)] / 1000, n }' "$work/wall.us"
awk -v t="$cpu" -v n="$runs" 'BEGIN { split(t, a, " "); printf "relay version CPU (user+sys): %.2f ms per run\n", (a[1] + a[2]) * 1000 / n }'

# inits: median clock per package over 21 runs, those above 0.02 ms
for ((i = 0; i < 21; i++)); do GODEBUG=inittrace=1 "$work/relay" version 2>&1 >/dev/null | grep '^init '; done |
  awk '{ print $2, $5, $8 }' | sort -k1,1 -k2,2n |
  awk '{ n[$1]++; v[$1, n[$1]] = $2; b[$1] = $3 } END { for (k in n) { m = v[k, int((n[k] + 1) / 2)];
    if (m >= 0.02) printf "  %-55s median %6.3f ms  %9d bytes\n", k, m, b[k] } }' | sort -k3 -n -r > "$work/inits"
total=$(for ((i = 0; i < 21; i++)); do GODEBUG=inittrace=1 "$work/relay" version 2>&1 >/dev/null | awk '/^init /{ t += $5 } END { print t }'; done | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
echo "package inits: median total ${total} ms; those above 0.02 ms:"
cat "$work/inits"
echo "binary: $(du -h "$work/relay" | cut -f1), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
