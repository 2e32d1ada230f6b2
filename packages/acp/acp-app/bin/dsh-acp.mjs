#!/usr/bin/env node
// @ts-check
// The `dsh-acp` launcher. Loads the transpiled app (dist/, built by `pnpm install` and before
// tests) through the launcher every dsh bin shares (@dsh/app-boot/launch: DSH_DEV=1 runs the
// TypeScript sources through tsx instead). Only protocol frames reach stdout; a crash is one line
// on stderr.
import { readFileSync } from 'node:fs'

const argv = process.argv.slice(2)
if (argv.includes('--version')) {
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  process.stdout.write(`dsh-acp ${version}\n`)
} else {
  const { launch, runsSources } = await import('@dsh/app-boot/launch')
  await launch({
    name: 'dsh-acp',
    bin: import.meta.url,
    argv,
    run: async () => {
      /** @type {typeof import('../src/index.ts')} */
      const { runAcp } = await import(runsSources() ? '../src/index.ts' : '../dist/index.js')
      return runAcp({ argv })
    },
  })
}
