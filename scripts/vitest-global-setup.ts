// Vitest global setup, in vitest's main process before any test file runs:
// 1. Transpile the workspace to dist/, so tests that spawn the real bins (which load dist/) see the
//    sources under test, and build the browser client and the packages' browser halves. Both are
//    skipped when up to date (about a second).
// 2. Start the test browser broker (@dsh/web-testkit's broker.ts): one Chromium for the whole run,
//    launched on the first browser test's request, so each browser test file connects instead of
//    launching its own (0.7-1 s each plus its close). Its URL reaches the test workers through the
//    environment, which they inherit from this process.
// 3. Name one stack code cache directory for the run (NODE_COMPILE_CACHE, which @dsh/app-boot uses
//    for the prelinked stack's V8 code cache when set): the bins the tests spawn start with fresh
//    dsh homes, and each would otherwise compile the whole stack and write its cache twice (~70 ms
//    of CPU per start, measured with bench/headless.mjs). The testkits pass it to the bins they
//    start. A caller's own NODE_COMPILE_CACHE is kept.
//
// The suite is one vitest project (vitest.config.ts), so this runs once per run. The flag below
// still guards a second call (vitest evaluates a global setup once per project that lists it).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  BROWSER_BROKER_ENV,
  BROWSER_LAUNCH_OPTIONS,
  startBrowserBroker,
} from '../packages/test-support/web-testkit/src/broker.ts'

const built = Symbol.for('dsh.vitest.globalSetup.built')

export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  const state = globalThis as { [built]?: boolean }
  if (state[built]) return undefined
  state[built] = true
  const started = performance.now()
  execFileSync(process.execPath, [fileURLToPath(new URL('./build.mjs', import.meta.url)), '--quiet'], {
    stdio: 'inherit',
  })
  execFileSync(process.execPath, [fileURLToPath(new URL('./build-client.mjs', import.meta.url)), '--quiet'], {
    stdio: 'inherit',
  })
  // Up to date this takes about a second; when it rebuilt, say how long the suite waited for it.
  const seconds = (performance.now() - started) / 1000
  if (seconds > 5)
    process.stderr.write(`vitest global setup: rebuilt dist/ and the client in ${seconds.toFixed(0)} s\n`)

  let compileCache: string | undefined
  if (!process.env.NODE_COMPILE_CACHE) {
    compileCache = mkdtempSync(join(tmpdir(), 'dsh-test-compile-'))
    process.env.NODE_COMPILE_CACHE = compileCache
  }
  const dropCompileCache = () => {
    if (!compileCache) return
    delete process.env.NODE_COMPILE_CACHE
    rmSync(compileCache, { recursive: true, force: true })
  }

  // A caller that set its own broker (or DSH_TEST_BROWSER_BROKER= to opt out) keeps it.
  if (process.env[BROWSER_BROKER_ENV] !== undefined) return async () => dropCompileCache()
  const broker = await startBrowserBroker(BROWSER_LAUNCH_OPTIONS)
  process.env[BROWSER_BROKER_ENV] = broker.url
  return async () => {
    delete process.env[BROWSER_BROKER_ENV]
    dropCompileCache()
    await broker.close()
  }
}
