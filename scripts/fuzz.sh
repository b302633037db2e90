#!/usr/bin/env bash
# Runs every Fuzz target in the module for a while each (default 30s):
#   scripts/fuzz.sh [SECONDS]
# Targets are found, not listed, so a new Fuzz test is fuzzed without editing this file.
# Crashers land in the package's testdata/fuzz/ and fail `go test` until fixed.
set -euo pipefail
secs="${1:-30}"
cd "$(dirname "$0")/.."
fail=0
while read -r dir name; do
  echo "=== $name ($dir, ${secs}s)"
  # -fuzzminimizetime bounds minimisation, which can stall on large seed inputs.
  if ! go test "./$dir" -run '^$' -fuzz "^${name}\$" -fuzztime "${secs}s" -fuzzminimizetime 100x; then
    fail=1
  fi
done < <(git grep -n -E '^func Fuzz[A-Za-z0-9_]+' -- '*_test.go' |
         sed -E 's|^(.*)/[^/]+_test\.go:[0-9]+:func (Fuzz[A-Za-z0-9_]+).*|\1 \2|' | sort -u)
exit "$fail"
