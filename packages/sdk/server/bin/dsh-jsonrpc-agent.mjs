#!/usr/bin/env node
// The `dsh-jsonrpc-agent` bin. Frames go to the real stdout; everything else any plugin prints to
// process.stdout is sent to stderr instead. Exits when stdin closes (the client went away). Starts
// through the launcher every dsh bin shares (@dsh/app-boot/launch): the transpiled dist/, or the
// TypeScript sources under DSH_DEV=1.
const STDIO_KEY = Symbol.for('@dsh/sdk-server/stdio')
const realWrite = process.stdout.write.bind(process.stdout)
globalThis[STDIO_KEY] = { input: process.stdin, output: { write: (text) => realWrite(text) } }
// A client that vanished makes stdout writes fail with EPIPE; the end of stdin stops us anyway.
process.stdout.on('error', () => {})
const args = process.argv.slice(2)
const dumping =
  args.includes('--dump-config') || args.includes('--help') || args.includes('-h') || args.includes('--version')
if (!dumping) process.stdout.write = process.stderr.write.bind(process.stderr)

const { launch, runsSources } = await import('@dsh/app-boot/launch')
await launch({
  name: 'dsh-jsonrpc-agent',
  bin: import.meta.url,
  argv: args,
  run: async () => {
    const { main } = await import(runsSources() ? '../src/main.ts' : '../dist/main.js')
    return main({ argv: args, stdout: dumping ? process.stdout : process.stderr })
  },
})
