import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import LongestFirstSequencer from './scripts/vitest-sequencer.ts'

// The suite runs as two projects over the same files (narrow a run with a path filter:
// `npx vitest run packages/sandbox/`, a package or a file):
//  - `shared` (most files): one worker process runs file after file (`isolate: false`), so the
//    modules a file imports stay loaded for the next. A fresh process per file cost ~0.25 s of CPU
//    each (500+ files) and left each worker idle about a third of the run (.agents/notes/ci-time.md).
//  - `isolated`: files that change process-wide state a later file would inherit (module mocks,
//    stubbed globals or environment, fake timers, spies, process listeners, the working directory),
//    found by reading each file (ISOLATE below), plus any file that says `// vitest: isolate`.
const root = fileURLToPath(new URL('.', import.meta.url))
const include = [
  'packages/*/*/test/**/*.test.ts',
  'bundles/*/test/**/*.test.ts',
  // The plugin cookbook of docs/plugins.md: every recipe is tested like a package.
  'examples/cookbook/*/test/**/*.test.ts',
]
const ISOLATE =
  /vitest: isolate|vi\.(mock|doMock|unmock|stubEnv|stubGlobal|useFakeTimers|setSystemTime|spyOn|resetModules)\b|process\.env(\.[A-Za-z_$][\w$]*|\[[^\]]+\])\s*(=(?!=)|\?\?=|\|\|=)|delete process\.env|process\.(chdir|umask|on|once|prependListener|setUncaughtExceptionCaptureCallback)\(|globalThis\.[A-Za-z_$][\w$]*\s*=(?!=)|Object\.defineProperty\(globalThis/

/** Every test file under `dir`/test (recursively). */
function testFiles(dir: string, out: string[] = []): string[] {
  let entries: import('node:fs').Dirent[]
  try {
    entries = readdirSync(dir, { withFileTypes: true })
  } catch {
    return out
  }
  for (const e of entries) {
    if (e.name === 'node_modules' || e.name === 'fixtures') continue
    const path = join(dir, e.name)
    if (e.isDirectory()) testFiles(path, out)
    else if (e.name.endsWith('.test.ts')) out.push(path)
  }
  return out
}
const subdirs = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== 'node_modules')
    .map((e) => join(dir, e.name))
const all = [
  ...subdirs(join(root, 'packages')).flatMap(subdirs),
  ...subdirs(join(root, 'bundles')),
  ...subdirs(join(root, 'examples/cookbook')),
].flatMap((dir) => testFiles(join(dir, 'test')))
const isolated = all.filter((file) => ISOLATE.test(readFileSync(file, 'utf8'))).map((file) => relative(root, file))

/** The worker count: 2, or DSH_TEST_WORKERS when it is a whole number from 1 to 16. */
function testWorkers(value: string | undefined): number {
  if (value === undefined || value === '') return 2
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1 || n > 16)
    throw new Error(`DSH_TEST_WORKERS must be a whole number from 1 to 16, not ${JSON.stringify(value)}`)
  return n
}

const common = {
  globalSetup: ['./scripts/vitest-global-setup.ts'],
  testTimeout: 20_000,
  hookTimeout: 20_000,
  // expect.poll gives up after 1 s by default: too short for a browser round trip on a loaded
  // two-core machine (a settings test failed in CI that way). Calls that pass their own keep it.
  expect: { poll: { timeout: 10_000 } },
}

export default defineConfig({
  test: {
    // Two cores on CI: keep the worker pool small and predictable. DSH_TEST_WORKERS=N changes it
    // (to measure another pool size on the whole suite).
    maxWorkers: testWorkers(process.env.DSH_TEST_WORKERS),
    reporters: ['default'],
    // Longest file first within each group, from scripts/test-durations.json (a clean clone has no
    // vitest cache to order by): the groups end on short files instead of one worker idling.
    // DSH_TEST_ORDER=vitest keeps vitest's own order (to compare the two).
    ...(process.env.DSH_TEST_ORDER === 'vitest' ? {} : { sequence: { sequencer: LongestFirstSequencer } }),
    projects: [
      // The isolated files first, as a group of their own: a worker that met an isolated file between
      // two shared ones would have to start a fresh process for the next shared file.
      { test: { ...common, name: 'isolated', include: isolated, isolate: true, sequence: { groupOrder: 0 } } },
      { test: { ...common, name: 'shared', include, exclude: isolated, isolate: false, sequence: { groupOrder: 1 } } },
    ],
  },
})
