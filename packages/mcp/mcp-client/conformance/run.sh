#!/bin/sh
# Runs the MCP conformance suite's client scenarios against @dsh/mcp-client (dsh-client.mjs).
# The suite needs Node 22: both it and node@22 are installed from npm into a scratch directory.
# Usage: sh packages/mcp/mcp-client/conformance/run.sh [scenario ...]   (default: every client scenario)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=${DSH_CONFORMANCE_DIR:-$(mktemp -d)}
if [ ! -x "$work/node_modules/.bin/node" ]; then
  npm install --prefix "$work" --no-save --silent node@22 @modelcontextprotocol/conformance@0.1.16 >/dev/null
fi
node22="$work/node_modules/.bin/node"
suite="$work/node_modules/@modelcontextprotocol/conformance/dist/index.js"
scenarios=${*:-$("$node22" "$suite" list | sed -n '/^Client scenarios/,$p' | sed -n 's/^  - \([^ ]*\).*/\1/p')}
passed=0
failed=0
cd "$work"
for scenario in $scenarios; do
  line=$("$node22" "$suite" client --command "node $here/dsh-client.mjs" --scenario "$scenario" 2>&1 | grep -E '^Passed:' || echo 'Passed: 0/0, 1 failed')
  echo "$scenario: $line"
  case "$line" in *" 0 failed"*) passed=$((passed + 1)) ;; *) failed=$((failed + 1)) ;; esac
done
echo "scenarios: $passed passed, $failed failed"
