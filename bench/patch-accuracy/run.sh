#!/usr/bin/env bash
# Runs relay and the engines relaycode shipped side by side on real LLM patches
# (../shared/corpus/patch/history-dev beside the checkout, or the directory given):
#   bench/patch-accuracy/run.sh [CORPUS_DIR]
# diff-apply 1.0.6 runs live (installed with esbuild into bench/patch-accuracy/.cache);
# apply-multi-diff is not published, so its result comes from each case's meta.json.
# Prints relay {exact,different,refused} x shipped engine, the same per format, every
# case where relay is not exact but the shipped engine is (exit status 1 if there is
# one), then exact / wrong / refused per corpus and format for every corpus.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="$here/.cache"
corpus="${1:-}"
if [ -z "$corpus" ]; then
  for d in "$root/.." "$root/../.." "$root/../../.."; do
    if [ -d "$d/shared/corpus/patch/history-dev" ]; then corpus="$(cd "$d/shared/corpus/patch/history-dev" && pwd)"; break; fi
  done
fi
if [ -z "$corpus" ] || [ ! -d "$corpus" ]; then
  echo "patch-accuracy: corpus not found; give it: $0 path/to/shared/corpus/patch/history-dev" >&2
  exit 2
fi
command -v node >/dev/null || { echo "patch-accuracy: node is needed (for diff-apply)" >&2; exit 2; }
mkdir -p "$cache"
if [ ! -f "$cache/diff-apply.mjs" ] || [ "$here/package.json" -nt "$cache/diff-apply.mjs" ]; then
  cp "$here/package.json" "$cache/package.json"
  (cd "$cache" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  # Bundled inside the cache so esbuild resolves diff-apply from the cache's node_modules.
  cp "$here/entry.mjs" "$cache/entry.mjs"
  (cd "$cache" && ./node_modules/.bin/esbuild entry.mjs --bundle --platform=node --format=esm \
    --outfile=diff-apply.mjs --log-level=warning)
fi
(cd "$root" && go build -o "$cache/relay" ./cmd/relay)
status=0
node "$here/compare.mjs" "$corpus" "$cache/relay" "$cache/diff-apply.mjs" || status=$?
# Every corpus, per format: exact / wrong (a silent wrong edit) / refused, from the
# reference tools' own test suites and history-dev (internal/apply/patch TestAccuracyTable).
echo
echo "all corpora, per format (deliberate deviations are listed in internal/apply/patch/conformance_test.go):"
(cd "$root" && go test -count=1 -run '^TestAccuracyTable$' -v ./internal/apply/patch/ | grep -v '^=== RUN\|^--- PASS\|^PASS\|^ok ')
exit "$status"
