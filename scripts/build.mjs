#!/usr/bin/env node
// Transpiles every workspace package's TypeScript sources (src/**/*.ts) to dist/**/*.js with
// esbuild, one file per source (no bundling), rewriting relative `.ts` specifiers to `.js`.
// Package exports map the `development` condition to src/ (vitest, DSH_DEV=1) and `default`
// to dist/, so a plain `node` launch never compiles TypeScript at start-up.
// Runs from the root `prepare` script (pnpm install) and before the tests.
import { readdirSync, statSync, mkdirSync, writeFileSync, readFileSync, rmSync, existsSync, renameSync } from 'node:fs'
import { basename, join, dirname, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { transform } from 'esbuild'

const root = fileURLToPath(new URL('..', import.meta.url))
const roots = []
for (const group of ['packages', 'bundles']) {
  const base = join(root, group)
  if (!existsSync(base)) continue
  for (const a of readdirSync(base)) {
    const dir = join(base, a)
    if (existsSync(join(dir, 'package.json'))) roots.push(dir)
    else if (statSync(dir).isDirectory()) {
      for (const b of readdirSync(dir)) if (existsSync(join(dir, b, 'package.json'))) roots.push(join(dir, b))
    }
  }
}

function* walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* walk(path)
    else if (/\.(m?ts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) yield path
  }
}

function* walkAll(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* walkAll(path)
    else yield path
  }
}

const rewrite = (code) =>
  code.replace(/((?:from|import)\s*\(?\s*['"])(\.{1,2}\/[^'"]+?)\.(m?)ts(['"])/g, (_, a, spec, m, q) => `${a}${spec}.${m}js${q}`)

const started = Date.now()
let files = 0
await Promise.all(
  roots.map(async (pkg) => {
    const src = join(pkg, 'src')
    if (!existsSync(src)) return
    const out = join(pkg, 'dist')
    // Never delete dist/ wholesale: other processes (parallel test runs) may be importing from it.
    // Unchanged files are left alone, changed ones replaced atomically, stale ones removed.
    const wanted = new Set()
    for (const file of walk(src)) {
      const code = readFileSync(file, 'utf8')
      let result
      try {
        result = await transform(code, { loader: 'ts', format: 'esm', target: 'node20', sourcefile: file, sourcemap: 'external' })
      } catch (error) {
        console.error(`build: ${relative(root, file)}: ${error.message.split('\n')[0]}`)
        process.exitCode = 1
        continue
      }
      const target = join(out, relative(src, file)).replace(/\.(m?)ts$/, '.$1js')
      wanted.add(target)
      // Linked (not inline) source maps: an inline map is read and parsed at every start-up for
      // nothing, since node only applies maps under --enable-source-maps.
      const code2 = `${rewrite(result.code)}//# sourceMappingURL=${basename(target)}.map\n`
      const mapFile = `${target}.map`
      wanted.add(mapFile)
      const map = result.map
      if (!existsSync(mapFile) || readFileSync(mapFile, 'utf8') !== map) {
        mkdirSync(dirname(target), { recursive: true })
        writeFileSync(`${mapFile}.${process.pid}.tmp`, map)
        renameSync(`${mapFile}.${process.pid}.tmp`, mapFile)
      }
      if (existsSync(target) && readFileSync(target, 'utf8') === code2) continue
      mkdirSync(dirname(target), { recursive: true })
      const temp = `${target}.${process.pid}.tmp`
      writeFileSync(temp, code2)
      renameSync(temp, target)
      files++
    }
    if (existsSync(out)) {
      for (const stale of walkAll(out)) if (!wanted.has(stale) && !stale.endsWith('.tmp')) rmSync(stale, { force: true })
    }
  }),
)
if (!process.argv.includes('--quiet')) console.log(`build: ${files} files written in ${roots.length} packages, ${Date.now() - started} ms`)
