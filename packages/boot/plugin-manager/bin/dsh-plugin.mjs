#!/usr/bin/env node
// @ts-check
// The `dsh-plugin` launcher (`dsh plugin ...`): loads the transpiled command (dist/) through the
// launcher every dsh bin shares (@dsh/app-boot/launch: DSH_DEV=1 runs the TypeScript sources instead).
import { fileURLToPath } from 'node:url'

const argv = process.argv.slice(2)
const { launch, runsSources } = await import('@dsh/app-boot/launch')
await launch({
  name: 'dsh plugin',
  bin: import.meta.url,
  argv,
  run: async () => {
    /** @type {typeof import('../src/cli.ts')} */
    const { runPluginCommand } = await import(runsSources() ? '../src/cli.ts' : '../dist/cli.js')
    return runPluginCommand({
      argv,
      // Bare row names and bundles fall back to the dsh installation, as for `dsh` itself (the monorepo layout).
      installBase: fileURLToPath(new URL('../../cli/package.json', import.meta.url)),
      templatesDir: fileURLToPath(new URL('../../../../profiles/', import.meta.url)),
    })
  },
})
