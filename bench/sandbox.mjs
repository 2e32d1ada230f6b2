#!/usr/bin/env node
// Per-command overhead of sandboxed bash: N short commands (default 200) through ctx.shell with
// @dsh/bash-local (baseline) and with @dsh/bash-sandbox under each working runner (bwrap, Landlock),
// in the same run and interleaved in blocks so machine load affects all alike. Prints the median
// and mean per command and the overhead against the baseline (target: under 15 ms).
//   node bench/sandbox.mjs            BENCH_RUNS=200 BENCH_COMMAND='true'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
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
const BLOCK = 20
const ws = mkdtempSync(join(tmpdir(), 'dsh-bench-sandbox-'))

async function shell(runner) {
  const ctx = new Context()
  await ctx.plugin(LocalSubprocessService, {})
  if (runner === 'baseline') {
    await ctx.plugin(BashLocalExecutor, {})
  } else {
    await ctx.plugin(LocalSandbox, { runner })
    const info = await ctx.sandbox.describe()
    if (info.runner !== runner) return { skipped: info.rejected.map((r) => `${r.runner}: ${r.reason}`).join('; ') }
    await ctx.plugin(SandboxPolicyService, { tempDirs: [] })
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

const variants = {}
for (const name of ['baseline', 'bwrap', 'landlock']) {
  const made = await shell(name)
  if (made.skipped) console.log(`${name}: skipped (${made.skipped})`)
  else variants[name] = { ctx: made.ctx, samples: [] }
}
for (const v of Object.values(variants)) for (let i = 0; i < 5; i++) await once(v.ctx) // warm-up
for (let done = 0; done < RUNS; done += BLOCK) {
  for (const v of Object.values(variants))
    for (let i = 0; i < Math.min(BLOCK, RUNS - done); i++) v.samples.push(await once(v.ctx))
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length
const base = variants.baseline
console.log(`${RUNS} x \`${COMMAND}\` per variant (node ${process.version}, ${process.arch})`)
for (const [name, v] of Object.entries(variants)) {
  const line = `${name.padEnd(9)} median ${median(v.samples).toFixed(2)} ms  mean ${mean(v.samples).toFixed(2)} ms`
  if (v === base) console.log(line)
  else {
    const overhead = median(v.samples) - median(base.samples)
    console.log(
      `${line}  overhead ${overhead.toFixed(2)} ms/command (median; ratio ${(median(v.samples) / median(base.samples)).toFixed(2)}x)  ${overhead < 15 ? 'under' : 'OVER'} the 15 ms target`,
    )
  }
}
rmSync(ws, { recursive: true, force: true })
process.exit(0)
