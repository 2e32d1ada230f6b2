#!/usr/bin/env node
// Per-command overhead of sandboxed bash: N short commands (default 200) through ctx.shell with
// @dsh/bash-local (baseline) and with @dsh/bash-sandbox under each working runner (bwrap, Landlock
// through its spawn server, Landlock with a helper per command, Landlock's server with the hidden
// paths of a dsh home),
// in the same run and interleaved in blocks so machine load affects all alike. Prints the median
// and mean per command and the overhead against the baseline (target: under 15 ms).
// Then, per variant on its own, the CPU time per command: this process plus every child it reaped
// (a spawn server's commands roll up through the server once it ends), the server start included.
// The load average is printed: on a shared machine label the figures "loaded". So is a bare
// `node -e 0` beside the parts of a Landlock helper start (Node, koffi, the helper applying its
// rulesets before it execs `true`), which is what a helper per command pays; a `node -e 0` over
// 1.5x its quiet time (BENCH_NODE_QUIET_MS, default 26) flags the run as loaded.
//   node bench/sandbox.mjs            BENCH_RUNS=200 BENCH_COMMAND='true' BENCH_CPU_RUNS=100
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { homedir, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { register } from 'tsx/esm/api'

register()
const { Context } = await import('cordis')
const { default: LocalSubprocessService } = await import('../packages/subprocess/subprocess-local/src/index.ts')
const { default: BashLocalExecutor } = await import('../packages/shell/bash-local/src/index.ts')
const { default: SandboxedBashExecutor } = await import('../packages/shell/bash-sandbox/src/index.ts')
const { default: LocalSandbox } = await import('../packages/sandbox/sandbox-local/src/index.ts')
const { default: SandboxPolicyService } = await import('../packages/sandbox/sandbox-policy/src/index.ts')

const RUNS = Number(process.env.BENCH_RUNS ?? 200)
const COMMAND = process.env.BENCH_COMMAND ?? 'true'
const CPU_RUNS = Number(process.env.BENCH_CPU_RUNS ?? 100)
const BLOCK = 20
const ws = mkdtempSync(join(tmpdir(), 'dsh-bench-sandbox-'))
mkdirSync(`${ws}-home`)

/** Each variant: its sandbox-local config (none: plain bash-local). */
const VARIANTS = {
  baseline: undefined,
  bwrap: { runner: 'bwrap' },
  // Landlock with its spawn server (the default), and as a helper started per command.
  landlock: { runner: 'landlock' },
  'landlock-per-command': { runner: 'landlock', spawnServer: false },
  // Landlock through its server with the hidden paths of a real session: the server key holds the
  // modification time of each directory on the way to them, so a new entry there restarts it.
  // As a user's dsh home (~/.dsh: `~` and `/` in the key; nothing is written there) and as a home
  // under /tmp (tests, CI: `/tmp` in the key, which every temp file changes).
  'landlock-home-in-~': { runner: 'landlock', hidden: join(homedir(), '.dsh', '.credentials.yaml') },
  'landlock-home-in-/tmp': { runner: 'landlock', hidden: join(`${ws}-home`, '.credentials.yaml') },
}

async function shell(name) {
  const ctx = new Context()
  await ctx.plugin(LocalSubprocessService, {})
  const config = VARIANTS[name]
  if (!config) {
    await ctx.plugin(BashLocalExecutor, {})
  } else {
    const { runner, hidden, ...sandbox } = config
    await ctx.plugin(LocalSandbox, { runner, ...sandbox })
    const info = await ctx.sandbox.describe()
    if (info.runner !== runner) return { skipped: info.rejected.map((r) => `${r.runner}: ${r.reason}`).join('; ') }
    await ctx.plugin(SandboxPolicyService, { tempDirs: [], ...(hidden ? { hiddenPaths: [hidden] } : {}) })
    await ctx.plugin(SandboxedBashExecutor, {})
  }
  return { ctx }
}

async function once(ctx) {
  const t0 = performance.now()
  const spec = await ctx.shell.resolve({ command: COMMAND, cwd: ws })
  const result = await ctx.shell.run(spec)
  const ms = performance.now() - t0
  if (result.status !== 'exited' || result.exitCode !== 0)
    throw new Error(`bench command failed: ${JSON.stringify(result)}`)
  return ms
}

/** CPU ms of this process and of every child it has reaped (with their reaped descendants). */
function cpuMs() {
  const own = process.cpuUsage()
  // /proc/self/stat fields 16 and 17 (cutime, cstime) in clock ticks (100 per second on Linux).
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')
  return (own.user + own.system) / 1000 + (Number(fields[13]) + Number(fields[14])) * 10
}

/** Children of this process not yet reaped. */
function children() {
  const pids = new Set()
  for (const task of readdirSync('/proc/self/task'))
    for (const pid of readFileSync(`/proc/self/task/${task}/children`, 'utf8').trim().split(/\s+/))
      if (pid) pids.add(pid)
  return pids
}
/** Spawn servers (bwrap, unshare, the Landlock helper) not yet ended and reaped; tsx's esbuild service and the subprocess watchdogs stay. */
const lingering = () =>
  [...children()].filter((pid) => {
    try {
      return /bwrap|unshare|spawn-server|landlock-exec/.test(readFileSync(`/proc/${pid}/cmdline`, 'latin1'))
    } catch {
      return false
    }
  }).length

const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')
console.log(`load average at start: ${load()}`)
const variants = {}
for (const name of Object.keys(VARIANTS)) {
  const made = await shell(name)
  if (made.skipped) console.log(`${name}: skipped (${made.skipped})`)
  else variants[name] = { ctx: made.ctx, samples: [] }
}
for (const v of Object.values(variants)) for (let i = 0; i < 5; i++) await once(v.ctx) // warm-up
for (let done = 0; done < RUNS; done += BLOCK) {
  for (const v of Object.values(variants))
    for (let i = 0; i < Math.min(BLOCK, RUNS - done); i++) v.samples.push(await once(v.ctx))
}

// CPU per command: each variant alone in a fresh context, from before its first command (a spawn
// server's start included) until its servers have ended and been reaped.
for (const v of Object.values(variants)) await v.ctx.fiber.dispose()
while (lingering() > 0) await new Promise((r) => setTimeout(r, 10))
for (const [name, v] of Object.entries(variants)) {
  const t0 = cpuMs()
  const { ctx } = await shell(name)
  for (let i = 0; i < CPU_RUNS; i++) await once(ctx)
  await ctx.fiber.dispose()
  while (lingering() > 0) await new Promise((r) => setTimeout(r, 10))
  v.cpu = (cpuMs() - t0) / CPU_RUNS
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length
const base = variants.baseline
console.log(
  `${RUNS} x \`${COMMAND}\` per variant, CPU over ${CPU_RUNS} more (node ${process.version}, ${process.arch}; load average at end: ${load()})`,
)
for (const [name, v] of Object.entries(variants)) {
  const line = `${name.padEnd(20)} median ${median(v.samples).toFixed(2)} ms  mean ${mean(v.samples).toFixed(2)} ms  CPU ${v.cpu.toFixed(2)} ms`
  if (v === base) console.log(line)
  else {
    const overhead = median(v.samples) - median(base.samples)
    console.log(
      `${line}  overhead ${overhead.toFixed(2)} ms/command (median; ratio ${(median(v.samples) / median(base.samples)).toFixed(2)}x; CPU +${(v.cpu - base.cpu).toFixed(2)} ms)  ${overhead < 15 ? 'under' : 'OVER'} the 15 ms target`,
    )
  }
}

// Where a helper per command goes: each part started on its own, interleaved (wall median, CPU mean).
const helper = join(import.meta.dirname, '../packages/sandbox/sandbox-local/helper/landlock-exec.mjs')
const koffi = createRequire(helper).resolve('koffi')
const spec = Buffer.from(JSON.stringify({ writable: [ws], network: false })).toString('base64')
const PARTS = {
  'node -e 0': ['-e', '0'],
  'node + koffi + libc': ['-e', `require(${JSON.stringify(koffi)}).load('libc.so.6')`],
  'helper, rulesets, exec true': [helper, spec, '--', '/bin/true'],
}
const childCpu = () => {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')
  return (Number(fields[13]) + Number(fields[14])) * 10
}
const parts = Object.fromEntries(Object.keys(PARTS).map((name) => [name, { wall: [], cpu: 0 }]))
const PART_RUNS = Number(process.env.BENCH_PART_RUNS ?? 20)
for (let i = 0; i < PART_RUNS; i++)
  for (const [name, args] of Object.entries(PARTS)) {
    const c0 = childCpu()
    const t0 = performance.now()
    const run = spawnSync(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] })
    parts[name].wall.push(performance.now() - t0)
    parts[name].cpu += childCpu() - c0
    if (run.status !== 0) throw new Error(`${name} failed: ${run.stderr}`)
  }
console.log(`helper start, by part (${PART_RUNS} runs each; load average now: ${load()})`)
for (const [name, part] of Object.entries(parts))
  console.log(
    `${name.padEnd(28)} median ${median(part.wall).toFixed(2)} ms  CPU ${(part.cpu / PART_RUNS).toFixed(2)} ms`,
  )
const quiet = Number(process.env.BENCH_NODE_QUIET_MS ?? 26)
const bare = median(parts['node -e 0'].wall)
if (bare > 1.5 * quiet)
  console.log(
    `LOADED: node -e 0 took ${bare.toFixed(1)} ms, over 1.5x its quiet ${quiet} ms; compare CPU columns, not wall`,
  )
rmSync(ws, { recursive: true, force: true })
rmSync(`${ws}-home`, { recursive: true, force: true })
process.exit(0)
