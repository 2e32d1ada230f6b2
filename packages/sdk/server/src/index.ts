// @dsh/sdk-server: the `jsonrpc` plugin. Serves the dsh SDK protocol (newline-delimited JSON-RPC
// 2.0) on the process's stdio so out-of-process clients can drive agents; the bin
// `dsh-jsonrpc-agent` boots it inside a composition (see ./main.ts).
import { readFileSync } from 'node:fs'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { ExitCode } from '@dsh/surface-kit'
import { HarnessSdkJsonRpcServer, type ServerIo } from './server.ts'

export { HarnessSdkJsonRpcServer, type ServerIo, type ServerOptions } from './server.ts'

export const name = 'jsonrpc'
// The optional services (llm, agentDefaultModel, durableSessions, sessionPersistence, approval,
// loader) are read with ctx.get() when used.
export const inject = ['agents', 'sessions']

export interface Config {
  /** Start on `app/ready` (default), or at once when false. */
  waitForReady: boolean
  /** Most model requests one turn may take; default: the agent-loop row. */
  maxSteps?: number
}

export const Config: Schema<Config> = Schema.object({
  waitForReady: Schema.boolean().default(true).description('Start serving on app/ready (false: at once).'),
  maxSteps: Schema.natural().min(1).description('Most model requests per turn; default: the agent-loop row.'),
})

/**
 * The stdio the server speaks on. The bin stores the real stdin/stdout here before it points
 * `process.stdout.write` at stderr, so no plugin's stray print can corrupt the frame stream.
 */
export const STDIO_KEY = Symbol.for('@dsh/sdk-server/stdio')

export function serverStdio(): ServerIo {
  const held = (globalThis as Record<symbol, ServerIo | undefined>)[STDIO_KEY]
  return held ?? { input: process.stdin, output: process.stdout }
}

const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
  .version

export function apply(ctx: Context, config: Config): void {
  let server: HarnessSdkJsonRpcServer | undefined
  const start = () => {
    if (server) return
    server = new HarnessSdkJsonRpcServer(ctx, serverStdio(), {
      serverName: 'dsh-jsonrpc-agent',
      serverVersion: version,
      maxSteps: config.maxSteps,
    })
    server.start()
  }
  ctx.effect(() => () => void server?.stop(ExitCode.ok), 'sdk-server: stop')
  if (config.waitForReady) ctx.on('app/ready', start)
  else start()
}
