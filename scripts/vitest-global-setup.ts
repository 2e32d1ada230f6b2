// Vitest global setup: transpile the workspace to dist/ before any test runs, so tests that spawn
// the real bins (which load dist/) see the sources under test. Takes well under a second. Then
// build the browser client and the packages' browser halves (skipped when already up to date).
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export default function setup(): void {
  execFileSync(process.execPath, [fileURLToPath(new URL('./build.mjs', import.meta.url)), '--quiet'], { stdio: 'inherit' })
  execFileSync(process.execPath, [fileURLToPath(new URL('./build-client.mjs', import.meta.url)), '--quiet'], { stdio: 'inherit' })
}
