#!/usr/bin/env node
// @ts-check
// The README's test command (`pnpm test`): every runner runs, whatever another one did, and the
// run ends with one line per runner plus a combined verdict. A failure in vitest does not hide the
// Python SDK's tests (an old script chained them with `&&`).
//
// The runners run at the same time: the Python tests (~10 s, mostly waiting on the real
// dsh-jsonrpc-agent they start) fill a little of the idle the vitest suite leaves on two cores,
// instead of adding their time after it. vitest keeps the terminal; the Python output is held and
// printed whole when vitest is done, so the two never interleave. Both use the transpiled dist/
// (the Python tests start the real bin): it is brought up to date first (scripts/build.mjs, about
// a second when nothing changed), which vitest's global setup then finds done.
//
// Usage: node scripts/test-all.mjs [vitest arguments...]
//   Arguments are passed to vitest (e.g. a path filter such as `packages/core/`); with arguments the
//   Python tests are skipped, since a narrowed run is about the JavaScript side.
// Exit status: 0 when every runner passed, else the first failing runner's status (1 if it died
// from a signal), in the order vitest, python.
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const extra = process.argv.slice(2)
const results = join(root, 'node_modules', '.vitest', 'results.json')
mkdirSync(dirname(results), { recursive: true })

/** @typedef {{ name: string, command: string, args: string[], held?: boolean }} Runner */
/** @type {Runner[]} */
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
if (extra.length === 0) {
  runners.push({
    name: 'python unittest',
    command: 'python3',
    args: ['-m', 'unittest', 'discover', '-s', 'python/tests'],
    held: true,
  })
  const build = spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs'), '--quiet'], {
    cwd: root,
    stdio: 'inherit',
  })
  if (build.status !== 0) {
    process.stdout.write(`test-all: scripts/build.mjs failed (${build.error?.message ?? `exit ${build.status}`})\n`)
    process.exit(build.status || 1)
  }
}

/** @typedef {{ name: string, status: number, note: string, seconds: number, output: Buffer[] }} Outcome */
// The clock time each runner starts at: a delay before a runner (the package manager's own start,
// a lock) shows against the caller's timestamps.
const clock = () => new Date().toISOString().slice(11, 19)

/** Runs one runner to its end; a held runner's stdout and stderr are kept, in arrival order. */
function run(/** @type {Runner} */ runner) {
  return new Promise((resolve) => {
    const started = performance.now()
    /** @type {Buffer[]} */
    const output = []
    const seconds = () => Math.round((performance.now() - started) / 1000)
    process.stdout.write(
      `test-all: ${runner.name} starts at ${clock()} UTC${runner.held ? ' (its output follows when vitest is done)' : ''}\n`,
    )
    const child = spawn(runner.command, runner.args, {
      cwd: root,
      stdio: runner.held ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    })
    if (runner.held) {
      child.stdout?.on('data', (chunk) => output.push(chunk))
      child.stderr?.on('data', (chunk) => output.push(chunk))
    }
    /** @type {Outcome | undefined} */
    let failedStart
    child.on('error', (error) => {
      const code = /** @type {NodeJS.ErrnoException} */ (error).code
      failedStart = {
        name: runner.name,
        status: 1,
        note: `could not start ${runner.command} (${code ?? error.message})`,
        seconds: seconds(),
        output,
      }
    })
    child.on('close', (status, signal) => {
      if (failedStart) return resolve(failedStart)
      if (signal)
        return resolve({ name: runner.name, status: 1, note: `killed by ${signal}`, seconds: seconds(), output })
      resolve({
        name: runner.name,
        status: status ?? 1,
        note: status === 0 ? 'passed' : `failed (exit ${status})`,
        seconds: seconds(),
        output,
      })
    })
  })
}

// Ctrl-C reaches every runner through the terminal's process group; nothing else to forward.
const pending = runners.map(run)
/** @type {Outcome[]} */
const outcomes = []
for (const [i, promise] of pending.entries()) {
  const outcome = await promise
  outcomes.push(outcome)
  if (runners[i].held) {
    process.stdout.write(`\ntest-all: ${outcome.name} output\n`)
    for (const chunk of outcome.output) process.stdout.write(chunk)
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
