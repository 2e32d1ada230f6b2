// Vitest global setup: transpile the workspace to dist/ before any test runs, so tests that spawn
// the real bins (which load dist/) see the sources under test. Takes well under a second. Then
// build the browser client and the packages' browser halves (skipped when already up to date).
//
// Vitest runs the global setup of the root project and of every project that has files in the
// run, one after another, and every project inherits this file (`extends: true`). Without the flag
// below a whole-suite run spawned both builds ~50 times (about 90 s before the first test, measured
// in a clean-clone CI run); the first call builds, the others return at once. The flag lives on
// globalThis because each project evaluates this module in its own module runner (module state is
// not shared), while all of them run in vitest's main process.
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const built = Symbol.for('dsh.vitest.globalSetup.built')

export default function setup(): void {
  const state = globalThis as { [built]?: boolean }
  if (state[built]) return
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
}
