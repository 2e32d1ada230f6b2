#!/usr/bin/env node
// Start-up benchmark against a bare `node -e 0`, all run alternately so they see the same machine
// state, all with the same small environment (an inherited NODE_OPTIONS or NODE_EXTRA_CA_CERTS
// would slow one side only: loading a CA bundle alone costs node ~100 ms). Prints medians, ratios.
//   dsh --help                        answered by the launcher alone (target 3x)
//   dsh --profile headless --help     the one-shot profile's help (target 4x)
//   boot: ... --patch empty --help    a whole boot of the headless profile that prints the help
//                                     (an extra layer makes the launcher boot): what every run pays
// The headless lines use a temporary DSH_HOME, booted once before timing so the profile exists and
// the parsed-layer cache is warm, as after any first use.
// BENCH_BASE=/other/checkout adds the same dsh lines for that checkout (a before/after in one run).
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const runs = Number(process.env.RUNS ?? 15)
const home = mkdtempSync(join(tmpdir(), 'dsh-bench-startup-'))
const empty = join(home, 'empty.patch.yml')
writeFileSync(empty, '[]\n')
const env = { PATH: process.env.PATH, HOME: home, DSH_HOME: join(home, 'dsh') }
const node = { label: 'node -e 0', argv: [process.execPath, '-e', '0'] }

/** The three dsh lines for one checkout. */
function lines(root, tag) {
  const bin = join(root, 'packages/boot/cli/bin/dsh.mjs')
  // node_modules/.bin/dsh is pnpm's shell shim: what `pnpm exec dsh` (and a global link) runs.
  const shim = join(root, 'node_modules/.bin/dsh')
  return [
    {
      label: `${tag}dsh --help`,
      target: 3,
      argv: existsSync(shim) ? [shim, '--help'] : [process.execPath, bin, '--help'],
    },
    {
      label: `${tag}dsh --profile headless --help`,
      target: 4,
      argv: [process.execPath, bin, '--profile', 'headless', '--help'],
    },
    {
      label: `${tag}boot: --profile headless --patch empty --help`,
      argv: [process.execPath, bin, '--profile', 'headless', '--patch', empty, '--help'],
    },
  ]
}
const cases = [...lines(fileURLToPath(new URL('..', import.meta.url)), '')]
if (process.env.BENCH_BASE) cases.push(...lines(resolve(process.env.BENCH_BASE), 'base: '))

// With /usr/bin/time present each run's CPU time (user + system) is recorded too: on a loaded
// machine it moves far less than the wall time.
const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined
const timeOut = join(home, 'time.txt')
const cpuOf = new Map()

function time(argv) {
  const cmd = TIME ? [TIME, '-f', '%U %S', '-o', timeOut, ...argv] : argv
  const start = process.hrtime.bigint()
  const r = spawnSync(cmd[0], cmd.slice(1), { stdio: ['ignore', 'ignore', 'inherit'], env })
  if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}`)
  const ms = Number(process.hrtime.bigint() - start) / 1e6
  if (TIME) {
    const [user, sys] = readFileSync(timeOut, 'utf8').trim().split('\n').pop().split(' ').map(Number)
    const list = cpuOf.get(argv) ?? []
    list.push((user + sys) * 1000)
    cpuOf.set(argv, list)
  }
  return ms
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

// Warm the file cache, create the profile, fill the parsed-layer cache.
time(node.argv)
for (const c of cases) time(c.argv)
const bare = []
const samples = cases.map(() => [])
for (let i = 0; i < runs; i++) {
  cases.forEach((c, k) => {
    bare.push(time(node.argv))
    samples[k].push(time(c.argv))
  })
}
rmSync(home, { recursive: true, force: true })
const mb = median(bare)
const width = Math.max(...cases.map((c) => c.label.length))
const cpu = (argv) => (TIME ? `  CPU ${median(cpuOf.get(argv)).toFixed(0).padStart(4)} ms` : '')
console.log(
  `node ${process.version}, ${runs} runs per line; ${node.label} median ${mb.toFixed(1)} ms over ${bare.length} runs${cpu(node.argv)}`,
)
cases.forEach((c, k) => {
  const m = median(samples[k])
  console.log(
    `${c.label.padEnd(width)}  median ${m.toFixed(1).padStart(6)} ms  ${(m / mb).toFixed(2)}x node${cpu(c.argv)}${c.target ? ` (target <= ${c.target}x)` : ''}`,
  )
})
