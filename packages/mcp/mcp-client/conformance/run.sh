#!/bin/sh
# Runs the MCP conformance suite's client scenarios against @dsh/mcp-client (dsh-client.mjs).
# The suite needs Node 22: both it and node@22 are installed from npm into a scratch directory.
# The client is bundled from the sources first (esbuild, `development` condition), so the run
# tests the working tree, not a stale dist/. Each line: scenario, then the suite's check counts.
# Usage: sh packages/mcp/mcp-client/conformance/run.sh [scenario ...]   (default: every client scenario)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=${DSH_CONFORMANCE_DIR:-$(mktemp -d)}
if [ ! -x "$work/node_modules/.bin/node" ]; then
  npm install --prefix "$work" --no-save --silent node@22 @modelcontextprotocol/conformance@0.1.16 >/dev/null
fi
node22="$work/node_modules/.bin/node"
(cd "$here" && node -e '
  const { build } = require("esbuild")
  build({ entryPoints: ["dsh-client.mjs"], bundle: true, platform: "node", format: "esm", target: "node20",
    conditions: ["development"], outfile: process.argv[1], logLevel: "error",
    banner: { js: "import { createRequire as __cr } from \"node:module\"; const require = __cr(import.meta.url);" } })
    .catch(() => process.exit(1))' "$work/dsh-client.bundle.mjs")
# @dsh/tools loads its JSON-schema validator lazily (createRequire): resolve it from that package.
NODE_PATH="$(cd "$here/../node_modules/@dsh/tools" && pwd -P)/node_modules"
export NODE_PATH
suite="$work/node_modules/@modelcontextprotocol/conformance/dist/index.js"
scenarios=${*:-$("$node22" "$suite" list | sed -n '/^Client scenarios/,$p' | sed -n 's/^  - \([^ ]*\).*/\1/p')}
passed=0
failed=0
cd "$work"
for scenario in $scenarios; do
  line=$("$node22" "$suite" client --command "node $work/dsh-client.bundle.mjs" --scenario "$scenario" 2>&1 | grep -E '^Passed:' || echo 'Passed: 0/0, 1 failed')
  echo "$scenario: $line"
  case "$line" in *" 0 failed"*) passed=$((passed + 1)) ;; *) failed=$((failed + 1)) ;; esac
done
echo "scenarios: $passed passed, $failed failed"
