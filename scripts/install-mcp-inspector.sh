#!/usr/bin/env bash
# Installs the official MCP Inspector at a pinned version into a local npm prefix
# (never global), for internal/mcp's TestInspectorCLI. 0.21.1 is the release
# whose --cli mode (tools/list, tools/call, resources/list) the test drives.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="${MCP_INSPECTOR_PREFIX:-$root/.cache/mcp-inspector}"

mkdir -p "$prefix"
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "@modelcontextprotocol/inspector@0.21.1"

bin="$prefix/node_modules/.bin/mcp-inspector"
if [ ! -x "$bin" ]; then
  echo "install-mcp-inspector: mcp-inspector missing from $prefix/node_modules/.bin" >&2
  exit 1
fi
echo "$bin"
