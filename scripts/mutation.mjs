#!/usr/bin/env node
// pnpm mutation <package-dir-or-name> [--force] [--mutate <glob-or-range>]...
//
// Runs Stryker (mutation testing) on one workspace package: every `src/**/*.ts` file of that package
// is mutated, and each mutant is tested by that package's own test files only, run with vitest
// (scripts/vitest.mutation.config.ts). Not part of CI: one package takes minutes to tens of minutes.
// Why this shape: .agents/notes/mutation-testing.md.
//
// The package may be named by its directory (`packages/interaction/user-approval`), its npm name
// (`@dsh/user-approval`) or its directory's last segment (`user-approval`).
// Reports (HTML, JSON, and the incremental file that lets a second run re-test only the mutants whose
// code or tests changed) go to reports/mutation/<family>-<name>/, which git ignores. `--force` re-runs
// every mutant even when the incremental file is there. `--mutate` narrows the run to some files or a
// line range (`packages/x/y/src/a.ts:10-40`).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')

function fail(message) {
  process.stderr.write(`pnpm mutation: ${message}\n`)
  process.exit(2)
}

function workspacePackages() {
  const out = []
  const base = join(root, 'packages')
  for (const family of readdirSync(base, { withFileTypes: true })) {
    if (!family.isDirectory()) continue
    for (const pkg of readdirSync(join(base, family.name), { withFileTypes: true })) {
      const dir = join(base, family.name, pkg.name)
      const manifest = join(dir, 'package.json')
      if (!pkg.isDirectory() || !existsSync(manifest)) continue
      let name
      try {
        name = JSON.parse(readFileSync(manifest, 'utf8')).name
      } catch {
        name = undefined
      }
      out.push({ dir: relative(root, dir), name, short: pkg.name })
    }
  }
  return out
}

function resolvePackage(arg) {
  const asDir = resolve(process.cwd(), arg)
  if (existsSync(join(asDir, 'package.json')) && statSync(asDir).isDirectory()) {
    const rel = relative(root, asDir)
    if (!/^packages\/[^/]+\/[^/]+$/.test(rel)) fail(`${arg} is not a package directory under packages/<family>/<name>`)
    return rel
  }
  const all = workspacePackages()
  const byName = all.filter((p) => p.name === arg || p.short === arg)
  if (byName.length === 1) return byName[0].dir
  if (byName.length > 1)
    fail(`${arg} names several packages (${byName.map((p) => p.dir).join(', ')}): pass the directory`)
  fail(`no workspace package named ${arg} (pass packages/<family>/<name>, @dsh/<name> or <name>)`)
}

const args = process.argv.slice(2)
const positional = []
const extraMutate = []
let force = false
for (let i = 0; i < args.length; i++) {
  const a = args[i]
  if (a === '--force') force = true
  else if (a === '--mutate') {
    if (i + 1 >= args.length) fail('--mutate needs a value (a glob or file:line-line)')
    extraMutate.push(args[++i])
  } else if (a === '--help' || a === '-h') {
    process.stdout.write('usage: pnpm mutation <package-dir-or-name> [--force] [--mutate <glob-or-range>]...\n')
    process.exit(0)
  } else if (a.startsWith('-')) fail(`unknown option ${a}`)
  else positional.push(a)
}
if (positional.length !== 1) fail('give exactly one package (a directory like packages/host/access-gate, or a name)')

const pkgDir = resolvePackage(positional[0])
if (!existsSync(join(root, pkgDir, 'src'))) fail(`${pkgDir} has no src/ directory to mutate`)
if (!existsSync(join(root, pkgDir, 'test'))) fail(`${pkgDir} has no test/ directory: nothing would kill a mutant`)

// Stryker resolves its files and the node_modules it links from the current directory.
process.chdir(root)
process.env.DSH_MUTATION_PACKAGE = pkgDir

const reportDir = join('reports', 'mutation', pkgDir.slice('packages/'.length).replace('/', '-'))
const { Stryker } = await import('@stryker-mutator/core')

const stryker = new Stryker({
  testRunner: 'vitest',
  // pnpm keeps the runner out of core's own node_modules, so name it by its resolved path.
  plugins: [
    fileURLToPath(import.meta.resolve('@stryker-mutator/vitest-runner')),
    join(root, 'scripts', 'stryker-ignorers.mjs'),
  ],
  // Config-schema documentation strings and log-only statements are not mutated (see that file).
  ignorers: ['DshDocText', 'DshLogCall'],
  vitest: {
    configFile: 'scripts/vitest.mutation.config.ts',
    // The config already narrows the run to this package's test files; `related` would also drop
    // tests that reach the source through the package's own name rather than a relative import.
    related: false,
  },
  mutate: extraMutate.length ? extraMutate : [`${pkgDir}/src/**/*.ts`, `!${pkgDir}/src/**/*.d.ts`],
  // Two cores shared with other work: one test process at a time.
  concurrency: 1,
  // Only the mutants whose code or covering tests changed since the last run are tested again.
  incremental: true,
  incrementalFile: join(reportDir, 'stryker-incremental.json'),
  force,
  // The copies of the tree that Stryker tests in: git-ignored, removed after a successful run.
  tempDirName: '.stryker-tmp',
  // Build output and browser bundles are regenerated from src and not needed by the unit tests.
  ignorePatterns: ['dist', '/prelinked', '/reports', '/tmp', 'coverage', '.vitest-cache'],
  coverageAnalysis: 'perTest',
  // A mutant that makes a test hang is a timeout (counted as detected), not a stuck run.
  timeoutMS: 10_000,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: join(reportDir, 'index.html') },
  jsonReporter: { fileName: join(reportDir, 'mutation.json') },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true, reportMutants: true },
  thresholds: { high: 90, low: 80, break: null },
  cleanTempDir: 'always',
})

const results = await stryker.runMutationTest()
let detected = 0
let valid = 0
for (const m of results) {
  if (m.status === 'Killed' || m.status === 'Timeout') detected++
  if (m.status !== 'CompileError' && m.status !== 'RuntimeError' && m.status !== 'Ignored') valid++
}
const score = valid ? ((100 * detected) / valid).toFixed(2) : 'n/a'
process.stdout.write(
  `mutation: ${pkgDir}: ${detected}/${valid} mutants detected, score ${score} % (report: ${reportDir}/index.html)\n`,
)
