#!/usr/bin/env bash
# Compare relay's memory daemon with another daemon of the same REST API, through the
# same load client (bench/memory), in alternating rounds so that drift in the machine's
# load hits both alike. Prints the median of every metric per daemon and their ratio.
#
#   bench/compare/compare.sh OTHER_URL [ROUNDS] [-- extra bench/memory flags]
#
# OTHER_URL is any running daemon (e.g. the older Go prototype started with its own
# `relay up`; it commits without fsync, so add `-- -sync normal` to also compare relay at
# that durability). Set OTHER_PID and OTHER_HOME to also compare its RSS and disk use;
# OTHER_TOKEN if it requires a token. Relay's daemon is started fresh each round from
# this tree (RELAY_BIN=path to use another build). Results stay in $OUT (default a temp
# dir): one JSON line per round and daemon, and report.md.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: bench/compare/compare.sh OTHER_URL [ROUNDS] [-- bench/memory flags]" >&2
  exit 2
fi
other="$1"; shift
rounds=3
if [ $# -gt 0 ] && [ "$1" != "--" ]; then rounds="$1"; shift; fi
[ "${1:-}" = "--" ] && shift
extra=("$@")

root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/relay-compare.XXXXXX")}"
mkdir -p "$out"
out="$(cd "$out" && pwd)" # the builds below run in the repository's root
bin="$out/bin"; mkdir -p "$bin"
(cd "$root" && go build -o "$bin/memload" ./bench/memory)
relay="${RELAY_BIN:-}"
if [ -z "$relay" ]; then
  make -s -C "$root" build BUILD_OUT="$bin/relay" # as make install builds it
  relay="$bin/relay"
fi
curl -fsS "$other/health" > /dev/null || { echo "Error: no daemon answers at $other/health" >&2; echo "Try: start it, then pass its URL" >&2; exit 1; }

other_args=(-url "$other")
[ -n "${OTHER_PID:-}" ] && other_args+=(-pid "$OTHER_PID")
[ -n "${OTHER_HOME:-}" ] && other_args+=(-home "$OTHER_HOME")
[ -n "${OTHER_TOKEN:-}" ] && other_args+=(-token "$OTHER_TOKEN")

for ((r = 1; r <= rounds; r++)); do
  # alternate which daemon goes first
  if (( r % 2 )); then order=(relay other); else order=(other relay); fi
  for who in "${order[@]}"; do
    echo "== round $r: $who (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    if [ "$who" = relay ]; then
      "$bin/memload" -corpus "$root" -relay "$relay" -label relay -json "$out/rounds.jsonl" "${extra[@]}"
    else
      "$bin/memload" -corpus "$root" "${other_args[@]}" -label other -json "$out/rounds.jsonl" "${extra[@]}"
    fi
  done
done
"$bin/memload" -report "$out/rounds.jsonl" | tee "$out/report.md"
echo "results in $out"
