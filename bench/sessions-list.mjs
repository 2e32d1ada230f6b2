#!/usr/bin/env node
// Listing 1,000 stored sessions with titles and stats (`ctx.sessionProjections.list()`, what
// `dsh sessions` runs). Generates BENCH_SESSIONS (default 1000) one-turn sessions with the JSONL
// backend (zstd, the default), then measures in this process, alternately, BENCH_RUNS times:
//   baseline   ctx.sessionPersistence.list() alone (the stored summaries, no projections)
//   warm       the projection listing served from the checkpoint cache (goal: under 200 ms)
//   one dir    the same narrowed to one directory of the seven (`list(logs, {only})`, what
//              `dsh sessions` without --all runs)
// and once each: the cold listing that builds the cache (reads every log), and the listing after
// one session grew (reads one log tail). Prints medians, the warm/baseline ratio, and the number of
// logs each listing read (the warm one must read none). Also times `dsh sessions --all` end to end
// against `node -e 0` spawned in the same run, and `dsh sessions --all --output-format json` (the
// text table reads only the stored summaries; JSON projects every row through the cache).
// The store index (issue #42): `persistence.list()` from `<root>/index.jsonl` against the
// per-session path (`listIndex: false`, one summary.json per session: the listing before the
// index) on the same store, alternately, wall and CPU ms; end to end, `dsh sessions --all` with the
// index against the same bin with a `--patch` layer that turns it off. Prints the load average:
// figures taken at a load above the core count are loaded figures.
// The sessions live in seven directories `<root>/project-0..6` (created, so the bin can run in
// one): end to end, `dsh sessions` in project-0 (the listing a user runs: that directory's 50 most
// recent rows, the store reading that directory only) and `dsh sessions --all` (every row), each
// against BENCH_BASE's bin when given, alternately, wall and CPU ms.
//   env -u NODE_EXTRA_CA_CERTS -u NODE_OPTIONS node bench/sessions-list.mjs
//   BENCH_SESSIONS=10000 BENCH_RUNS=5 node bench/sessions-list.mjs
// BENCH_KEEP=DIR generates the store into DIR once and reuses it on later runs (not deleted).
import { register } from 'tsx/esm/api'
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

register()
const N = Number(process.env.BENCH_SESSIONS ?? 1000)
const RUNS = Number(process.env.BENCH_RUNS ?? 9)
const src = (p) => new URL(`../packages/${p}`, import.meta.url).href
const { Context } = await import('cordis')
const { default: SessionStore, Session } = await import(src('core/session/src/index.ts'))
const { default: Jsonl } = await import(src('session/session-persistence-jsonl/src/index.ts'))
const { default: Projections } = await import(src('session/session-projection/src/index.ts'))
const { default: Cache } = await import(src('session/session-projection-cache/src/index.ts'))
const { default: TitleService } = await import(src('session/session-title/src/index.ts'))
const Stats = await import(src('session/session-stats/src/index.ts'))

const keep = process.env.BENCH_KEEP
const root = keep ?? mkdtempSync(join(tmpdir(), 'dsh-bench-sessions-'))
const home = join(root, 'home')
const reuse = keep !== undefined && existsSync(join(home, 'sessions'))
if (keep) mkdirSync(root, { recursive: true })
const realRoot = realpathSync(root)
const project = (k) => join(realRoot, `project-${k}`)
for (let k = 0; k < 7; k++) mkdirSync(project(k), { recursive: true })
const ctx = new Context()
const mount = async (plugin, config) => await ctx.plugin(plugin, config)
await mount(SessionStore)
await mount(Jsonl, { root: join(home, 'sessions'), fsync: false, batchWindowMs: 1 })
await mount(Projections)
await mount(Cache, { path: join(home, 'storage', 'session_projcache.json') })
await mount(TitleService)
await mount(Stats, { prices: [{ model: 'bench-model', input: 0.27, output: 1.1 }] })
// The same store through the per-session path (no index): the baseline of the index figures.
const plain = new Context()
await plain.plugin(Jsonl, { root: join(home, 'sessions'), fsync: false, batchWindowMs: 1, listIndex: false })
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')
const loadStart = load()

function turn(session, i, n) {
  session.append('turn/start', { turn: n })
  session.append('step/start', { turn: n, step: 0 })
  session.append('request/header', { provider: 'bench', model: 'bench-model', system: 'You are a bench.', tools: [] })
  session.append('user/message', {
    content: [{ type: 'text', text: `Task ${i}.${n}: refactor module ${i} and keep the tests green` }],
    source: { kind: 'human' },
  })
  if (n === 0) session.append('session/title', { title: `Refactor module ${i}`, source: 'fallback' })
  session.append('assistant/chunk', { chunk: { kind: 'text-delta', text: 'Looking' } })
  session.append('assistant/message', {
    message: {
      role: 'assistant',
      content: [{ type: 'tool-call', callId: `c${n}`, name: 'read', arguments: '{"file_path":"a.ts"}' }],
    },
    usage: { input: 900, output: 40, cacheRead: 800, cacheWrite: 0, reasoning: 0 },
  })
  session.append('tool/call', { callId: `c${n}`, name: 'read', arguments: '{"file_path":"a.ts"}' })
  session.append('tool/result', {
    message: { role: 'tool', callId: `c${n}`, name: 'read', content: [{ type: 'text', text: 'x'.repeat(2000) }] },
  })
  session.append('step/end', { turn: n, step: 0 })
  session.append('turn/end', { turn: n, reason: 'completed' })
}

if (!reuse) process.stderr.write(`generating ${N} sessions in ${home}...\n`)
for (let i = 0; i < (reuse ? 0 : N); i++) {
  let t = 1_700_000_000_000 + i * 60_000
  const session = new Session({
    cwd: project(i % 7),
    id: `bench-${String(i).padStart(5, '0')}`,
    clock: () => (t += 50),
  })
  turn(session, i, 0)
  await ctx.sessionPersistence.create({ id: session.id, cwd: session.cwd, createdAt: 1_700_000_000_000 + i * 60_000 })
  await ctx.sessionPersistence.append(session.id, session.events)
  await ctx.sessionPersistence.close(session.id)
}
// The persistence summaries are cached beside each log; fill them once so the baseline is warm too.
await ctx.sessionPersistence.list()

const reads = { count: 0 }
const logs = {
  list: () => ctx.sessionPersistence.list(),
  readFrom: (id, seq) => {
    reads.count++
    return ctx.sessionPersistence.readFrom(id, seq)
  },
}
async function time(fn) {
  const start = performance.now()
  await fn()
  return performance.now() - start
}
const median = (all) => {
  const xs = all.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b)
  return xs[Math.floor(xs.length / 2)]
}
/** Wall and CPU (user + system, every thread of this process) milliseconds of one call. */
async function timeCpu(fn) {
  const cpu = process.cpuUsage()
  const start = performance.now()
  await fn()
  const wall = performance.now() - start
  const used = process.cpuUsage(cpu)
  return { wall, cpu: (used.user + used.system) / 1000 }
}

// The index against the per-session path, alternately, on the same store (both warm).
const indexed = []
const perSession = []
let listed = 0
for (let r = 0; r < RUNS; r++) {
  perSession.push(await timeCpu(() => plain.sessionPersistence.list()))
  indexed.push(await timeCpu(async () => (listed = (await ctx.sessionPersistence.list()).length)))
}
if (listed !== N) throw new Error(`the indexed listing gave ${listed} rows, not ${N}`)
// One directory of the seven (`list({cwd})`, what `dsh sessions` without --all asks the store for).
const oneDirStore = []
let oneDirListed = 0
for (let r = 0; r < RUNS; r++)
  oneDirStore.push(
    await timeCpu(async () => (oneDirListed = (await ctx.sessionPersistence.list({ cwd: project(0) })).length)),
  )
if (oneDirListed === 0)
  throw new Error(`no stored session of ${project(0)}: a store kept from an older bench? (delete ${root})`)
const indexBytes = statSyncBytes(join(home, 'sessions', 'index.jsonl'))
function statSyncBytes(path) {
  try {
    return readFileSync(path).length
  } catch {
    return 0
  }
}

reads.count = 0
const cold = await time(() => ctx.sessionProjections.list(logs))
const coldReads = reads.count
const base = []
const warm = []
let warmReads = 0
for (let r = 0; r < RUNS; r++) {
  base.push(await time(() => ctx.sessionPersistence.list()))
  reads.count = 0
  warm.push(await time(() => ctx.sessionProjections.list(logs)))
  warmReads += reads.count
}
const cacheRead = []
for (let r = 0; r < RUNS; r++) cacheRead.push(await time(() => ctx.sessionProjectionCache.readAll()))
// `dsh sessions` without --all: the rows of one directory of the seven (`only`), warm.
const oneDir = []
let oneDirRows = 0
for (let r = 0; r < RUNS; r++) {
  oneDir.push(
    await time(
      async () =>
        (oneDirRows = (await ctx.sessionProjections.list(logs, { only: (s) => s.cwd === project(0) })).length),
    ),
  )
}
const { statSync } = await import('node:fs')
const cacheBytes = statSync(ctx.sessionProjectionCache.path).size
// One session grows by a turn: the next listing reads only that log's tail.
const grown = 'bench-00042'
const loaded = await ctx.sessionPersistence.load(grown)
let t = loaded.events.at(-1).time
const s = new Session({ cwd: project(0), id: grown, clock: () => (t += 50), events: loaded.events })
turn(s, 42, 1)
await ctx.sessionPersistence.append(grown, s.slice(loaded.events.length))
await ctx.sessionPersistence.close(grown)
reads.count = 0
const after = await time(() => ctx.sessionProjections.list(logs))
const afterReads = reads.count
const report = ctx.sessionProjections.lastReport

const fmt = (ms) => (ms === undefined ? 'n/a' : `${ms.toFixed(1)} ms`)
const pair = (xs) => `${fmt(median(xs.map((x) => x.wall)))} wall, ${fmt(median(xs.map((x) => x.cpu)))} CPU`
console.log(`sessions: ${N}, runs: ${RUNS}, load average at start: ${loadStart} (${availableParallelism()} cores)`)
console.log(`persistence.list(), per-session path: ${pair(perSession)}`)
console.log(
  `persistence.list(), store index:      ${pair(indexed)}   index: ${(indexBytes / 1024).toFixed(0)} KiB   ratio: ${(median(indexed.map((x) => x.wall)) / median(perSession.map((x) => x.wall))).toFixed(2)}`,
)
console.log(
  `persistence.list({cwd}), one dir:     ${pair(oneDirStore)}   rows: ${oneDirListed} (dsh sessions without --all)`,
)
console.log(`cold listing (builds the cache):   ${fmt(cold)}   logs read: ${coldReads}`)
console.log(`baseline persistence.list():       ${fmt(median(base))}`)
console.log(
  `warm listing from the cache:       ${fmt(median(warm))}   logs read: ${warmReads}   ratio to baseline: ${(median(warm) / median(base)).toFixed(2)}`,
)
console.log(
  `  of which cache readAll():          ${fmt(median(cacheRead))}   document: ${(cacheBytes / 1024).toFixed(0)} KiB`,
)
console.log(
  `warm listing of one directory:     ${fmt(median(oneDir))}   rows: ${oneDirRows} (dsh sessions without --all)`,
)
console.log(
  `after one session grew:            ${fmt(after)}   logs read: ${afterReads} (refreshed ${report.refreshed}, cache ${report.cache})`,
)
console.log(`goal: warm under 200 ms reading no log -> ${median(warm) < 200 && warmReads === 0 ? 'met' : 'NOT met'}`)

// End to end: the real bin against the same home, beside node's own start-up. BENCH_BASE=/other/checkout
// also times that checkout's bin, alternately, on its own copy of the home (its cache is its own).
const bin = fileURLToPath(new URL('../packages/boot/cli/bin/dsh.mjs', import.meta.url))
/** CPU ms of the waited-for children of this process so far (Linux: /proc, 10 ms ticks). */
const childCpu = () => {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')
    return (Number(fields[13]) + Number(fields[14])) * 10
  } catch {
    return Number.NaN
  }
}
const cpuOf = []
const signalled = []
const spawnTime = (args, where = home, cwd = root) => {
  const env = { PATH: process.env.PATH, HOME: where, DSH_HOME: where }
  const cpu = childCpu()
  const start = performance.now()
  // The JSON listing of 10,000 rows is 7.5 MB: above spawnSync's default maxBuffer (1 MB) the child
  // is killed with SIGTERM, which is how the JSON runs of earlier 10,000-session runs "crashed".
  const options = { env, cwd, encoding: 'utf8', maxBuffer: 1 << 30 }
  let r = spawnSync(process.execPath, args, options)
  // A child killed by a signal (node processes on the shared machine were seen to segfault in
  // libgcc_s now and then, whatever they ran) is run again once, and counted.
  if (r.status === null && r.signal) {
    signalled.push(`${args.slice(1).join(' ')}: ${r.signal}`)
    r = spawnSync(process.execPath, args, options)
    if (r.status === null && r.signal) {
      // Twice: this sample is left out (NaN, skipped by the medians) rather than the whole run lost.
      signalled.push(`${args.slice(1).join(' ')}: ${r.signal} again, sample left out`)
      cpuOf.push([args, Number.NaN])
      return Number.NaN
    }
  }
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr}`)
  const wall = performance.now() - start
  cpuOf.push([args, childCpu() - cpu])
  return wall
}
const lastCpu = () => cpuOf.at(-1)[1]
// A layer that turns the index off: the same bin listing through the per-session path.
const noIndex = join(root, 'no-index.patch.yml')
writeFileSync(noIndex, '- id: session-persistence-jsonl\n  config:\n    listIndex: false\n')
const baseBin = process.env.BENCH_BASE ? join(process.env.BENCH_BASE, 'packages/boot/cli/bin/dsh.mjs') : undefined
const baseHome = join(root, 'home-base')
if (baseBin) {
  rmSync(baseHome, { recursive: true, force: true })
  cpSync(home, baseHome, { recursive: true })
  rmSync(join(baseHome, 'storage'), { recursive: true, force: true })
  spawnTime([baseBin, 'sessions', '--all'], baseHome)
}
// `dsh sessions` in project-0: the listing a user runs (this directory's most recent rows).
const here = project(0)
{
  const env = { PATH: process.env.PATH, HOME: home, DSH_HOME: home }
  const r = spawnSync(process.execPath, [bin, 'sessions'], { env, cwd: here, encoding: 'utf8', maxBuffer: 1 << 30 })
  const rows = r.stdout.split('\n').length - 2
  if (r.status !== 0 || rows < Math.min(50, Math.floor(N / 7)))
    throw new Error(`dsh sessions in ${here} listed ${rows} rows (exit ${r.status}): ${r.stderr}`)
}
spawnTime([bin, 'sessions', '--all']) // creates the profile and the cache entries of this process
spawnTime([bin, '--patch', noIndex, 'sessions', '--all'])
const nodeRuns = []
const dshRuns = []
const plainRuns = []
const jsonRuns = []
const baseRuns = []
const cpu = { node: [], dsh: [], plain: [], json: [], here: [], baseHere: [], base: [] }
const hereRuns = []
const baseHereRuns = []
spawnTime([bin, 'sessions', '--all', '--output-format', 'json']) // fills the projection cache
for (let r = 0; r < Math.min(RUNS, 5); r++) {
  nodeRuns.push(spawnTime(['-e', '0']))
  cpu.node.push(lastCpu())
  dshRuns.push(spawnTime([bin, 'sessions', '--all']))
  cpu.dsh.push(lastCpu())
  hereRuns.push(spawnTime([bin, 'sessions'], home, here))
  cpu.here.push(lastCpu())
  if (baseBin) {
    baseHereRuns.push(spawnTime([baseBin, 'sessions'], baseHome, here))
    cpu.baseHere.push(lastCpu())
  }
  // JSON output projects every row (titles and stats from the projection cache).
  jsonRuns.push(spawnTime([bin, 'sessions', '--all', '--output-format', 'json']))
  cpu.json.push(lastCpu())
  plainRuns.push(spawnTime([bin, '--patch', noIndex, 'sessions', '--all']))
  cpu.plain.push(lastCpu())
  if (baseBin) {
    baseRuns.push(spawnTime([baseBin, 'sessions', '--all'], baseHome))
    cpu.base.push(lastCpu())
  }
}
console.log(`node -e 0:                         ${fmt(median(nodeRuns))} wall, ${fmt(median(cpu.node))} CPU`)
console.log(
  `dsh sessions in project-0 (the default listing): ${fmt(median(hereRuns))} wall, ${fmt(median(cpu.here))} CPU   ratio to node -e 0: ${(median(hereRuns) / median(nodeRuns)).toFixed(1)}`,
)
console.log(
  `dsh sessions --all (${N} rows), index:         ${fmt(median(dshRuns))} wall, ${fmt(median(cpu.dsh))} CPU   ratio to node -e 0: ${(median(dshRuns) / median(nodeRuns)).toFixed(1)}`,
)
console.log(
  `dsh sessions --all --output-format json:      ${fmt(median(jsonRuns))} wall, ${fmt(median(cpu.json))} CPU   ratio to node -e 0: ${(median(jsonRuns) / median(nodeRuns)).toFixed(1)}`,
)
console.log(
  `dsh sessions --all (${N} rows), no index:      ${fmt(median(plainRuns))} wall, ${fmt(median(cpu.plain))} CPU   ratio to node -e 0: ${(median(plainRuns) / median(nodeRuns)).toFixed(1)}`,
)
if (signalled.length) console.log(`runs killed by a signal and run again: ${signalled.join('; ')}`)
console.log(
  `load average at the end: ${load()}${Number(load().split(' ')[0]) > availableParallelism() ? ' (loaded: figures are not quiet-machine figures)' : ''}`,
)
if (baseBin)
  console.log(
    `  BENCH_BASE's dsh sessions --all:  ${fmt(median(baseRuns))} wall, ${fmt(median(cpu.base))} CPU   ratio to node -e 0: ${(median(baseRuns) / median(nodeRuns)).toFixed(1)}\n` +
      `  BENCH_BASE's dsh sessions in project-0: ${fmt(median(baseHereRuns))} wall, ${fmt(median(cpu.baseHere))} CPU`,
  )

await ctx.fiber.dispose?.()
await plain.fiber.dispose?.()
if (!keep) rmSync(root, { recursive: true, force: true })
