#!/usr/bin/env node
// Harness gap per tool turn of the real one-shot (`dsh --profile headless`), unconfined
// (--permission-mode danger-full-access) and sandboxed (workspace-write, whatever runner the
// machine has). A timing proxy in front of @dsh/llm-mock-server stamps when each model response
// ends and when the next request arrives; that interval is one tool turn as the harness sees it
// (parse the stream, log, run bash, log, assemble and send the next request). The bare cost of the
// same command, spawned directly by a small node process in this same run (interleaved with the
// dsh runs), is subtracted: what is left is the harness gap. Prints medians and the ratio of each
// turn to the bare spawn.   BENCH_RUNS=5 BENCH_TURNS=20 node bench/turn-gap.mjs
// BENCH_PATCH=layer.yml adds `--patch layer.yml` to every dsh run (to measure a configuration).
// BENCH_BASE=/other/checkout measures that checkout's dsh too, interleaved (a before/after in one run).
// BENCH_SEGMENTS=1 also splits each turn inside the dsh process (a small --import hook stamps
// spawn(), the child's exit, each durable log write, each logged event and the HTTP request) and
// prints the median of every segment per variant: where a turn's time goes, without a profiler.
// BENCH_CPU=1 also reads the dsh process's own CPU time (user + system, all its threads) at each
// model request and prints the median CPU ms per turn per variant: steadier than wall time when
// the machine is loaded (it does not count waiting, and the command's own CPU is the child's).
import { spawn } from 'node:child_process'
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request as httpRequest, createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import { register } from 'tsx/esm/api'

register()
const { startMockServer } = await import('../packages/test-support/llm-mock-server/src/index.ts')

const RUNS = Number(process.env.BENCH_RUNS ?? 5)
const TURNS = Number(process.env.BENCH_TURNS ?? 20)
const COMMAND = process.env.BENCH_COMMAND ?? 'echo bench'
const bin = fileURLToPath(new URL('../packages/boot/cli/bin/dsh.mjs', import.meta.url))
const baseBin = process.env.BENCH_BASE
  ? join(resolve(process.env.BENCH_BASE), 'packages/boot/cli/bin/dsh.mjs')
  : undefined
const root = mkdtempSync(join(tmpdir(), 'dsh-bench-turn-gap-'))
const ws = join(root, 'ws')
mkdirSync(ws)

const steps = []
for (let i = 0; i < TURNS; i++)
  steps.push({ toolCalls: [{ name: 'bash', arguments: { command: COMMAND, description: `turn ${i}` } }] })
steps.push({ text: 'done' })

// One mock server per run (each run consumes the whole script); the proxy stamps every request.
let stamps = []
let upstream
const proxy = createServer((req, res) => {
  const arrived = performance.now()
  const fwd = httpRequest(new URL(req.url, upstream.url), { method: req.method, headers: req.headers }, (up) => {
    res.writeHead(up.statusCode ?? 502, up.headers)
    up.pipe(res)
    up.on('end', () => stamps.push({ arrived, ended: performance.now() }))
  })
  req.pipe(fwd)
})
await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve))
const proxyURL = `http://127.0.0.1:${proxy.address().port}/v1`

function exec(file, args, opts = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    child.on('error', reject)
    child.on('close', (code) =>
      code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${file} exited ${code}: ${out}`)),
    )
  })
}

const env = { PATH: process.env.PATH, HOME: root, DSH_HOME: join(root, 'home'), DEEPSEEK_API_KEY: 'sk-bench' }

// The segment hook: stamps in the dsh process, written as JSON at exit.
const SEGMENTS = process.env.BENCH_SEGMENTS === '1'
const hookFile = join(root, 'segments-hook.mjs')
const marksFile = join(root, 'segments.json')
if (SEGMENTS) {
  writeFileSync(
    hookFile,
    `import cp from 'node:child_process'
import http from 'node:http'
import { promises as fsp, writeFileSync } from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
const marks = []
const now = () => performance.now()
const spawn = cp.ChildProcess.prototype.spawn
cp.ChildProcess.prototype.spawn = function (...args) {
  marks.push(['spawn()', now()])
  const result = spawn.apply(this, args)
  marks.push(['spawned', now()])
  this.once('exit', () => marks.push(['child exit', now()]))
  return result
}
const request = http.request
http.request = function (...args) {
  const req = request.apply(this, args)
  marks.push(['http.request', now()])
  return req
}
syncBuiltinESMExports()
const probe = await fsp.open('/dev/null')
const handle = Object.getPrototypeOf(probe)
await probe.close()
const write = handle.write
handle.write = function (...args) {
  marks.push(['log write', now()])
  const done = write.apply(this, args)
  done.then(() => marks.push(['log written', now()]), () => {})
  return done
}
const out = process.stdout.write.bind(process.stdout)
process.stdout.write = (chunk, ...rest) => {
  const type = /"event":\\{"type":"([^"]+)"/.exec(String(chunk))?.[1]
  if (type && type !== 'assistant/chunk') marks.push([type, now()])
  return out(chunk, ...rest)
}
process.on('exit', () => writeFileSync(${JSON.stringify(marksFile)}, JSON.stringify(marks)))
`,
  )
}
const CPU = process.env.BENCH_CPU === '1'
const cpuHookFile = join(root, 'cpu-hook.mjs')
const cpuFile = join(root, 'cpu.json')
if (CPU) {
  writeFileSync(
    cpuHookFile,
    `import http from 'node:http'
import { syncBuiltinESMExports } from 'node:module'
import { writeFileSync } from 'node:fs'
const cpu = []
const request = http.request
http.request = function (...args) {
  const { user, system } = process.cpuUsage()
  cpu.push((user + system) / 1000)
  return request.apply(this, args)
}
syncBuiltinESMExports()
process.on('exit', () => writeFileSync(${JSON.stringify(cpuFile)}, JSON.stringify(cpu)))
`,
  )
}
const cpuTurns = {}
function collectCpu(name) {
  let cpu
  try {
    cpu = JSON.parse(readFileSync(cpuFile, 'utf8'))
  } catch {
    return
  }
  rmSync(cpuFile, { force: true })
  // Request k+1 minus request k is one turn; the first turn warms caches and is skipped.
  const list = (cpuTurns[name] ??= [])
  for (let k = 2; k < cpu.length; k++) list.push(cpu[k] - cpu[k - 1])
}
const segments = {}
function collectSegments(name) {
  let marks
  try {
    marks = JSON.parse(readFileSync(marksFile, 'utf8'))
  } catch {
    return
  }
  rmSync(marksFile, { force: true })
  const table = (segments[name] ??= new Map())
  for (let i = 1; i < marks.length; i++) {
    const key = `${marks[i - 1][0]} -> ${marks[i][0]}`
    if (!table.has(key)) table.set(key, [])
    table.get(key).push(marks[i][1] - marks[i - 1][1])
  }
}

async function dshRun(mode, dshBin = bin, name) {
  upstream = await startMockServer({ steps })
  stamps = []
  const patch = process.env.BENCH_PATCH ? ['--patch', process.env.BENCH_PATCH] : []
  // stream-json output carries the events the segment hook stamps; text mode otherwise.
  const hook = [...(SEGMENTS ? ['--import', hookFile] : []), ...(CPU ? ['--import', cpuHookFile] : [])]
  const output = SEGMENTS ? ['--output-format', 'stream-json'] : []
  await exec(
    process.execPath,
    [...hook, dshBin, '--profile', 'headless', ...patch, '--permission-mode', mode, ...output, 'run the bench'],
    { cwd: ws, env: { ...env, DEEPSEEK_BASE_URL: proxyURL } },
  )
  if (SEGMENTS && name) collectSegments(name)
  if (CPU) name ? collectCpu(name) : rmSync(cpuFile, { force: true })
  await upstream.close()
  // Turn k: end of response k to arrival of request k+1 (the first turn also warms caches; skipped).
  const turns = []
  for (let k = 1; k < stamps.length - 1; k++) turns.push(stamps[k + 1].arrived - stamps[k].ended)
  return turns
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

const modes = { unconfined: 'danger-full-access', sandboxed: 'workspace-write' }
if (baseBin) Object.assign(modes, { 'base unconfined': 'danger-full-access', 'base sandboxed': 'workspace-write' })
const samples = { bare: [], ...Object.fromEntries(Object.keys(modes).map((name) => [name, []])) }
await dshRun('danger-full-access') // warm-up: creates the profile, fills the file cache
if (baseBin) await dshRun('danger-full-access', baseBin)
for (let r = 0; r < RUNS; r++) {
  for (const [name, mode] of Object.entries(modes)) {
    for (let i = 0; i < TURNS; i++) samples.bare.push(await exec('bash', ['-c', COMMAND], { cwd: ws, detached: true }))
    samples[name].push(...(await dshRun(mode, name.startsWith('base ') ? baseBin : bin, name)))
  }
}
proxy.close()
if (SEGMENTS) {
  // Segments seen in (almost) every turn, in the order of the first run's turns.
  const names = Object.keys(segments)
  const keys = [...(segments[names[0]]?.keys() ?? [])].filter(
    (key) => segments[names[0]].get(key).length >= RUNS * (TURNS - 1),
  )
  console.log(`median ms per segment (in-process stamps; stream-json output)`)
  console.log(`${''.padEnd(36)} ${names.map((n) => n.padStart(16)).join(' ')}`)
  for (const key of keys)
    console.log(
      `${key.padEnd(36)} ${names.map((n) => (segments[n].has(key) ? median(segments[n].get(key)).toFixed(2) : '-').padStart(16)).join(' ')}`,
    )
}
if (CPU) {
  console.log(
    'dsh process CPU per turn (user + system, median ms): ' +
      Object.entries(cpuTurns)
        .map(([name, list]) => `${name} ${median(list).toFixed(2)}`)
        .join(', '),
  )
}
const bare = median(samples.bare)
console.log(
  `${RUNS} runs x ${TURNS} turns of bash \`${COMMAND}\` per mode (node ${process.version}); bare spawn: median ${bare.toFixed(2)} ms over ${samples.bare.length}`,
)
for (const name of Object.keys(modes)) {
  const turn = median(samples[name])
  console.log(
    `${name.padEnd(16)} turn median ${turn.toFixed(2)} ms  gap ${(turn - bare).toFixed(2)} ms  ratio ${(turn / bare).toFixed(2)}x bare`,
  )
}
process.exit(0)
