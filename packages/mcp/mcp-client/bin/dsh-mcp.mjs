#!/usr/bin/env node
// @ts-check
// The `dsh-mcp` launcher (`dsh mcp ...`): loads the transpiled command (dist/); DSH_DEV=1 runs the
// TypeScript sources through tsx instead.
import { fileURLToPath } from 'node:url'

const argv = process.argv.slice(2)
if (process.env.DSH_DEV && !process.execArgv.some((a) => a.includes('development'))) {
  const { spawnSync } = await import('node:child_process')
  const r = spawnSync(process.execPath, ['--conditions=development', '--import', 'tsx', ...process.execArgv, fileURLToPath(import.meta.url), ...argv], { stdio: 'inherit' })
  process.exit(r.status ?? 1)
}
const dev = process.execArgv.some((a) => a.includes('development'))
/** @type {typeof import('../src/cli.ts')} */
const { runMcpCommand } = await import(dev ? '../src/cli.ts' : '../dist/cli.js')
runMcpCommand({
  argv,
  // Bare row names fall back to the dsh installation, as for `dsh` itself (the monorepo layout).
  installBase: fileURLToPath(new URL('../../../boot/cli/package.json', import.meta.url)),
  templatesDir: fileURLToPath(new URL('../../../../profiles/', import.meta.url)),
}).then(
  (code) => {
    process.exitCode = code
    setTimeout(() => process.exit(code), 2000).unref()
  },
  (error) => {
    process.stderr.write(`dsh mcp: internal error: ${error?.stack ?? error}\n`)
    process.exit(70)
  },
)
