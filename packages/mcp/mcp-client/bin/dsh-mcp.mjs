#!/usr/bin/env node
// @ts-check
// The `dsh-mcp` launcher (`dsh mcp ...`): loads the transpiled command (dist/) through the launcher
// every dsh bin shares (@dsh/app-boot/launch: DSH_DEV=1 runs the TypeScript sources instead).
import { fileURLToPath } from 'node:url'

const argv = process.argv.slice(2)
const { launch, runsSources } = await import('@dsh/app-boot/launch')
await launch({
  name: 'dsh mcp',
  bin: import.meta.url,
  argv,
  run: async () => {
    if (argv[0] === 'serve') {
      // `dsh mcp serve` is @dsh/mcp-server's (dsh as a server), reached by URL like the launcher
      // reaches this bin (scripts/pack.mjs follows such URLs into the package layout).
      const serve = runsSources()
        ? new URL('../../mcp-server/src/cli.ts', import.meta.url)
        : new URL('../../mcp-server/dist/cli.js', import.meta.url)
      /** @type {typeof import('../../mcp-server/src/cli.ts')} */
      const { runMcpServe } = await import(serve.href)
      return runMcpServe({
        argv: argv.slice(1),
        installBase: fileURLToPath(new URL('../../../boot/cli/package.json', import.meta.url)),
        templatesDir: fileURLToPath(new URL('../../../../profiles/', import.meta.url)),
      })
    }
    /** @type {typeof import('../src/cli.ts')} */
    const { runMcpCommand } = await import(runsSources() ? '../src/cli.ts' : '../dist/cli.js')
    return runMcpCommand({
      argv,
      // Bare row names fall back to the dsh installation, as for `dsh` itself (the monorepo layout).
      installBase: fileURLToPath(new URL('../../../boot/cli/package.json', import.meta.url)),
      templatesDir: fileURLToPath(new URL('../../../../profiles/', import.meta.url)),
    })
  },
})
