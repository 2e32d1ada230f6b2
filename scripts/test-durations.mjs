#!/usr/bin/env node
// @ts-check
// Records how long each test file took, for the order vitest runs them in (scripts/vitest-sequencer.ts:
// longest first, so neither of the two workers idles at the end of a group).
//
// Usage: node scripts/test-durations.mjs [results.json...] [--out file]
//   results.json: vitest's own results cache of a whole run (default: every
//   node_modules/.vite/vitest/*/results.json of this checkout, which any vitest run updates). Its
//   durations are whole files: collection aside, they include beforeAll and afterAll (pack.e2e's
//   registry and global install: ~50 s), which the JSON report's first-test-to-last-test span
//   leaves out (2.5 s for the same file). Writes scripts/test-durations.json (or --out): seconds
//   per file, rounded to 0.1 s, keyed by the path from the repository root.
//   Re-run it after a quiet full run when files were added or grew; a file the record lacks runs
//   first anyway (scripts/vitest-sequencer.ts), so a stale record costs seconds only in the tail.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(
    'usage: node scripts/test-durations.mjs [vitest results cache...; default node_modules/.vite/vitest/*/results.json] [--out file]\n',
  )
  process.exit(0)
}
const fail = (/** @type {string} */ message) => {
  process.stderr.write(`test-durations: ${message}\n`)
  process.exit(2)
}
const outAt = args.indexOf('--out')
if (outAt >= 0 && !args[outAt + 1]) fail('--out needs a file')
const out = outAt >= 0 ? args.splice(outAt, 2)[1] : join(root, 'scripts', 'test-durations.json')
let sources = args
if (sources.length === 0) {
  const cacheDir = join(root, 'node_modules', '.vite', 'vitest')
  sources = existsSync(cacheDir)
    ? readdirSync(cacheDir)
        .map((d) => join(cacheDir, d, 'results.json'))
        .filter((f) => existsSync(f))
    : []
  if (sources.length === 0) fail(`no vitest results cache under ${cacheDir}: run the suite first`)
}

/** @type {Record<string, number>} */
const files = {}
for (const source of sources) {
  /** @type {{ results?: unknown }} */
  let cache
  try {
    cache = JSON.parse(readFileSync(source, 'utf8'))
  } catch (error) {
    fail(`cannot read ${source}: ${/** @type {Error} */ (error).message}`)
    throw error
  }
  if (!Array.isArray(cache.results) || cache.results.length === 0)
    fail(`${source} has no results (is it vitest's results cache, node_modules/.vite/vitest/*/results.json?)`)
  for (const entry of /** @type {unknown[]} */ (cache.results)) {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string') continue
    const duration = /** @type {{ duration?: unknown }} */ (entry[1] ?? {}).duration
    if (typeof duration !== 'number' || !Number.isFinite(duration) || duration < 0) continue
    // Keys are `<project>:<path from the root>`; a project name has no colon of its own here.
    const file = entry[0].slice(entry[0].indexOf(':') + 1)
    files[file] = Math.round(duration / 100) / 10
  }
}
const sorted = Object.fromEntries(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
writeFileSync(
  out,
  `${JSON.stringify({ note: 'seconds per test file, from scripts/test-durations.mjs; read by scripts/vitest-sequencer.ts', files: sorted }, null, 1)}\n`,
)
process.stdout.write(`test-durations: ${Object.keys(files).length} files written to ${out}\n`)
