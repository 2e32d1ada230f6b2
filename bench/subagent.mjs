#!/usr/bin/env node
// Spawn-child overhead and memory of live in-process children, on the real loop with the scripted
// in-process model (agent-loop-testkit). Overhead: time from `ctx.subagents.start()` to the child's
// first model request, against a baseline taken alternately in the same run: a plain
// `ctx.agents.create()` + `send()` to its first request. Memory: RSS growth per live child while
// N children hang in their first request. Targets: overhead under 20 ms, under 5 MB per child.
// Run with `node --expose-gc bench/subagent.mjs`; BENCH_RUNS (default 30), BENCH_CHILDREN (default 40).
import { performance } from 'node:perf_hooks'

const dist = (p) => new URL(`../packages/${p}/dist/index.js`, import.meta.url).href
const { createHarness } = await import(dist('test-support/agent-loop-testkit'))
const { default: SubagentService } = await import(dist('subagent/subagent'))

const RUNS = Number(process.env.BENCH_RUNS ?? 30)
const CHILDREN = Number(process.env.BENCH_CHILDREN ?? 40)
let onRequest = () => {}
const hang = () => {
  onRequest()
  return { text: 'working', hang: true }
}
const harness = await createHarness({
  script: Array.from({ length: 4 * RUNS + CHILDREN + 10 }, () => hang),
  plugins: [[SubagentService, { maxConcurrent: CHILDREN + 10, timeoutMs: 0 }]],
})
const { ctx, agent } = harness
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const firstRequest = () => new Promise((resolve) => (onRequest = () => resolve(performance.now())))

// Memory first, on a fresh heap.
globalThis.gc?.()
const rss0 = process.memoryUsage().rss
const heap0 = process.memoryUsage().heapUsed
const live = []
for (let i = 0; i < CHILDREN; i++) {
  const seen = firstRequest()
  live.push(await ctx.subagents.start({ parent: agent, description: 'bench', prompt: 'task' }))
  await seen
}
globalThis.gc?.()
const rss1 = process.memoryUsage().rss
const heap1 = process.memoryUsage().heapUsed
console.log(
  `per live in-process child: RSS ${((rss1 - rss0) / CHILDREN / 1024 / 1024).toFixed(2)} MB, JS heap ${((heap1 - heap0) / CHILDREN / 1024 / 1024).toFixed(2)} MB (${CHILDREN} children${globalThis.gc ? '' : '; run with --expose-gc for a steadier figure'})`,
)
for (const c of live) ctx.subagents.interrupt(agent, c.record.id)
await Promise.all(live.map((c) => c.finished))
const base = []
const spawnT = []
for (let i = 0; i < RUNS; i++) {
  // Baseline: a plain agent to its first request.
  let seen = firstRequest()
  let t0 = performance.now()
  const plain = ctx.agents.create({ cwd: process.cwd(), model: agent.model })
  void plain.send('task').catch(() => {})
  base.push((await seen) - t0)
  await plain.dispose()
  // Measured: a spawn child to its first request.
  seen = firstRequest()
  t0 = performance.now()
  const started = await ctx.subagents.start({ parent: agent, description: 'bench', prompt: 'task' })
  spawnT.push((await seen) - t0)
  ctx.subagents.interrupt(agent, started.record.id)
  await started.finished
}
const b = median(base)
const s = median(spawnT)
console.log(
  `spawn child to first request: median ${s.toFixed(2)} ms; plain agent baseline ${b.toFixed(2)} ms; overhead ${(s - b).toFixed(2)} ms (ratio ${(s / b).toFixed(2)})`,
)

await harness.dispose()
