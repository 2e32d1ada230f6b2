#!/usr/bin/env bash
# The newcomer's path, checked end to end: a clean clone of this checkout, an empty HOME, and the
# README's commands run verbatim (extracted from the README between the `readme:` markers, never
# retyped here). The model is @dsh/llm-mock-server on 127.0.0.1, reached through the inherited
# environment (DEEPSEEK_API_KEY, DEEPSEEK_BASE_URL), as a user's real shell would supply a key.
#
# Usage: bash scripts/fresh-machine-check.sh [--node MAJOR] [--with-tests | --test-families "F ..."]
#   --node MAJOR   run everything under that Node line, fetched as the `node@MAJOR` npm package (its
#                  headers build the native add-ons), so the engines range is tested, not assumed
#   --with-tests   also run the README's test command in the clean clone (HOME still the empty one)
#   --test-families "F ..."
#                  instead, run only these package families or packages there (directories under
#                  packages/ such as `storage` or `boot/cli`, or `bundles`), as vitest path filters;
#                  a name that is no such directory fails before anything runs. CI runs the
#                  README's command on its own checkout already, so under the second Node line it
#                  runs the engine-sensitive families (native add-ons, PTYs, the loader) and skips
#                  the slow surface suites (browser, tmux, language servers)
#   --test-exclude REGEX
#                  with --test-families, leave out the test files whose path matches this extended
#                  regular expression (e.g. the end-to-end files, whose bins this check runs itself)
#   --tests-after FILE
#                  do the install checks now, then wait until FILE holds a word: `run` starts the
#                  tests, anything else skips them (exit 0 after the install checks). .ci/run starts
#                  the check in the background before its own checks (the clone, the Node download
#                  and the native add-on builds overlap them) and says `run` when its own suite
#                  starts. Gives up if the caller exits.
#   --test-workers N
#                  with --test-families, run vitest with at most N workers (default: the config's).
#                  .ci/run says 1: these tests then fill the cores its main suite leaves idle
#                  (a third of them on average) instead of running after it.
# Exit 0 when every step behaved; otherwise one line naming the step that did not.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d -t dsh-fresh.XXXXXX)
mock_pid=
cleanup() {
  [[ -n "$mock_pid" ]] && kill "$mock_pid" 2>/dev/null || true
  # The tree (a clone with its node_modules, a Node, a global install) took 16 s to delete on an
  # idle machine and 86 s on a loaded one, all of it after the verdict: it is renamed at once and
  # deleted by a detached process, so the caller does not wait for it.
  if mv "$work" "$work.done" 2>/dev/null; then
    (rm -rf "$work.done" </dev/null >/dev/null 2>&1 &)
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
fail() { echo "fresh-machine-check: $*" >&2; exit 1; }
# Seconds since the check started, on every progress line (CI prints these lines: they are the
# phase timings of .agents/notes/ci-time.md).
say() { echo "fresh-machine-check: [+${SECONDS}s] $*"; }
node_major=
with_tests=
test_projects=
test_exclude=
tests_after=
test_workers=
while (($#)); do
  case "$1" in
    --node) node_major=${2:?--node needs a major version}; shift 2 ;;
    --with-tests) with_tests=1; shift ;;
    --test-families) test_projects=${2:?--test-families needs a list of package families}; shift 2 ;;
    --test-exclude) test_exclude=${2:?--test-exclude needs a regular expression}; shift 2 ;;
    --tests-after) tests_after=${2:?--tests-after needs a file}; shift 2 ;;
    --test-workers)
      test_workers=${2:?--test-workers needs a number}
      [[ "$test_workers" =~ ^[1-9][0-9]*$ ]] || { echo "fresh-machine-check: --test-workers needs a whole number of 1 or more, not \"$test_workers\"" >&2; exit 2; }
      shift 2 ;;
    *) echo "usage: bash scripts/fresh-machine-check.sh [--node MAJOR] [--with-tests | --test-families \"F ...\" [--test-exclude REGEX] [--test-workers N]] [--tests-after FILE]" >&2; exit 2 ;;
  esac
done

# The block of shell that follows `<!-- readme:NAME -->` in README.md.
readme_block() {
  awk -v tag="<!-- readme:$1 -->" '
    $0 == tag { want = 1; next }
    want && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }
  ' "$repo/README.md"
}
install_cmd=$(readme_block install)
global_cmd=$(readme_block global)
[[ -n "$install_cmd" ]] || fail "README.md has no readme:install block"
[[ -n "$global_cmd" ]] || fail "README.md has no readme:global block"

git clone -q --no-hardlinks "$repo" "$work/dsh"
# The vitest path filter of a family (`storage`), a package (`boot/cli`), `bundles` or an example.
family_path() {
  case "$1" in bundles | examples/*) echo "$1/" ;; *) echo "packages/$1/" ;; esac
}
# A typo would narrow the run silently (vitest runs whatever the other filters match): checked
# here, before the install, so it fails in seconds.
for family in $test_projects; do
  [[ -d "$work/dsh/$(family_path "$family")" ]] ||
    fail "--test-families: $family is not a directory of the checkout ($(family_path "$family"))"
done
# What is checked is the committed HEAD: uncommitted edits are not part of a clean clone.

real_home=${REAL_HOME:-$HOME}
export HOME="$work/home"
mkdir -p "$HOME"
unset DSH_HOME
# The npm and pnpm caches stay shared with the machine's so the check costs no second download;
# everything dsh writes goes under the new HOME. pnpm >= 11 reads its settings from `pnpm_config_*`
# variables and ignores `npm_config_store_dir`: with only that one set, every run filled a new
# 800 MB store under the empty HOME from the registry and compiled better-sqlite3 for this Node
# again (~110 s of CPU beside the main suite in .ci/run). With the machine's store, the add-ons
# built for this Node once are reused from its side-effects cache (an install of 16 s).
machine_store="${pnpm_config_store_dir:-${npm_config_store_dir:-$real_home/.local/share/pnpm/store}}"
export npm_config_cache="${npm_config_cache:-$real_home/.npm}"
export pnpm_config_store_dir="$machine_store" npm_config_store_dir="$machine_store"
export npm_config_prefix="$work/global"
if [[ -n "$node_major" ]]; then
  npm install --prefix "$work/node" --no-save --no-audit --no-fund "node@$node_major" >"$work/node.log" 2>&1 || { cat "$work/node.log" >&2; fail "cannot install node@$node_major from npm"; }
  # The platform package holds the real binary and the headers node-gyp needs.
  node_dir=$(dirname "$(dirname "$(find "$work/node/node_modules" -path '*/bin/node' -type f | grep -v '/node/bin/' | head -1)")")
  [[ -x "$node_dir/bin/node" && -f "$node_dir/include/node/node.h" ]] || fail "node@$node_major from npm has no binary or headers"
  export PATH="$node_dir/bin:$PATH" npm_config_nodedir="$node_dir"
fi
say "node $(node --version)"
# As the README says: offline machines build the native add-ons against local Node headers.
if [[ -z "${npm_config_nodedir:-}" && -f /usr/include/node/node.h ]]; then export npm_config_nodedir=/usr; fi

cat >"$work/script.yaml" <<'YAML'
steps:
  - text: "dsh fresh-machine check: README summarised."
  - text: "dsh fresh-machine check: global install works."
YAML
node "$repo/packages/test-support/llm-mock-server/bin/dsh-llm-mock-server.mjs" --script "$work/script.yaml" >"$work/mock.url" &
mock_pid=$!
for _ in $(seq 50); do [[ -s "$work/mock.url" ]] && break; sleep 0.1; done
[[ -s "$work/mock.url" ]] || fail "the mock model server did not start"
export DEEPSEEK_BASE_URL=$(head -1 "$work/mock.url")
export DEEPSEEK_API_KEY=sk-fresh-machine-check

say "install and one-shot, verbatim: $install_cmd"
out=$(cd "$work/dsh" && bash -c "$install_cmd" 2>"$work/install.err") || { tail -20 "$work/install.err" >&2; fail "the README install command failed"; }
grep -q "README summarised" <<<"$out" || fail "the one-shot printed no answer: $out"

say "global install, verbatim: $global_cmd"
(cd "$work/dsh" && bash -c "$global_cmd") >"$work/global.out" 2>&1 || { cat "$work/global.out" >&2; fail "the README global install failed"; }
export PATH="$npm_config_prefix/bin:$PATH"
project="$work/project"
mkdir -p "$project"
out=$(cd "$project" && dsh --profile headless "check the install" 2>"$work/run.err") || { cat "$work/run.err" >&2; fail "dsh from another directory failed"; }
grep -q "global install works" <<<"$out" || fail "dsh from another directory printed: $out"
for bin in dsh-acp dsh-jsonrpc-agent; do
  command -v "$bin" >/dev/null || fail "$bin is not on PATH after the global install"
done
reply=$(printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' | (cd "$project" && timeout 20 dsh-acp) | head -1)
grep -q '"protocolVersion"' <<<"$reply" || fail "dsh-acp did not answer initialize: $reply"
[[ ! -e "$project/.dsh" ]] || fail "dsh wrote into the project directory"
[[ -d "$HOME/.dsh" ]] || fail "dsh did not use \$HOME/.dsh"
say "the global bins answered"
if [[ -n "$tests_after" && ( -n "$with_tests" || -n "$test_projects" ) ]]; then
  say "waiting for the word in $tests_after"
  caller=$PPID
  while [[ ! -s "$tests_after" ]]; do
    kill -0 "$caller" 2>/dev/null || fail "the caller exited before saying whether to run the tests"
    sleep 1
  done
  word=$(<"$tests_after")
  if [[ "$word" != run ]]; then
    say "tests skipped (the caller said: $word)"
    with_tests= test_projects=
  fi
fi
if [[ -n "$with_tests" ]]; then
  test_cmd=$(readme_block test)
  [[ -n "$test_cmd" ]] || fail "README.md has no readme:test block"
  say "test suite, verbatim: $test_cmd"
  unset DEEPSEEK_BASE_URL DEEPSEEK_API_KEY
  (cd "$work/dsh" && bash -c "$test_cmd") || fail "the README test command failed under node $(node --version)"
elif [[ -n "$test_projects" ]]; then
  args=()
  for family in $test_projects; do
    args+=("$(family_path "$family")")
  done
  # vitest's --exclude does not reach a project that sets its own exclude list (vitest.config.ts),
  # so the files are listed here: every test file under the families, less the excluded ones.
  if [[ -n "$test_exclude" ]]; then
    mapfile -t args < <(cd "$work/dsh" && find "${args[@]}" -path '*/node_modules' -prune -o -path '*/fixtures' -prune \
      -o -path '*/test/*' -name '*.test.ts' -print | grep -Ev -- "$test_exclude" | sort)
    ((${#args[@]})) || fail "--test-exclude $test_exclude leaves no test file in $test_projects"
  fi
  say "test families under node $(node --version): $test_projects${test_exclude:+ (${#args[@]} files, without /$test_exclude/)}"
  unset DEEPSEEK_BASE_URL DEEPSEEK_API_KEY
  (cd "$work/dsh" && npx vitest run ${test_workers:+--maxWorkers="$test_workers"} "${args[@]}") || fail "the test families ($test_projects) failed under node $(node --version)"
fi
say "ok (node $(node --version), clean clone, HOME=$HOME, README commands verbatim)"
