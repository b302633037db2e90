#!/usr/bin/env bash
# Installs the friend CLIs at pinned versions into a local npm prefix (never global),
# for the real-CLI test tier (RELAY_REAL_CLIS=1). Versions are the ones verified in
# ../shared/notes/friend-clis.md §4; bump them deliberately, one at a time.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="${FRIEND_CLIS_PREFIX:-$root/.cache/friend-clis}"

pkgs=(
  "@openai/codex@0.169.0"
  "@google/gemini-cli@0.61.0"
  "@anthropic-ai/claude-code@2.1.197"
  "@qwen-code/qwen-code@0.15.10"
)

mkdir -p "$prefix"
# --prefix keeps everything under .cache; no audit/fund chatter in CI logs.
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "${pkgs[@]}"

bin="$prefix/node_modules/.bin"
for b in codex gemini claude qwen; do
  if [ ! -x "$bin/$b" ]; then
    echo "install-friend-clis: $b missing from $bin" >&2
    exit 1
  fi
done
echo "$bin"
