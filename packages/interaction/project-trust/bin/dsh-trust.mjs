#!/usr/bin/env node
// @ts-check
// The `dsh-trust` launcher (`dsh trust ...`): loads the transpiled command (dist/) through the
// launcher every dsh bin shares (@dsh/app-boot/launch: DSH_DEV=1 runs the TypeScript sources).
import { fileURLToPath } from 'node:url'

const argv = process.argv.slice(2)
const { launch, runsSources } = await import('@dsh/app-boot/launch')
await launch({
  name: 'dsh trust',
  bin: import.meta.url,
  argv,
  run: async () => {
    /** @type {typeof import('../src/cli.ts')} */
    const { runTrustCommand } = await import(runsSources() ? '../src/cli.ts' : '../dist/cli.js')
    return runTrustCommand({
      argv,
      // Bare row names fall back to the dsh installation, as for `dsh` itself (the monorepo layout).
      installBase: fileURLToPath(new URL('../../../boot/cli/package.json', import.meta.url)),
      templatesDir: fileURLToPath(new URL('../../../../profiles/', import.meta.url)),
    })
  },
})
