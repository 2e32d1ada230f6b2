#!/usr/bin/env node
// @ts-check
// The `dsh-acp` launcher. Loads the transpiled app (dist/, built by `pnpm install` and before
// tests); DSH_DEV=1 runs the TypeScript sources through tsx instead. Only protocol frames reach
// stdout; a crash is one line on stderr.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const argv = process.argv.slice(2)
if (argv.includes('--version')) {
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  process.stdout.write(`dsh-acp ${version}\n`)
} else {
  if (process.env.DSH_DEV && !process.execArgv.some((a) => a.includes('development'))) {
    const { spawnSync } = await import('node:child_process')
    const r = spawnSync(process.execPath, ['--conditions=development', '--import', 'tsx', ...process.execArgv, fileURLToPath(import.meta.url), ...argv], { stdio: 'inherit' })
    process.exit(r.status ?? 1)
  }
  const dev = process.execArgv.some((a) => a.includes('development'))
  /** @type {typeof import('../src/index.ts')} */
  const { runAcp } = await import(dev ? '../src/index.ts' : '../dist/index.js')
  runAcp({ argv }).then(
    (code) => {
      process.exitCode = code
      // A plugin that leaked a handle must not keep a finished server alive.
      setTimeout(() => process.exit(code), 2000).unref()
    },
    (error) => {
      process.stderr.write(`dsh-acp: internal error: ${error?.stack ?? error}\n`)
      process.exit(70)
    },
  )
}
