#!/usr/bin/env node
// Rewrites every workspace package's `exports` so each `./src/X.ts` target becomes
// `{ development: './src/X.ts', default: './dist/X.js' }`. Idempotent; run after adding a package
// (scripts/new-package.mjs writes the conditional form already). `--check` only reports.
// Both modes also check `dsh.earlyRows` (scripts/prelink.mjs): each entry must be one of the
// package's export subpaths, since a misspelt one would silently leave that row late.
import { readdirSync, readFileSync, writeFileSync, existsSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const check = process.argv.includes('--check')
const manifests = []
for (const group of ['packages', 'bundles']) {
  const base = join(root, group)
  if (!existsSync(base)) continue
  for (const a of readdirSync(base)) {
    const dir = join(base, a)
    if (existsSync(join(dir, 'package.json'))) manifests.push(join(dir, 'package.json'))
    else if (statSync(dir).isDirectory()) {
      for (const b of readdirSync(dir))
        if (existsSync(join(dir, b, 'package.json'))) manifests.push(join(dir, b, 'package.json'))
    }
  }
}
const toDist = (target) => target.replace(/^\.\/src\//, './dist/').replace(/\.(m?)ts$/, '.$1js')
const convert = (value) => {
  if (typeof value === 'string') {
    return /^\.\/src\/.*\.m?ts$/.test(value) ? { development: value, default: toDist(value) } : value
  }
  return value
}
let stale = 0
let badEarly = 0
for (const file of manifests) {
  const text = readFileSync(file, 'utf8')
  const pkg = JSON.parse(text)
  const early = pkg.dsh?.earlyRows
  if (early !== undefined) {
    const subpaths = pkg.exports && typeof pkg.exports === 'object' ? Object.keys(pkg.exports) : []
    const wrong = Array.isArray(early)
      ? early.filter((entry) => typeof entry !== 'string' || !subpaths.includes(entry))
      : [early]
    for (const entry of wrong) {
      badEarly++
      console.error(
        `dist-exports: ${relative(root, file)} dsh.earlyRows lists ${JSON.stringify(entry)}, which is not one of its exports (${subpaths.join(', ') || 'none'})`,
      )
    }
  }
  if (!pkg.exports || typeof pkg.exports !== 'object') continue
  const next = {}
  for (const [key, value] of Object.entries(pkg.exports)) next[key] = convert(value)
  if (JSON.stringify(next) === JSON.stringify(pkg.exports)) continue
  stale++
  if (check) {
    console.error(`dist-exports: ${relative(root, file)} exports TypeScript without a dist target`)
    continue
  }
  pkg.exports = next
  writeFileSync(file, JSON.stringify(pkg, null, 2) + '\n')
}
if ((check && stale) || badEarly) process.exit(1)
if (!check) console.log(`dist-exports: ${stale} package.json files updated`)
