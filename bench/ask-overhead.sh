#!/usr/bin/env bash
# relay ask overhead: time `relay ask --to codex` against a fake codex that
# answers at once, next to running the same fake directly with the same
# prompt on stdin. The difference is relay's own cost: start-up, validation,
# envelope, spawn, reading the answer back, printing it. Target: <= 3.5 ms.
#
#   bench/ask-overhead.sh [RUNS]     (default 200)
set -euo pipefail

runs="${1:-200}"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/relay-ask-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# built as `make install` builds it (static, stripped)
make -s -C "$root" build BUILD_OUT="$work/relay"

mkdir -p "$work/bin" "$work/repo" "$work/home"
# The fake codex: drain the prompt, write the last-message file, print one
# JSONL event, exit. POSIX sh so it starts in about a millisecond.
cat > "$work/bin/codex" <<'EOF'
#!/bin/sh
out=""
prev=""
for a in "$@"; do
  if [ "$prev" = "--output-last-message" ]; then out="$a"; fi
  prev="$a"
done
cat > /dev/null
[ -n "$out" ] && printf 'fake answer\n' > "$out"
printf '{"type":"item.completed","item":{"type":"agent_message","text":"fake answer"}}\n'
EOF
chmod +x "$work/bin/codex"

export PATH="$work/bin:$PATH" HOME="$work/home" RELAY_HOME="$work/home/.relay"
unset PHONE_A_FRIEND_DEPTH PHONE_A_FRIEND_HOST CLAUDECODE GEMINI_CLI CODEX_SANDBOX CODEX_SANDBOX_NETWORK_DISABLED
prompt="Review this change for bugs, please."

# the envelope relay would send, so the direct run drains the same bytes
printf 'You are helping another coding agent by reviewing or advising on work in a local repository.\nRepository path: %s\nUse the repository files for context when needed.\nRespond with concise, actionable feedback.\n\nRequest:\n%s' \
  "$(cd "$work/repo" && pwd -P)" "$prompt" > "$work/envelope"

# sanity: relay really goes through the fake
answer="$("$work/relay" ask --to codex --prompt "$prompt" --repo "$work/repo")"
[ "$answer" = "fake answer" ] || { echo "unexpected answer: $answer" >&2; exit 1; }

now_ns() { date +%s%N; }

time_runs() { # label, command...
  local label="$1"; shift
  local i t0 t1 total=0 samples=()
  for ((i = 0; i < runs; i++)); do
    t0=$(now_ns)
    "$@" > /dev/null
    t1=$(now_ns)
    samples+=($(( (t1 - t0) / 1000 )))
  done
  printf '%s\n' "${samples[@]}" | sort -n > "$work/$label.us"
}

direct() {
  mkdir -p "$work/tmp"
  "$work/bin/codex" exec -C "$work/repo" --skip-git-repo-check --sandbox read-only --ephemeral --json \
    --output-last-message "$work/tmp/codex-last-message.txt" - < "$work/envelope"
}
via_relay() {
  "$work/relay" ask --to codex --prompt "$prompt" --repo "$work/repo"
}

# CPU time (user+sys, children included) of RUNS runs: robust on a busy machine
cpu_ms() { # command... → total CPU ms
  local TIMEFORMAT='%U %S' t
  t=$( { time (for ((i = 0; i < runs; i++)); do "$@" > /dev/null; done) ; } 2>&1 )
  awk -v t="$t" 'BEGIN { split(t, a, " "); printf "%.0f\n", (a[1] + a[2]) * 1000 }'
}

# warm the page cache, then alternate so drift hits both alike
direct > /dev/null; via_relay > /dev/null
time_runs direct direct
time_runs relay via_relay
d_cpu=$(cpu_ms direct)
r_cpu=$(cpu_ms via_relay)

summarize() { # file → "median p90 mean" in ms
  awk '{ a[NR] = $1; s += $1 } END {
    printf "%.2f %.2f %.2f\n", a[int((NR + 1) / 2)] / 1000, a[int(NR * 0.9)] / 1000, s / NR / 1000 }' "$1"
}
read -r d_med d_p90 d_mean < <(summarize "$work/direct.us")
read -r r_med r_p90 r_mean < <(summarize "$work/relay.us")

echo "runs: $runs  (cpus: $(nproc), $(go version | awk '{print $3}'))"
printf '%-28s median %7s ms   p90 %7s ms   mean %7s ms\n' "fake codex, direct" "$d_med" "$d_p90" "$d_mean"
printf '%-28s median %7s ms   p90 %7s ms   mean %7s ms\n' "relay ask --to codex" "$r_med" "$r_p90" "$r_mean"
awk -v r="$r_med" -v d="$d_med" -v rm="$r_mean" -v dm="$d_mean" 'BEGIN {
  printf "relay overhead (wall)       median %7.2f ms   mean %7.2f ms   (target <= 3.5 ms)\n", r - d, rm - dm }'
awk -v r="$r_cpu" -v d="$d_cpu" -v n="$runs" 'BEGIN {
  printf "CPU per run (user+sys)      direct %6.2f ms   relay %6.2f ms   overhead %6.2f ms\n", d / n, r / n, (r - d) / n }'
echo "load average: $(cut -d" " -f1-3 /proc/loadavg)"
