#!/usr/bin/env node
// The `grep` tool's execute() versus the same rg argv run directly (spawn, read all stdout, exit)
// on a generated tree. Both sides run the identical command, so the ratio is the tool's own cost:
// the subprocess seam (subprocess-local: process group, env scrub), line parsing up to the cap,
// counting past it, formatting. Target: within 1.2x.
// BENCH_FILES (default 20000), BENCH_RUNS (default 15), BENCH_PATTERN (default "needle\\d+").
import { register } from 'tsx/esm/api'
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'

register()
const { Context } = await import('cordis')
const { default: ToolRegistry } = await import('../packages/core/tools/src/index.ts')
const { default: LocalSubprocess } = await import('../packages/subprocess/subprocess-local/src/index.ts')
const Search = await import('../packages/fs/tool-fs-search/src/index.ts')

const FILES = Number(process.env.BENCH_FILES ?? 20000)
const RUNS = Number(process.env.BENCH_RUNS ?? 15)
const PATTERN = process.env.BENCH_PATTERN ?? 'needle\\d+'

const root = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'dsh-bench-grep-'))
const body = (i) =>
  Array.from({ length: 40 }, (_, l) =>
    l % 10 === 3
      ? `  const value${l} = needle${i} + ${l} // match`
      : `  let filler${l} = "lorem ipsum dolor ${i}-${l}"`,
  ).join('\n') + '\n'
for (let d = 0; d < Math.ceil(FILES / 100); d++) {
  const dir = join(root, `pkg${d}`, 'src')
  mkdirSync(dir, { recursive: true })
  for (let f = 0; f < 100 && d * 100 + f < FILES; f++) writeFileSync(join(dir, `mod${f}.ts`), body(d * 100 + f))
}

const ctx = new Context()
await ctx.plugin(ToolRegistry, ToolRegistry.Config({}))
await ctx.plugin(LocalSubprocess, LocalSubprocess.Config({}))
await ctx.plugin(Search, Search.Config({}))
const tool = ctx.tools.get('grep')
const config = Search.Config({})
const argv = Search.grepArgs(config, PATTERN, '.')

function direct() {
  return new Promise((resolve, reject) => {
    const child = spawn(Search.RG_PATH, argv, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    let bytes = 0
    child.stdout.on('data', (chunk) => (bytes += chunk.length))
    child.stderr.resume()
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve(bytes) : reject(new Error(`rg exit ${code}`))))
  })
}
async function viaTool() {
  const result = await tool.execute(
    { pattern: PATTERN },
    { callId: 'bench', name: 'grep', cwd: root, signal: new AbortController().signal },
  )
  if (result.isError) throw new Error(String(result.content))
  return result
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
for (let i = 0; i < 2; i++) {
  await direct()
  await viaTool()
}
const rgTimes = []
const toolTimes = []
let sample
for (let i = 0; i < RUNS; i++) {
  // Alternate so both sides see the same cache and load conditions.
  let t = performance.now()
  const bytes = await direct()
  rgTimes.push(performance.now() - t)
  t = performance.now()
  sample = await viaTool()
  toolTimes.push(performance.now() - t)
  if (i === 0)
    console.log(
      `rg stdout: ${(bytes / 1024 / 1024).toFixed(1)} MiB; tool: ${sample.meta.total} matching lines, ${sample.meta.shown} shown`,
    )
}
const rgMedian = median(rgTimes)
const toolMedian = median(toolTimes)
console.log(`files: ${FILES}, runs: ${RUNS}, pattern: ${PATTERN}`)
console.log(`rg direct median: ${rgMedian.toFixed(1)} ms`)
console.log(`grep tool median: ${toolMedian.toFixed(1)} ms`)
console.log(`ratio (tool / rg): ${(toolMedian / rgMedian).toFixed(3)} (target <= 1.2)`)
await ctx.fiber?.dispose?.()
rmSync(root, { recursive: true, force: true })
