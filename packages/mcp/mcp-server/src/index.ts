// @dsh/mcp-server: dsh as a Model Context Protocol server. Once the app is ready it serves the
// profile's tools (and `dsh_agent`) over stdio or streamable HTTP; see server.ts for the calls.
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/tools'
import type {} from '@dsh/permission-presets'
import { claimStdout } from './stdio.ts'
import { createServer } from './server.ts'

export const name = 'mcp-server'
export const inject = ['tools']

export interface Config {
  transport: 'stdio' | 'http'
  host: string
  port: number
  path: string
  agentTool: boolean
  maxSteps?: number
  permissionMode?: string
  cwd: string
  waitForReady: boolean
}

export const Config: Schema<Config> = Schema.object({
  transport: Schema.union(['stdio', 'http'] as const).default('stdio'),
  host: Schema.string().default('127.0.0.1').description('HTTP: address to bind (loopback by default).'),
  port: Schema.natural().max(65535).default(0).description('HTTP: port; 0 picks a free one (printed on stderr).'),
  path: Schema.string().default('/mcp').description('HTTP: the endpoint path.'),
  agentTool: Schema.boolean().default(true).description('Offer the dsh_agent tool.'),
  maxSteps: Schema.natural().min(1).description('Steps one dsh_agent turn may take at most.'),
  permissionMode: Schema.string().description('Permission preset of every call (default: the profile default).'),
  cwd: Schema.string().default('').description('Working directory of calls; default the process working directory.'),
  waitForReady: Schema.boolean().default(true),
})

export { AGENT_TOOL, createServer, toCallResult, type ServerOptions } from './server.ts'
export { claimStdout } from './stdio.ts'

const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
  .version

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost'])

function isLoopbackOrigin(origin: string): boolean {
  try {
    return LOOPBACK.has(new URL(origin).hostname.replace(/^\[|\]$/g, ''))
  } catch {
    return false
  }
}

export function apply(ctx: Context, config: Config): void {
  const say = (line: string) => void process.stderr.write(`dsh mcp serve: ${line}\n`)
  const exit = (code: number) => {
    const loader = ctx.get('loader') as { exit?(code: number): void } | undefined
    if (loader?.exit) loader.exit(code)
    else process.exitCode = code
  }
  const opts = () => ({
    cwd: config.cwd || process.cwd(),
    agentTool: config.agentTool,
    maxSteps: config.maxSteps,
    version,
  })
  const start = async () => {
    if (config.permissionMode !== undefined) {
      const presets = ctx.get('permissionPresets')
      if (!presets) {
        say('--permission-mode needs the permission-presets row in the profile')
        return exit(2)
      }
      if (!presets.names().includes(config.permissionMode)) {
        say(`unknown --permission-mode "${config.permissionMode}"; valid: ${presets.names().join(', ')}`)
        return exit(2)
      }
      presets.setDefault(config.permissionMode)
    }
    if (config.transport === 'stdio') await serveStdio()
    else await serveHttp()
  }

  const serveStdio = async () => {
    const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js')
    const server = createServer(ctx, opts())
    const transport = new StdioServerTransport(process.stdin, claimStdout())
    ctx.effect(() => () => void server.close().catch(() => {}))
    // The client closing its end of stdin is the end of the session, and of the process.
    process.stdin.once('end', () => exit(0))
    await server.connect(transport)
  }

  const serveHttp = async () => {
    const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js')
    const sessions = new Map<string, InstanceType<typeof StreamableHTTPServerTransport>>()
    let allowedHosts: string[] | undefined
    const reply = (res: ServerResponse, status: number, message: string) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }))
    }
    const handle = async (req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? '/', 'http://localhost')
      if (url.pathname !== config.path) return reply(res, 404, `not found: the MCP endpoint is ${config.path}`)
      // A web page is not an MCP client: a request a browser sent from another origin is refused.
      const origin = req.headers.origin
      if (allowedHosts && origin !== undefined && !isLoopbackOrigin(origin))
        return reply(res, 403, `origin ${JSON.stringify(origin)} is not allowed`)
      const id = req.headers['mcp-session-id']
      if (typeof id === 'string') {
        const known = sessions.get(id)
        if (!known) return reply(res, 404, `unknown MCP session "${id}"; initialize a new one`)
        return known.handleRequest(req, res)
      }
      // No session yet: a fresh server and transport, kept only if this request initializes one.
      const server = createServer(ctx, opts())
      const transport: InstanceType<typeof StreamableHTTPServerTransport> = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => void sessions.set(sid, transport),
        ...(allowedHosts ? { enableDnsRebindingProtection: true, allowedHosts } : {}),
      })
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId)
      }
      await server.connect(transport)
      await transport.handleRequest(req, res)
      if (!transport.sessionId) await server.close().catch(() => {})
    }
    const http = createHttpServer((req, res) => {
      handle(req, res).catch((error) => {
        say(`request failed: ${(error as Error).message}`)
        if (!res.headersSent) reply(res, 500, 'internal error')
        else res.end()
      })
    })
    ctx.effect(() => () => {
      for (const t of sessions.values()) void t.close().catch(() => {})
      sessions.clear()
      http.closeAllConnections()
      http.close()
    })
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject)
      http.listen(config.port, config.host, () => resolve())
    }).catch((error: NodeJS.ErrnoException) => {
      say(`cannot listen on ${config.host}:${config.port}: ${error.code ?? error.message}`)
      exit(1)
      throw error
    })
    const port = (http.address() as AddressInfo).port
    // Bound to loopback: refuse requests whose Host names anything else (DNS rebinding).
    if (LOOPBACK.has(config.host)) allowedHosts = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]
    const host = config.host.includes(':') ? `[${config.host}]` : config.host
    say(`listening on http://${host}:${port}${config.path}`)
  }

  const run = () =>
    void start().catch((error) => {
      say(`failed: ${(error as Error)?.message ?? error}`)
      exit(1)
    })
  if (config.waitForReady) ctx.on('app/ready', run)
  else run()
}
