#!/usr/bin/env node
// Runs the generated-session face checks with more seeds than CI does:
//   node packages/test-support/session-generator/bin/run-seeds.mjs --seeds 20 [--first 1000]
// (the same as DSH_GEN_SEEDS=20 DSH_GEN_FIRST_SEED=1000 npx vitest run <the test file>).
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

let values
try {
  ;({ values } = parseArgs({ options: { seeds: { type: 'string' }, first: { type: 'string' } }, strict: true }))
} catch (error) {
  console.error(`run-seeds: ${error.message.split('\n')[0]}; usage: run-seeds.mjs --seeds N [--first SEED]`)
  process.exit(2)
}
const seeds = Number(values.seeds)
if (!Number.isInteger(seeds) || seeds < 1) {
  console.error(`run-seeds: --seeds needs a positive integer, got '${values.seeds ?? ''}'`)
  process.exit(2)
}
const first = values.first === undefined ? 1000 : Number(values.first)
if (!Number.isInteger(first)) {
  console.error(`run-seeds: --first needs an integer, got '${values.first}'`)
  process.exit(2)
}
const root = fileURLToPath(new URL('../../../../', import.meta.url))
const test = fileURLToPath(new URL('../test/faces.e2e.test.ts', import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), 'dsh-run-seeds-'))
const report = join(scratch, 'report.json')
const run = spawnSync('npx', ['vitest', 'run', test], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, DSH_GEN_SEEDS: String(seeds), DSH_GEN_FIRST_SEED: String(first), DSH_GEN_REPORT: report },
})
// Passes per face: the generated sessions (the two named cases are counted apart).
if (existsSync(report)) {
  const outcomes = JSON.parse(readFileSync(report, 'utf8'))
  const faces = [...new Set(outcomes.map((o) => o.face))]
  console.log(`\nrun-seeds: seeds ${first}..${first + seeds - 1}`)
  for (const face of faces) {
    const mine = outcomes.filter((o) => o.face === face && o.seed >= first && o.seed < first + seeds)
    const passed = mine.filter((o) => o.ok).length
    const failed = mine.filter((o) => !o.ok).map((o) => o.seed)
    console.log(
      `  ${face.padEnd(20)} ${passed}/${mine.length} generated sessions passed${failed.length ? `; failed seeds: ${failed.join(' ')}` : ''}`,
    )
  }
} else console.log('run-seeds: no report (the run stopped before the faces were checked)')
rmSync(scratch, { recursive: true, force: true })
process.exit(run.status ?? 1)
