#!/usr/bin/env node
// pnpm mutation <package-dir-or-name> [--force] [--mutate <glob-or-range>]... [--tests <glob>]...
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
// line range (`packages/x/y/src/a.ts:10-40`). `--tests` narrows the test files that may kill a mutant (a
// glob relative to the package, e.g. `test/units.test.ts`): where the other tests boot real servers,
// every mutant they cover would otherwise run them.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
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
const testGlobs = []
let force = false
for (let i = 0; i < args.length; i++) {
  const a = args[i]
  if (a === '--force') force = true
  else if (a === '--mutate') {
    if (i + 1 >= args.length) fail('--mutate needs a value (a glob or file:line-line)')
    extraMutate.push(args[++i])
  } else if (a === '--tests') {
    if (i + 1 >= args.length) fail('--tests needs a value (a glob relative to the package, e.g. test/units.test.ts)')
    testGlobs.push(args[++i])
  } else if (a === '--help' || a === '-h') {
    process.stdout.write(
      'usage: pnpm mutation <package-dir-or-name> [--force] [--mutate <glob-or-range>]... [--tests <glob>]...\n',
    )
    process.exit(0)
  } else if (a.startsWith('-')) fail(`unknown option ${a}`)
  else positional.push(a)
}
if (positional.length !== 1) fail('give exactly one package (a directory like packages/host/access-gate, or a name)')

/**
 * The part of a package that `pnpm mutation` mutates when no `--mutate` is given and the whole
 * `src/` is not the point. The ACP server's permission path: permission.ts whole (the option
 * table, the request, its answer and every failure), and blocks of other files, found by their
 * first lines so the ranges follow edits of the file. Each block ends at the first line after
 * its start that closes at the start's indentation.
 */
const FOCUS = {
  'packages/acp/acp': [
    { file: 'src/permission.ts' },
    {
      file: 'src/server.ts',
      blocks: [
        /^ {4}ctx\.inject\(\['approval'\]/, // the answerer registration
        /^ {2}private cancel\(/, // session/cancel aborts pending permission requests
      ],
    },
    { file: 'src/tool-calls.ts', blocks: [/^export async function tracking</] }, // which tool call a request belongs to
  ],
}

function focusRanges(pkgDir) {
  const focus = FOCUS[pkgDir]
  if (!focus) return undefined
  return focus.flatMap(({ file: name, blocks }) => {
    const file = join(pkgDir, name)
    if (!existsSync(join(root, file))) fail(`${file} does not exist (update FOCUS in scripts/mutation.mjs)`)
    if (!blocks) return [file]
    const lines = readFileSync(join(root, file), 'utf8').split('\n')
    return blocks.map((pattern) => {
      const start = lines.findIndex((line) => pattern.test(line))
      if (start < 0) fail(`${file}: no line matches ${pattern} (update FOCUS in scripts/mutation.mjs)`)
      const indent = /^ */.exec(lines[start])[0]
      const end = lines.findIndex(
        (line, i) => i > start && line.startsWith(`${indent}}`) && !line.startsWith(`${indent}} `),
      )
      if (end < 0) fail(`${file}: the block at line ${start + 1} does not close`)
      return `${file}:${start + 1}-${end + 1}`
    })
  })
}

const pkgDir = resolvePackage(positional[0])
if (!existsSync(join(root, pkgDir, 'src'))) fail(`${pkgDir} has no src/ directory to mutate`)
if (!existsSync(join(root, pkgDir, 'test'))) fail(`${pkgDir} has no test/ directory: nothing would kill a mutant`)

// Stryker resolves its files and the node_modules it links from the current directory.
process.chdir(root)
process.env.DSH_MUTATION_PACKAGE = pkgDir
if (testGlobs.length) process.env.DSH_MUTATION_TESTS = JSON.stringify(testGlobs)

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
  mutate: extraMutate.length
    ? extraMutate
    : (focusRanges(pkgDir) ?? [`${pkgDir}/src/**/*.ts`, `!${pkgDir}/src/**/*.d.ts`]),
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
  // A mutant that makes a test hang is a timeout (counted as detected), not a stuck run. Stryker
  // adds this to 1.5 times the tests' own measured time, so it is only slack for a loaded machine;
  // at 10 s the hanging mutants of one package (dozens in the tool registry) cost most of a run.
  timeoutMS: 4_000,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: join(reportDir, 'index.html') },
  jsonReporter: { fileName: join(reportDir, 'mutation.json') },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true, reportMutants: true },
  thresholds: { high: 90, low: 80, break: null },
  cleanTempDir: 'always',
})

const results = await stryker.runMutationTest()
// A mutant that "survived" without running a single test was never tested: after a timeout the
// vitest runner Stryker restarts can answer the next mutants with an empty run (seen on the tool
// registry: 30 mutants in a row after one timeout, each covered by 6 to 27 tests, none run). They
// are left out of the score and dropped from the incremental file, so the next run tests them.
const untested = results.filter(
  (m) => m.status === 'Survived' && m.testsCompleted === 0 && (m.coveredBy?.length ?? 0) > 0,
)
let detected = 0
let valid = 0
for (const m of results) {
  if (m.status === 'Killed' || m.status === 'Timeout') detected++
  if (m.status !== 'CompileError' && m.status !== 'RuntimeError' && m.status !== 'Ignored') valid++
}
valid -= untested.length
if (untested.length > 0) {
  const file = join(root, reportDir, 'stryker-incremental.json')
  try {
    const report = JSON.parse(readFileSync(file, 'utf8'))
    const drop = new Set(untested.map((m) => m.id))
    for (const entry of Object.values(report.files ?? {})) entry.mutants = entry.mutants.filter((m) => !drop.has(m.id))
    writeFileSync(file, JSON.stringify(report))
  } catch (error) {
    process.stderr.write(`pnpm mutation: could not drop the untested mutants from ${file}: ${error.message}\n`)
  }
  process.stdout.write(
    `mutation: ${untested.length} mutants ran no test (the runner lost its tests after a timeout); they are not in the score and the next run tests them\n`,
  )
}
const score = valid ? ((100 * detected) / valid).toFixed(2) : 'n/a'
process.stdout.write(
  `mutation: ${pkgDir}: ${detected}/${valid} mutants detected, score ${score} % (report: ${reportDir}/index.html)\n`,
)
