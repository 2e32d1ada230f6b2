#!/usr/bin/env node
// Start-up benchmark: `dsh --help` (answered by the launcher alone) and `dsh --profile headless
// --help` (a whole boot of the headless profile, whose runner prints the help) against a bare
// `node -e 0`, run alternately so all see the same machine state. Prints the medians and their
// ratios (targets: 3x and 4x). The headless line uses a temporary DSH_HOME, booted once before
// timing so the profile exists and the parsed-layer cache is warm, as after any first use.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const runs = Number(process.env.RUNS ?? 15)
const linked = fileURLToPath(new URL('../node_modules/.bin/dsh', import.meta.url))
const bin = fileURLToPath(new URL('../packages/boot/cli/bin/dsh.mjs', import.meta.url))
// node_modules/.bin/dsh is pnpm's shell shim; it is what `pnpm exec dsh` runs.
const dsh = existsSync(linked) ? [linked, ['--help']] : [process.execPath, [bin, '--help']]
const node = [process.execPath, ['-e', '0']]
const home = mkdtempSync(join(tmpdir(), 'dsh-bench-startup-'))
const headless = [process.execPath, [bin, '--profile', 'headless', '--help']]
const headlessEnv = { PATH: process.env.PATH, HOME: home, DSH_HOME: join(home, 'dsh') }

function time([cmd, args], env) {
  const start = process.hrtime.bigint()
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'], ...(env ? { env } : {}) })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}`)
  return Number(process.hrtime.bigint() - start) / 1e6
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

time(dsh), time(node), time(headless, headlessEnv) // warm the file cache, create the profile
const a = [], b = [], h = []
for (let i = 0; i < runs; i++) {
  a.push(time(dsh))
  b.push(time(node))
  h.push(time(headless, headlessEnv))
  b.push(time(node))
}
rmSync(home, { recursive: true, force: true })
const [ma, mb, mh] = [median(a), median(b), median(h)]
console.log(`dsh --help                   median ${ma.toFixed(1)} ms over ${runs} runs (${dsh[0]})`)
console.log(`dsh --profile headless --help median ${mh.toFixed(1)} ms over ${runs} runs`)
console.log(`node -e 0                    median ${mb.toFixed(1)} ms over ${b.length} runs`)
console.log(`ratio dsh --help             ${(ma / mb).toFixed(2)}x (target <= 3x)`)
console.log(`ratio --profile headless --help ${(mh / mb).toFixed(2)}x (target <= 4x)`)
