#!/usr/bin/env node
// @ts-check
// Records how long each test file took, for the order vitest runs them in (scripts/vitest-sequencer.ts:
// longest first, so neither of the two workers idles at the end of a group).
//
// Usage: node scripts/test-durations.mjs [report.json] [--out file]
//   report.json: vitest's JSON report of a whole run (default node_modules/.vitest/results.json, which
//   `pnpm test` writes). Writes scripts/test-durations.json (or --out): seconds per file, rounded to
//   0.1 s, keyed by the path from the repository root.
//   Re-run it after a quiet full run when files were added or grew; a file the record lacks runs
//   first anyway (scripts/vitest-sequencer.ts), so a stale record costs minutes only in the tail.
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, isAbsolute, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(
    'usage: node scripts/test-durations.mjs [vitest JSON report; default node_modules/.vitest/results.json] [--out file]\n',
  )
  process.exit(0)
}
const outAt = args.indexOf('--out')
if (outAt >= 0 && !args[outAt + 1]) {
  process.stderr.write('test-durations: --out needs a file\n')
  process.exit(2)
}
const out = outAt >= 0 ? args.splice(outAt, 2)[1] : join(root, 'scripts', 'test-durations.json')
if (args.length > 1) {
  process.stderr.write(`test-durations: one report at most (got ${args.join(' ')})\n`)
  process.exit(2)
}
const source = args[0] ?? join(root, 'node_modules', '.vitest', 'results.json')

/** @type {{ testResults?: Array<{ name?: unknown, startTime?: unknown, endTime?: unknown }> }} */
let report
try {
  report = JSON.parse(readFileSync(source, 'utf8'))
} catch (error) {
  process.stderr.write(`test-durations: cannot read ${source}: ${/** @type {Error} */ (error).message}\n`)
  process.exit(2)
}
if (!Array.isArray(report.testResults) || report.testResults.length === 0) {
  process.stderr.write(`test-durations: ${source} has no testResults (is it vitest's JSON report?)\n`)
  process.exit(2)
}

/** @type {Record<string, number>} */
const files = {}
for (const entry of report.testResults) {
  const { name, startTime, endTime } = entry
  if (typeof name !== 'string' || typeof startTime !== 'number' || typeof endTime !== 'number') continue
  // Reports of another checkout (a CI clone) name its absolute paths: keep the part from packages/,
  // bundles/ or examples/ on.
  const rel = isAbsolute(name) ? relative(root, name) : name
  const key = rel.startsWith('..') ? (rel.match(/(?:^|\/)((?:packages|bundles|examples)\/.*)$/)?.[1] ?? rel) : rel
  files[key] = Math.round(Math.max(0, endTime - startTime) / 100) / 10
}
const sorted = Object.fromEntries(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
writeFileSync(
  out,
  `${JSON.stringify({ note: 'seconds per test file, from scripts/test-durations.mjs; read by scripts/vitest-sequencer.ts', files: sorted }, null, 1)}\n`,
)
process.stdout.write(`test-durations: ${Object.keys(files).length} files written to ${out}\n`)
