#!/usr/bin/env node
// The e2b world's own cost, against @dsh/e2b-standin and @dsh/llm-mock-server on loopback (so the
// figure is the wire's and the SDK's cost, not a network's):
//   1. per tool call: a one-shot `dsh -p` with STEPS bash calls (`true`), local world vs
//      `--world e2b`, alternating, BENCH_RUNS times each (default 3); the difference per call;
//   2. upload: the time `ctx.e2b.sandbox()` takes for a 10 MB project minus an empty one (pack,
//      one upload, remote unpack, baseline commit).
// Wall ms beside CPU ms (the dsh child's user + system from /usr/bin/time when present; for the
// in-process parts this process's CPU, which includes the stand-in serving the requests). On a
// shared machine the wall figures move with the load: label them as measured.
// Children get no NODE_OPTIONS / NODE_EXTRA_CA_CERTS from the caller's environment.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import { register } from 'tsx/esm/api'

register()
const { startMockServer } = await import('../packages/test-support/llm-mock-server/src/index.ts')
const { startE2bStandin } = await import('../packages/test-support/e2b-standin/src/index.ts')
const { Context } = await import('cordis')
const { default: E2bService } = await import('../packages/e2b/e2b/src/index.ts')

const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const STEPS = Number(process.env.BENCH_STEPS ?? 10)
const UPLOAD_MB = Number(process.env.BENCH_UPLOAD_MB ?? 10)
const bin = fileURLToPath(new URL('../packages/boot/cli/bin/dsh.mjs', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'dsh-bench-remote-'))
const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined
const standin = await startE2bStandin()

const baseEnv = { ...process.env }
delete baseEnv.NODE_OPTIONS
delete baseEnv.NODE_EXTRA_CA_CERTS

let n = 0
/** One `dsh -p` run with STEPS bash calls; wall ms here, CPU ms of the child from /usr/bin/time. */
async function run(world) {
  const cwd = join(root, `w${n++}`)
  mkdirSync(cwd)
  writeFileSync(join(cwd, '.gitignore'), 'home/\n')
  writeFileSync(join(cwd, 'README'), 'bench\n')
  const steps = []
  for (let i = 0; i < STEPS; i++)
    steps.push({ toolCalls: [{ name: 'bash', arguments: { command: 'true', description: 'noop' } }] })
  steps.push({ text: 'done' })
  const server = await startMockServer({ steps })
  const env = {
    ...baseEnv,
    DSH_HOME: join(cwd, 'home'),
    DEEPSEEK_BASE_URL: server.baseURL,
    DEEPSEEK_API_KEY: 'sk-bench',
    ...standin.env,
  }
  const args = ['-p', ...(world === 'e2b' ? ['--world', 'e2b'] : []), 'bench']
  const timeOut = join(cwd, 'time.txt')
  const argv = TIME
    ? [TIME, '-f', '%U %S', '-o', timeOut, process.execPath, bin, ...args]
    : [process.execPath, bin, ...args]
  const hostCpu = process.cpuUsage()
  const t0 = performance.now()
  const result = await new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let err = ''
    child.stderr.on('data', (d) => (err += d))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${world}: exit ${code}: ${err}`))))
  })
  const ms = performance.now() - t0
  const host = process.cpuUsage(hostCpu)
  await server.close()
  void result
  const cpu = TIME
    ? readFileSync(timeOut, 'utf8')
        .trim()
        .split('\n')
        .pop()
        .split(' ')
        .map(Number)
        .reduce((a, b) => a + b, 0) * 1000
    : Number.NaN
  // This process served the mock model (and, in the e2b world, the stand-in's requests).
  return { ms, cpu, hostCpu: (host.user + host.system) / 1000 }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const local = []
const remote = []
await run('local') // warm-up: profile, caches, the sandbox probe
await run('e2b')
for (let i = 0; i < RUNS; i++) {
  local.push(await run('local'))
  remote.push(await run('e2b'))
}
const fmt = (rs) =>
  `wall ${median(rs.map((r) => r.ms)).toFixed(0)} ms, dsh CPU ${median(rs.map((r) => r.cpu)).toFixed(0)} ms, bench-process CPU ${median(rs.map((r) => r.hostCpu)).toFixed(0)} ms`
console.log(`per tool call: ${RUNS} runs each of one task with ${STEPS} bash calls (mock model, stand-in on loopback)`)
console.log(`  local world: ${fmt(local)}`)
console.log(`  e2b world:   ${fmt(remote)}   (includes one sandbox create + upload + kill)`)
const per = (median(remote.map((r) => r.ms)) - median(local.map((r) => r.ms))) / STEPS
const perCpu = (median(remote.map((r) => r.cpu)) - median(local.map((r) => r.cpu))) / STEPS
console.log(
  `  difference per bash call (create/kill amortised in it): wall ${per.toFixed(1)} ms, dsh CPU ${perCpu.toFixed(1)} ms`,
)

// ---- upload of a project ---------------------------------------------------------------------
/** A project of `mb` MB: 100 KB files of base64 text (compressible like source, not like zeros). */
function project(mb) {
  const dir = join(root, `project-${mb}`)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, '.gitignore'), 'node_modules/\n')
  const files = Math.round((mb * 1024 * 1024) / (100 * 1024))
  for (let i = 0; i < files; i++) {
    mkdirSync(join(dir, `src${i % 10}`), { recursive: true })
    writeFileSync(join(dir, `src${i % 10}`, `file${i}.txt`), randomBytes(75 * 1024).toString('base64'))
  }
  return dir
}

async function sandboxFor(dir) {
  const ctx = new Context()
  const fiber = ctx.plugin(E2bService, {
    apiUrl: standin.url,
    sandboxUrl: standin.url,
    cwd: '/work/project',
    upload: { enabled: true, from: dir, maxBytes: 200 << 20, exclude: [] },
    patch: { enabled: true },
  })
  await fiber
  await new Promise((resolve) => ctx.inject(['e2b'], () => resolve()))
  process.env.E2B_API_KEY = standin.apiKey
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await ctx.e2b.sandbox()
  const ms = performance.now() - t0
  const used = process.cpuUsage(cpu0)
  await fiber.dispose()
  return { ms, cpu: (used.user + used.system) / 1000 }
}

const empty = join(root, 'empty')
mkdirSync(empty)
const big = project(UPLOAD_MB)
await sandboxFor(empty) // warm-up
const emptyRuns = []
const bigRuns = []
for (let i = 0; i < RUNS; i++) {
  emptyRuns.push(await sandboxFor(empty))
  bigRuns.push(await sandboxFor(big))
}
const e = median(emptyRuns.map((r) => r.ms))
const b = median(bigRuns.map((r) => r.ms))
console.log(
  `upload: ${RUNS} sandboxes each, empty project vs ${UPLOAD_MB} MB (${Math.round((UPLOAD_MB * 1024) / 100)} files)`,
)
console.log(
  `  empty: wall ${e.toFixed(0)} ms, CPU ${median(emptyRuns.map((r) => r.cpu)).toFixed(0)} ms; ${UPLOAD_MB} MB: wall ${b.toFixed(0)} ms, CPU ${median(bigRuns.map((r) => r.cpu)).toFixed(0)} ms`,
)
console.log(
  `  upload of ${UPLOAD_MB} MB: ${(b - e).toFixed(0)} ms wall (CPU here covers packing and the stand-in's side)`,
)

await standin.close()
rmSync(root, { recursive: true, force: true })
