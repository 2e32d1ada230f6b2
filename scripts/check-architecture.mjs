#!/usr/bin/env node
// @ts-check
// Checks the floors of the architecture (.dependency-cruiser.cjs: no arrow from a lower floor to a
// higher one, browser code imports only browser code, the wire contract and contract subpaths, no
// relative import into another package) over every package, bundle and cookbook recipe.
// Exits 0 when clean, 1 listing each violation as "rule: from -> to", 2 when the check cannot run.
// Known exceptions (named info-level rules in the config) are listed on every run and do not fail it.
// A second, textual check: no file outside @dsh/cordis-compat names a Cordis private field
// (`_error`, `_store`, `_initTask`, `Entry.key`, `events._hooks`, `symbols.original`, a fiber's
// numeric state); those reads live behind that package's functions and tests.
// Usage: node scripts/check-architecture.mjs [--root DIR] [--config FILE]
//   --root    the tree to check (default: this repository); it must hold packages/ and/or bundles/
//   --config  the rule file (default: <this repository>/.dependency-cruiser.cjs)
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const REPO = fileURLToPath(new URL('..', import.meta.url))
const TOP_DIRS = ['packages', 'bundles', 'examples']

/** The one package allowed to read Cordis' private fields (relative to the root). */
const COMPAT = 'packages/util/cordis-compat'

/** Cordis and plugin-loader private names, each with the pattern that finds a read of it. */
const PRIVATE_NAMES = [
  ['_error', /\._error\b/],
  ['_store', /\._store\b/],
  ['_initTask', /\b_initTask\b/],
  ['Entry.key', /\bEntry\.key\b/],
  ['events._hooks', /\._hooks\b/],
  ['symbols.original', /\bsymbols\.original\b/],
  ['FiberState', /\bFiberState\b|\bfiber\??\.state\s*(?:as number\)\s*)?[!=]==?\s*\d/],
]
const SKIP_DIRS = new Set(['node_modules', 'dist', 'dist-web', '.git'])
const CODE = /\.(?:[cm]?[jt]s|tsx)$/

/**
 * Every line outside @dsh/cordis-compat that names a Cordis private field, as
 * `cordis-internals-only-in-compat: <file>:<line> -> <name>`.
 * @param {string} root @param {string[]} dirs
 */
function privateNameReads(root, dirs) {
  /** @type {string[]} */
  const found = []
  /** @param {string} dir */
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) {
        if (!SKIP_DIRS.has(entry.name) && relative(root, path) !== COMPAT) walk(path)
      } else if (CODE.test(entry.name)) {
        const lines = readFileSync(path, 'utf8').split('\n')
        lines.forEach((text, i) => {
          for (const [name, pattern] of PRIVATE_NAMES) {
            if (pattern.test(text))
              found.push(`cordis-internals-only-in-compat: ${relative(root, path)}:${i + 1} -> ${name}`)
          }
        })
      }
    }
  }
  for (const dir of dirs) walk(join(root, dir))
  return found
}

/** @param {string[]} argv */
function parse(argv) {
  const out = { root: REPO, config: join(REPO, '.dependency-cruiser.cjs') }
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]
    const value = argv[i + 1]
    if ((flag === '--root' || flag === '--config') && value !== undefined && !value.startsWith('--')) {
      out[flag === '--root' ? 'root' : 'config'] = resolve(value)
      i++
    } else {
      throw new Error(
        `unknown or incomplete argument "${flag}" (usage: check-architecture.mjs [--root DIR] [--config FILE])`,
      )
    }
  }
  return out
}

function main() {
  let args
  try {
    args = parse(process.argv.slice(2))
  } catch (error) {
    process.stderr.write(`check-architecture: ${/** @type {Error} */ (error).message}\n`)
    return 2
  }
  if (!existsSync(args.config)) {
    process.stderr.write(`check-architecture: no rule file at ${args.config}\n`)
    return 2
  }
  const dirs = TOP_DIRS.filter((d) => existsSync(join(args.root, d)))
  if (dirs.length === 0) {
    process.stderr.write(`check-architecture: ${args.root} holds none of ${TOP_DIRS.join(', ')}\n`)
    return 2
  }
  // The package exports only its API, so its bin is found by path (the root devDependency).
  const bin = join(REPO, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs')
  if (!existsSync(bin)) {
    process.stderr.write(`check-architecture: dependency-cruiser is not installed (${bin}); run pnpm install\n`)
    return 2
  }
  const started = Date.now()
  // The rules name paths relative to the root, so the cruiser runs there.
  const run = spawnSync(process.execPath, [bin, '--config', args.config, '--output-type', 'json', ...dirs], {
    cwd: args.root,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  })
  if (run.error || !run.stdout) {
    process.stderr.write(
      `check-architecture: dependency-cruiser did not run: ${run.error?.message ?? run.stderr.trim()}\n`,
    )
    return 2
  }
  /** @type {{ summary: { violations: { rule: { name: string, severity: string }, from: string, to: string }[], totalCruised: number } }} */
  let result
  try {
    result = JSON.parse(run.stdout)
  } catch {
    process.stderr.write(
      `check-architecture: unreadable dependency-cruiser output: ${run.stderr.trim() || run.stdout.slice(0, 200)}\n`,
    )
    return 2
  }
  const { totalCruised } = result.summary
  const seconds = ((Date.now() - started) / 1000).toFixed(1)
  const line = (/** @type {{ rule: { name: string }, from: string, to: string }} */ v) =>
    `${v.rule.name}: ${v.from} -> ${v.to}`
  // Known exceptions are info-level rules: listed on every run, never a failure.
  const known = result.summary.violations
    .filter((v) => v.rule.severity === 'info')
    .map(line)
    .sort()
  const violations = result.summary.violations.filter((v) => v.rule.severity !== 'info')
  const reads = privateNameReads(args.root, dirs)
  if (known.length > 0) process.stdout.write(known.map((l) => `known exception ${l}`).join('\n') + '\n')
  if (violations.length === 0 && reads.length === 0) {
    process.stdout.write(
      `check-architecture: ${totalCruised} modules, no violation, ${known.length} known exception(s) (${seconds}s)\n`,
    )
    return 0
  }
  const lines = [...violations.map(line), ...reads].sort()
  process.stderr.write(
    `${lines.join('\n')}\ncheck-architecture: ${lines.length} violation(s) in ${totalCruised} modules (${seconds}s); the rules and their reasons are in .dependency-cruiser.cjs\n`,
  )
  return 1
}

process.exitCode = main()
