#!/usr/bin/env node
// Boot-to-exit wall time and peak RSS of a one-shot `dsh --profile headless` task with one tool
// call, against @dsh/llm-mock-server on loopback, beside a bare `node -e 0` in the same run.
// Runs alternate (N each, default 10); prints medians and ratios. BENCH_BASE=/other/checkout adds
// that checkout's dsh to the same alternation (a before/after in one run). BENCH_NODE_ARGS adds
// node flags to this checkout's dsh runs (for example `--cpu-prof --cpu-prof-dir=/tmp/p`).
// With /usr/bin/time present each run also reports its CPU time (user + system, the steadier
// figure on a loaded machine) and its peak RSS from the kernel; otherwise RSS is sampled.
// Spawn -> first model request: dsh talks to the mock through a loopback forwarder here that
// notes when the first byte of a POST arrives (the request's head, before its body is read), so
// the figure is the time from spawn to the model request leaving dsh (issue #42: goal < 120 ms).
// Prints the load average: figures taken at a load above the core count are loaded figures.
import { spawn } from 'node:child_process'
import { connect, createServer } from 'node:net'
import { availableParallelism, loadavg } from 'node:os'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import { register } from 'tsx/esm/api'

register()
const { startMockServer } = await import('../packages/test-support/llm-mock-server/src/index.ts')

const RUNS = Number(process.env.BENCH_RUNS ?? 10)
const bin = fileURLToPath(new URL('../packages/boot/cli/bin/dsh.mjs', import.meta.url))
const baseBin = process.env.BENCH_BASE
  ? join(resolve(process.env.BENCH_BASE), 'packages/boot/cli/bin/dsh.mjs')
  : undefined
const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)
const root = mkdtempSync(join(tmpdir(), 'dsh-bench-headless-'))
const step = [
  { toolCalls: [{ name: 'bash', arguments: { command: 'echo bench', description: 'echo' } }] },
  { text: 'done' },
]
const steps = []
for (let i = 0; i < (RUNS + 1) * (baseBin ? 2 : 1); i++) steps.push(...step)
const server = await startMockServer({ steps })
/** performance.now() of the first POST seen since the last reset (undefined: none yet). */
let firstPost
const forwarder = createServer((client) => {
  const upstream = connect(server.port, '127.0.0.1')
  client.on('data', (chunk) => {
    if (firstPost === undefined && chunk.subarray(0, 5).toString('latin1') === 'POST ') firstPost = performance.now()
  })
  client.pipe(upstream).pipe(client)
  const end = () => {
    client.destroy()
    upstream.destroy()
  }
  client.on('error', end)
  upstream.on('error', end)
  client.on('close', end)
  upstream.on('close', end)
})
await new Promise((r) => forwarder.listen(0, '127.0.0.1', r))
const forwardURL = `http://127.0.0.1:${forwarder.address().port}${new URL(server.baseURL).pathname}`

const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined
let timeFiles = 0

/**
 * Runs node with `args`: wall time here; CPU time and peak RSS from /usr/bin/time when present,
 * else peak RSS sampled from /proc (no CPU figure).
 */
function measure(args, env) {
  return new Promise((resolve, reject) => {
    const timeOut = TIME ? join(root, `time-${timeFiles++}.txt`) : undefined
    const argv = TIME ? [TIME, ['-f', '%U %S %M', '-o', timeOut, process.execPath, ...args]] : [process.execPath, args]
    firstPost = undefined
    const t0 = performance.now()
    const child = spawn(argv[0], argv[1], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let peak = 0
    let out = ''
    let err = ''
    const sample = () => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))
        if (m) peak = Math.max(peak, Number(m[1]) * 1024)
      } catch {}
    }
    // Under /usr/bin/time the child is time itself: the kernel's figure is used instead.
    const timer = TIME ? undefined : setInterval(sample, 5)
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    child.on('error', reject)
    // VmHWM is the high-water mark; sampling it just before exit catches the peak.
    if (!TIME) child.on('exit', () => sample())
    child.on('close', (code) => {
      clearInterval(timer)
      const ms = performance.now() - t0
      const first = firstPost === undefined ? undefined : firstPost - t0
      if (code !== 0) return reject(new Error(`exit ${code}: ${err || out}`))
      if (!timeOut) return resolve({ ms, first, rss: peak })
      const [user, sys, maxKb] = readFileSync(timeOut, 'utf8').trim().split('\n').pop().split(' ').map(Number)
      resolve({ ms, first, cpu: (user + sys) * 1000, rss: maxKb * 1024 })
    })
  })
}

const env = {
  PATH: process.env.PATH,
  HOME: root,
  DSH_HOME: join(root, 'home'),
  DEEPSEEK_BASE_URL: forwardURL,
  DEEPSEEK_API_KEY: 'sk-bench',
}
// The base checkout gets its own dsh home: its caches (stack code cache, sandbox probe result,
// layer parses) are written in its own formats, and a shared home would make each side rewrite
// what the other wrote at every alternation, which no user's home sees.
const baseEnv = { ...env, DSH_HOME: join(root, 'home-base') }
// Warm-up: creates the profile and fills the caches, as on any machine after first use.
await measure([bin, '--profile', 'headless', 'warm up'], env)
if (baseBin) await measure([baseBin, '--profile', 'headless', 'warm up'], baseEnv)
const dsh = []
const base = []
const bare = []
const loads = [loadavg()[0]]
for (let i = 0; i < RUNS; i++) {
  bare.push(await measure(['-e', '0'], env))
  dsh.push(await measure([...nodeArgs, bin, '--profile', 'headless', 'run echo'], env))
  if (baseBin) base.push(await measure([baseBin, '--profile', 'headless', 'run echo'], baseEnv))
}
loads.push(loadavg()[0])
forwarder.close()
await server.close()
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}
const dMs = median(dsh.map((r) => r.ms))
const bMs = median(bare.map((r) => r.ms))
const dRss = median(dsh.map((r) => r.rss)) / 2 ** 20
const bRss = median(bare.map((r) => r.rss)) / 2 ** 20
console.log(`runs: ${RUNS} each (one tool call per task, mock model on loopback)`)
console.log(
  `load average ${loads.map((l) => l.toFixed(1)).join(' -> ')} on ${availableParallelism()} cores${Math.max(...loads) > availableParallelism() ? ' (LOADED: not a quiet figure)' : ''}`,
)
const firstOf = (rs) => {
  const xs = rs.map((r) => r.first).filter((x) => x !== undefined)
  return xs.length ? `${median(xs).toFixed(0)} ms` : 'none seen'
}
const cpu = (rs) => (TIME ? `, CPU ${median(rs.map((r) => r.cpu)).toFixed(0)} ms` : '')
// A ratio against `node -e 0` means something only when that start was itself quiet (issue #42):
// flagged when its median is above 1.5x its usual (BENCH_NODE_USUAL_MS, default 30 ms: a quiet
// start of this machine's node).
const usual = Number(process.env.BENCH_NODE_USUAL_MS ?? 30)
const slowNode = bMs > 1.5 * usual ? ` (${(bMs / usual).toFixed(1)}x its usual ${usual} ms: ratios flatter dsh)` : ''
console.log(`node -e 0:             ${bMs.toFixed(0)} ms${cpu(bare)}, peak RSS ${bRss.toFixed(0)} MB${slowNode}`)
console.log(`dsh --profile headless: ${dMs.toFixed(0)} ms${cpu(dsh)}, peak RSS ${dRss.toFixed(0)} MB`)
console.log(`spawn -> first model request: ${firstOf(dsh)} (goal: under 120 ms)`)
console.log(`CPU ratio: ${TIME ? (median(dsh.map((r) => r.cpu)) / median(bare.map((r) => r.cpu))).toFixed(2) : '?'}x`)
console.log(
  `ratio: ${(dMs / bMs).toFixed(2)}x time, ${(dRss / bRss).toFixed(2)}x memory   (target: under 350 ms and 90 MB)`,
)
if (baseBin) {
  const xMs = median(base.map((r) => r.ms))
  const xRss = median(base.map((r) => r.rss)) / 2 ** 20
  console.log(
    `base (${process.env.BENCH_BASE}): ${xMs.toFixed(0)} ms${cpu(base)}, peak RSS ${xRss.toFixed(0)} MB, ratio ${(xMs / bMs).toFixed(2)}x time, first request ${firstOf(base)}`,
  )
}
