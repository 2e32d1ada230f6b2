#!/usr/bin/env node
// SDK notification throughput, measured at the TypeScript Harness against the real
// dsh-jsonrpc-agent (default composition + a bench tool, see bench/fixtures/sdk-burst-tool.ts):
//   notification stream: a tool appends N small `bench/tick` events (default 10,000) to the
//     session at once; window = first to last tick seen by the client (target: > 50,000 events/s);
//   model stream: a model reply of N text deltas becomes N `assistant/chunk` events (the whole
//     path: SSE parsing, agent loop, persistence, notifications), for context;
//   baseline: a bare node child writing N ready-made `session/event` frames, parsed by the same
//     client connection code (the ceiling of the client side alone).
// The mock model server runs in its own process so the client CPU figures are the client's only.
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import { register } from 'tsx/esm/api'

register()
const { Harness } = await import('../packages/sdk/client/src/index.ts')
const { JsonRpcConnection } = await import('../packages/sdk/protocol/src/index.ts')

const N = Number(process.env.BENCH_EVENTS ?? 10_000)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const TARGET = 50_000
const bin = fileURLToPath(new URL('../packages/sdk/server/bin/dsh-jsonrpc-agent.mjs', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'dsh-bench-sdk-'))

const mockBin = fileURLToPath(
  new URL('../packages/test-support/llm-mock-server/bin/dsh-llm-mock-server.mjs', import.meta.url),
)
const burstTool = fileURLToPath(new URL('./fixtures/sdk-burst-tool.ts', import.meta.url))

const burst = [{ toolCalls: [{ name: 'bench_burst', arguments: { count: N } }] }, { text: 'done' }]
const deltas = { events: Array.from({ length: N }, (_, i) => ({ text: `t${i % 10}` })) }
const steps = []
for (let i = 0; i < RUNS + 1; i++) steps.push(...burst)
for (let i = 0; i < RUNS + 1; i++) steps.push(deltas)
const scriptFile = join(root, 'script.json')
writeFileSync(scriptFile, JSON.stringify({ steps }))
const patchFile = join(root, 'bench.patch.yml')
writeFileSync(patchFile, `- insert:\n    - id: sdk-burst-tool\n      name: ${JSON.stringify(burstTool)}\n`)

const mock = spawn(process.execPath, [mockBin, '--script', scriptFile], { stdio: ['ignore', 'pipe', 'inherit'] })
const baseURL = await new Promise((resolve) => mock.stdout.once('data', (d) => resolve(String(d).trim())))
const env = {
  PATH: process.env.PATH,
  HOME: root,
  DSH_HOME: join(root, 'home'),
  DEEPSEEK_BASE_URL: baseURL,
  DEEPSEEK_API_KEY: 'sk-bench',
}

const cpuMs = (u) => (u.user + u.system) / 1000

/** Streams one turn; the window runs from the first to the last event of `type`. */
async function throughRealServer(session, type) {
  let count = 0
  let t0 = 0
  let t1 = 0
  let c0
  let c1
  for await (const event of session.stream('go')) {
    if (event.type !== type) continue
    if (count++ === 0) {
      t0 = performance.now()
      c0 = process.cpuUsage()
    }
    t1 = performance.now()
    c1 = process.cpuUsage(c0)
  }
  return { count, ms: t1 - t0, cpu: cpuMs(c1) }
}

/** Baseline: a child that only writes N ready-made frames; parsed with the client's connection. */
function throughBareChild() {
  const script = `
    const frames = []
    for (let i = 0; i < ${N}; i++) frames.push(JSON.stringify({ jsonrpc: '2.0', method: 'session/event', params: { sessionId: 's', event: { type: 'assistant/chunk', seq: i, time: Date.now(), data: { chunk: { type: 'text-delta', text: 't' + (i % 10) } } } } }) + '\\n')
    process.stdin.once('data', () => process.stdout.write(frames.join('')))
    process.stdin.on('end', () => process.exit(0))`
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] })
    let count = 0
    let t0 = 0
    let c0
    const conn = new JsonRpcConnection({
      write: () => {},
      strict: true,
      onNotification: () => {
        if (++count === N) {
          const ms = performance.now() - t0
          const cpu = cpuMs(process.cpuUsage(c0))
          child.stdin.end()
          resolve({ count, ms, cpu })
        }
      },
    })
    child.stdout.on('data', (chunk) => conn.receive(chunk))
    child.on('error', reject)
    setTimeout(() => {
      t0 = performance.now()
      c0 = process.cpuUsage()
      child.stdin.write('go\n')
    }, 200)
  })
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

const harness = await Harness.start({ bin, args: ['--patch', patchFile], cwd: root, env })
const session = await harness.createSession()
const measure = async (type) => {
  await throughRealServer(session, type) // warm-up (JIT, first request)
  const runs = []
  for (let i = 0; i < RUNS; i++) runs.push(await throughRealServer(session, type))
  return runs
}
const ticks = await measure('bench/tick')
const chunks = await measure('assistant/chunk')
await harness.close()
const bare = []
for (let i = 0; i < RUNS; i++) bare.push(await throughBareChild())
mock.kill('SIGTERM')

const summarize = (runs) => {
  const ms = median(runs.map((r) => r.ms))
  const cpu = median(runs.map((r) => r.cpu))
  return {
    eventsPerSec: Math.round((runs[0].count / ms) * 1000),
    ms,
    cpuMs: cpu,
    cpuUsPerEvent: (cpu * 1000) / runs[0].count,
    count: runs[0].count,
  }
}
const t = summarize(ticks)
const m = summarize(chunks)
const b = summarize(bare)
if (t.count !== N) throw new Error(`expected ${N} bench/tick events, got ${t.count}`)
if (m.count < N) throw new Error(`expected at least ${N} assistant/chunk events, got ${m.count}`)
const fmt = (x) => x.toLocaleString('en-US')
const line = (label, r) =>
  `  ${label}: ${fmt(r.eventsPerSec)} events/s (${r.ms.toFixed(1)} ms), client CPU ${r.cpuMs.toFixed(1)} ms = ${r.cpuUsPerEvent.toFixed(2)} us/event`
console.log(`sdk notification throughput, ${fmt(N)} events per run, median of ${RUNS} runs`)
console.log(line('notification stream (session appends -> Harness)', t))
console.log(line('model stream (SSE deltas -> agent loop -> Harness)', m))
console.log(line('baseline (bare frames -> client connection)', b))
console.log(
  `  ratio notification/baseline: ${(t.eventsPerSec / b.eventsPerSec).toFixed(2)}; target ${fmt(TARGET)} events/s: ${t.eventsPerSec >= TARGET ? 'met' : 'NOT met'}`,
)
