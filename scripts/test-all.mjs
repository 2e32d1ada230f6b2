#!/usr/bin/env node
// @ts-check
// The README's test command (`pnpm test`): every runner runs, whatever the one before it did, and
// the run ends with one line per runner plus a combined verdict. A failure in vitest no longer
// hides the Python SDK's tests (the old script chained them with `&&`).
//
// Usage: node scripts/test-all.mjs [vitest arguments...]
//   Arguments are passed to vitest (e.g. a path filter such as `packages/core/`); with arguments the
//   Python tests are skipped, since a narrowed run is about the JavaScript side.
// Exit status: 0 when every runner passed, else the first failing runner's status (1 if it died
// from a signal).
import { spawnSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const extra = process.argv.slice(2)
const results = join(root, 'node_modules', '.vitest', 'results.json')
mkdirSync(dirname(results), { recursive: true })

/** @type {Array<{ name: string, command: string, args: string[] }>} */
const runners = [
  {
    name: 'vitest',
    command: process.execPath,
    args: [
      join(root, 'node_modules', 'vitest', 'vitest.mjs'),
      'run',
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${results}`,
      ...extra,
    ],
  },
]
if (extra.length === 0)
  runners.push({
    name: 'python unittest',
    command: 'python3',
    args: ['-m', 'unittest', 'discover', '-s', 'python/tests'],
  })

/** @type {Array<{ name: string, status: number, note: string, seconds: number }>} */
const outcomes = []
// The clock time each runner starts at: a delay before a runner (the package manager's own start,
// a lock) shows against the caller's timestamps.
const clock = () => new Date().toISOString().slice(11, 19)
for (const runner of runners) {
  const started = performance.now()
  process.stdout.write(`test-all: ${runner.name} starts at ${clock()} UTC\n`)
  const run = spawnSync(runner.command, runner.args, { cwd: root, stdio: 'inherit' })
  const seconds = Math.round((performance.now() - started) / 1000)
  if (run.error) {
    const code = /** @type {NodeJS.ErrnoException} */ (run.error).code
    outcomes.push({
      name: runner.name,
      status: 1,
      note: `could not start ${runner.command} (${code ?? run.error.message})`,
      seconds,
    })
  } else if (run.signal) {
    outcomes.push({ name: runner.name, status: 1, note: `killed by ${run.signal}`, seconds })
  } else {
    outcomes.push({
      name: runner.name,
      status: run.status ?? 1,
      note: run.status === 0 ? 'passed' : `failed (exit ${run.status})`,
      seconds,
    })
  }
}

process.stdout.write('\ntest-all:\n')
// The wall time of each runner, whole (vitest's own "Duration" starts after its global setup).
for (const outcome of outcomes) process.stdout.write(`  ${outcome.name}: ${outcome.note} in ${outcome.seconds} s\n`)
const failed = outcomes.find((outcome) => outcome.status !== 0)
process.stdout.write(
  `test-all: ${
    failed
      ? `FAILED (${outcomes
          .filter((o) => o.status !== 0)
          .map((o) => o.name)
          .join(', ')})`
      : 'every runner passed'
  }\n`,
)
process.exit(failed ? failed.status : 0)
