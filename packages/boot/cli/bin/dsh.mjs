#!/usr/bin/env node
// @ts-check
// The `dsh` launcher. `--help` and `--version` are answered here with nothing but node:fs, so
// they start as fast as node itself; only a real boot registers tsx and loads the TypeScript
// sources of @dsh/app-boot (no build step).
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { launcherHelp, parseLauncherArgs } from '../src/args.mjs'

const pkgUrl = new URL('../package.json', import.meta.url)
const args = parseLauncherArgs(process.argv.slice(2))

if (args.action === 'help' || args.action === 'version') {
  const { version } = JSON.parse(readFileSync(pkgUrl, 'utf8'))
  process.stdout.write(args.action === 'help' ? launcherHelp(version) : `dsh ${version}\n`)
} else if (args.action === 'error') {
  process.stderr.write(`dsh: ${args.error}\ndsh: see "dsh --help"\n`)
  process.exitCode = 2
} else {
  const { register } = await import('tsx/esm/api')
  register()
  /** @type {typeof import('@dsh/app-boot')} */
  const { runApp } = await import('@dsh/app-boot')
  runApp({
    profile: args.profile,
    patches: args.patches,
    dumpConfig: args.dumpConfig,
    appArgs: args.appArgs,
    installBase: fileURLToPath(pkgUrl),
    templatesDir: fileURLToPath(new URL('../../../../profiles/', import.meta.url)),
  }).then(
    (code) => {
      process.exitCode = code
      // A plugin that leaked a handle must not keep a finished dsh alive.
      setTimeout(() => process.exit(code), 2000).unref()
    },
    (error) => {
      process.stderr.write(`dsh: internal error: ${error?.stack ?? error}\n`)
      process.exit(70)
    },
  )
}
