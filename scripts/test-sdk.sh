#!/usr/bin/env bash
# Runs the Python SDK, TypeScript SDK and web UI tests against real daemons built from this tree.
# Needs: go, python3 (>= 3.8), node (>= 18) + npm, and for the browser test Debian's chromium
# (/usr/bin/chromium, or $CHROMIUM_PATH). A tier whose tool is missing is skipped with a
# message, unless RELAY_REQUIRE_ALL=1 (.ci/run sets it: CI installs every tool, so a missing
# one there is a failure). RELAY_SKIP_BROWSER=1 skips only the browser test.
# Screenshots of the browser test land in test/ui/screenshots/ (or $RELAY_UI_SCREENSHOTS).
#
# Usage: scripts/test-sdk.sh [python] [typescript] [ui] [browser]   (default: all four)
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
log="$(mktemp -d)"
trap 'rm -rf "$log"' EXIT

passed=0
failed=0
skipped=0
status=0

step() { printf '\n=== %s\n' "$*"; }

tiers=" ${*:-python typescript ui browser} "
want() { [[ "$tiers" == *" $1 "* ]]; }

# missing TOOL TIER: skip the tier with a message (a failure under RELAY_REQUIRE_ALL=1).
missing() {
  if [ "${RELAY_REQUIRE_ALL:-}" = 1 ]; then
    echo "FAILED: $2 needs $1, which is not installed (RELAY_REQUIRE_ALL=1)"
    status=1; failed=$((failed + 1))
  else
    echo "skipped: $2 needs $1, which is not installed"
    skipped=$((skipped + 1))
  fi
}
have() { command -v "$1" >/dev/null 2>&1; }

# node --test prints "# pass N" / "# fail N" / "# skipped N" (pass excludes skipped).
count_node() {
  local p f s
  p=$(awk '/^# pass /{n=$3} END{print n+0}' "$1")
  f=$(awk '/^# fail /{n=$3} END{print n+0}' "$1")
  s=$(awk '/^# skipped /{n=$3} END{print n+0}' "$1")
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
}

# unittest prints "Ran N tests" and "FAILED (failures=a, errors=b, skipped=c)" or "OK (skipped=c)".
count_py() {
  local ran f e s
  ran=$(awk '/^Ran [0-9]+ test/{n=$2} END{print n+0}' "$1")
  f=$(grep -oE 'failures=[0-9]+' "$1" | tail -1 | cut -d= -f2)
  e=$(grep -oE 'errors=[0-9]+' "$1" | tail -1 | cut -d= -f2)
  s=$(grep -oE 'skipped=[0-9]+' "$1" | tail -1 | cut -d= -f2)
  f=$(( ${f:-0} + ${e:-0} )); s=${s:-0}
  passed=$((passed + ran - f - s)); failed=$((failed + f)); skipped=$((skipped + s))
}

step "build relay"
bindir="$(mktemp -d)"
if ! go build -o "$bindir/relay" ./cmd/relay; then
  echo "test-sdk: cannot build relay"
  echo "0 passed, 1 failed"
  exit 1
fi
export RELAY_BIN="$bindir/relay"

if want python; then
  step "python SDK (unittest, real daemon)"
  if ! have python3; then
    missing python3 "the Python SDK tier"
  else
    python3 -m unittest discover -s sdk/python/tests -v 2>&1 | tee "$log/py"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    count_py "$log/py"
  fi
fi

if want typescript; then
  step "typescript SDK: npm ci, dist/ matches src/, node --test (real daemon)"
  if ! have node || ! have npm; then
    missing "node and npm" "the TypeScript SDK tier"
  else
    (
      cd sdk/typescript &&
      npm ci --no-audit --no-fund --loglevel=error &&
      rm -rf "$log/dist" && npx tsc -p tsconfig.json --outDir "$log/dist" &&
      diff -r dist "$log/dist" >/dev/null
    ) || { echo "sdk/typescript: dist/ is stale or tsc failed; run: cd sdk/typescript && npm ci && npm run build"; status=1; failed=$((failed + 1)); }
    (cd sdk/typescript && node --test test/*.test.mjs) 2>&1 | tee "$log/ts"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    count_node "$log/ts"
  fi
fi

if want ui; then
  step "web UI: unit tests (diff, markdown)"
  if ! have node; then
    missing node "the web UI unit tier"
  else
    node --test test/ui/diff.test.mjs test/ui/markdown.test.mjs 2>&1 | tee "$log/uiunit"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    count_node "$log/uiunit"
  fi
fi

if want browser; then
step "web UI: headless Chromium (playwright-core)"
if [ "${RELAY_SKIP_BROWSER:-}" = 1 ]; then
  echo "skipped: RELAY_SKIP_BROWSER=1"
  skipped=$((skipped + 1))
elif [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  missing "Chromium at ${CHROMIUM_PATH:-/usr/bin/chromium} (apt-get install -y chromium chromium-driver)" "the browser tier"
elif ! have node || ! have npm; then
  missing "node and npm" "the browser tier"
else
  (cd test/ui && npm ci --no-audit --no-fund --loglevel=error && node --test ui.test.mjs) 2>&1 | tee "$log/ui"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  count_node "$log/ui"
  echo "screenshots: ${RELAY_UI_SCREENSHOTS:-test/ui/screenshots}"
fi
fi

rm -rf "$bindir"
echo
echo "test-sdk: ${passed} passed, ${failed} failed, ${skipped} skipped"
[ "$failed" -eq 0 ] || status=1
exit "$status"
