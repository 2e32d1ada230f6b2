#!/usr/bin/env node
// Start-up benchmark: `dsh --help` against a bare `node -e 0`, run alternately so both see the
// same machine state. Prints both medians and their ratio (target: ratio <= 3).
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const runs = Number(process.env.RUNS ?? 15)
const linked = fileURLToPath(new URL('../node_modules/.bin/dsh', import.meta.url))
const bin = fileURLToPath(new URL('../packages/boot/cli/bin/dsh.mjs', import.meta.url))
// node_modules/.bin/dsh is pnpm's shell shim; it is what `pnpm exec dsh` runs.
const dsh = existsSync(linked) ? [linked, ['--help']] : [process.execPath, [bin, '--help']]
const node = [process.execPath, ['-e', '0']]

function time([cmd, args]) {
  const start = process.hrtime.bigint()
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}`)
  return Number(process.hrtime.bigint() - start) / 1e6
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

time(dsh), time(node) // warm the file cache
const a = [], b = []
for (let i = 0; i < runs; i++) {
  a.push(time(dsh))
  b.push(time(node))
}
const [ma, mb] = [median(a), median(b)]
console.log(`dsh --help   median ${ma.toFixed(1)} ms over ${runs} runs (${dsh[0]})`)
console.log(`node -e 0    median ${mb.toFixed(1)} ms over ${runs} runs`)
console.log(`ratio        ${(ma / mb).toFixed(2)}x (target <= 3x)`)
