#!/usr/bin/env bash
# Measures relay watch with a real X clipboard (Xvfb + xclip):
#   1. latency: a 200-file response copied to the clipboard -> committed
#      (.relaycode/<uuid>.yml exists), no linter;
#   2. idle CPU of relay watch (itself plus the xclip processes it spawns)
#      with the default 2000 ms poll interval.
# Usage: bench/watch.sh [idle-seconds] [poll-ms-for-latency]
# Needs: go, Xvfb, xclip. Prints one line per figure.
set -euo pipefail
IDLE=${1:-30}
POLL=${2:-100}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
for t in Xvfb xclip go; do command -v "$t" >/dev/null || { echo "bench/watch.sh: $t not installed (apt-get install -y xvfb xclip)" >&2; exit 2; }; done
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

make -s -C "$ROOT" build BUILD_OUT="$WORK/relay" # as make install builds it
Xvfb -displayfd 4 -nolisten tcp 4>"$WORK/display" >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$WORK/display" ] && break; sleep 0.05; done
export DISPLAY=":$(head -1 "$WORK/display")"
export WAYLAND_DISPLAY=

proj="$WORK/proj"
mkdir -p "$proj"
resp="$WORK/resp.md"
: >"$resp"
for i in $(seq 0 199); do
  d="src/pkg$((i % 20))"
  f="$d/file$i.go"
  mkdir -p "$proj/$d"
  if (( i % 2 == 0 )); then
    { printf 'Creating %s.\n\n```go // %s\n' "$f" "$f"; for l in $(seq 60); do echo "// line $l of new file $i"; done; printf '```\n\n'; } >>"$resp"
  else
    for l in $(seq 60); do echo "func f${i}_$l() int { return $l }"; done >"$proj/$f"
    printf 'Editing %s.\n\n```go // %s multi-search-replace\n<<<<<<< SEARCH\nfunc f%d_30() int { return 30 }\n=======\nfunc f%d_30() int { return 300 }\n>>>>>>> REPLACE\n```\n\n' "$f" "$f" "$i" "$i" >>"$resp"
  fi
done
uuid=$(cat /proc/sys/kernel/random/uuid)
printf '```yaml\nprojectId: bench\nuuid: %s\ngitCommitMsg: bench\n```\n' "$uuid" >>"$resp"

cfg() { printf '{"projectId": "bench", "core": {"enableNotifications": false, "watchConfig": false}, "watcher": {"clipboardPollInterval": %s}, "patch": {"linter": ""}}\n' "$1" >"$proj/relaycode.config.json"; }

# 1. Latency.
cfg "$POLL"
echo "not a response" | xclip -selection clipboard -i 2>/dev/null
(cd "$proj" && exec "$WORK/relay" watch -y --no-prompt >"$WORK/watch.out" 2>"$WORK/watch.err") &
PIDS+=($!)
sleep 1
start=$(date +%s%N)
xclip -selection clipboard -i <"$resp" 2>/dev/null
while [ ! -e "$proj/.relaycode/$uuid.yml" ]; do
  if (( ($(date +%s%N) - start) > 30000000000 )); then echo "timed out; watch stderr:" >&2; cat "$WORK/watch.err" >&2; exit 1; fi
  sleep 0.002
done
end=$(date +%s%N)
inner=$(grep -o 'in [0-9.]*m\?s' "$WORK/watch.out" | tail -1)
echo "latency_200_files_clipboard_to_committed_ms=$(( (end - start) / 1000000 )) (poll ${POLL} ms; the transaction itself took ${inner#in })"
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true

# 2. Idle CPU with the default poll interval.
cfg 2000
(cd "$proj" && exec "$WORK/relay" watch -y --no-prompt >/dev/null 2>&1) &
wpid=$!
PIDS+=($wpid)
sleep 2
ticks() { awk '{print $14+$15+$16+$17}' "/proc/$wpid/stat"; }
t0=$(ticks); s0=$(date +%s%N)
sleep "$IDLE"
t1=$(ticks); s1=$(date +%s%N)
hz=$(getconf CLK_TCK)
awk -v t="$((t1 - t0))" -v hz="$hz" -v ns="$((s1 - s0))" 'BEGIN { printf "idle_cpu_percent=%.3f (%d s, poll 2000 ms, relay + xclip children)\n", 100 * (t / hz) / (ns / 1e9), ns / 1e9 }'
