#!/bin/sh
# Runs the MCP conformance suite's server scenarios that apply to a tools server against
# `dsh mcp serve --transport http` (the real launcher, a scratch DSH_HOME and project). The suite
# needs Node 22: both it and node@22 are installed from npm into a scratch directory
# (DSH_CONFORMANCE_DIR keeps it between runs). Each line: scenario, then the suite's check counts.
# Scenarios that call fixture tools, prompts or resources of the suite's reference server
# (tools-call-*, json-schema-*, prompts-get-*, resources-read-*, ...), or test completion, logging,
# subscriptions or elicitation, do not apply: dsh serves its own tools, skills and sessions.
# The server runs with --no-auth (the suite sends no bearer token).
# Usage: sh packages/mcp/mcp-server/conformance/run.sh [scenario ...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dsh="$here/../../../boot/cli/bin/dsh.mjs"
work=${DSH_CONFORMANCE_DIR:-$(mktemp -d)}
if [ ! -x "$work/node_modules/.bin/node" ]; then
  npm install --prefix "$work" --no-save --silent node@22 @modelcontextprotocol/conformance@0.1.16 >/dev/null
fi
node22="$work/node_modules/.bin/node"
suite="$work/node_modules/@modelcontextprotocol/conformance/dist/index.js"
scenarios=${*:-"server-initialize ping tools-list dns-rebinding-protection server-sse-multiple-streams server-sse-polling resources-list prompts-list"}
scratch=$(mktemp -d)
mkdir -p "$scratch/home" "$scratch/project"
(cd "$scratch/project" && DSH_HOME="$scratch/home" exec node "$dsh" mcp serve --transport http --no-auth 2>"$scratch/serve.err") &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$scratch"' EXIT
url=''
tries=0
while [ -z "$url" ]; do
  url=$(sed -n 's/^dsh mcp serve: listening on \(http[^ ]*\)$/\1/p' "$scratch/serve.err")
  if [ -z "$url" ]; then
    kill -0 $pid 2>/dev/null || { cat "$scratch/serve.err" >&2; exit 1; }
    tries=$((tries + 1))
    [ $tries -lt 600 ] || { echo "dsh mcp serve did not start" >&2; exit 1; }
    sleep 0.1
  fi
done
passed=0
failed=0
cd "$work"
for scenario in $scenarios; do
  line=$("$node22" "$suite" server --url "$url" --scenario "$scenario" 2>&1 | grep -E '^Passed:' || echo 'Passed: 0/0, 1 failed')
  echo "$scenario: $line"
  case "$line" in *" 0 failed"*) passed=$((passed + 1)) ;; *) failed=$((failed + 1)) ;; esac
done
echo "scenarios: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
