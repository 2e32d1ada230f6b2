// @dsh/mcp-server: dsh as a Model Context Protocol server. Once the app is ready it serves the
// profile's tools (and `dsh_agent`) over stdio or streamable HTTP; see server.ts for the calls.
import { randomBytes, randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/tools'
import type {} from '@dsh/permission-presets'
import type {} from '@dsh/credentials'
import type {} from '@dsh/mcp-client'
import type {} from '@dsh/session'
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { bearerMatches, isLoopbackHost, isLoopbackOrigin } from './auth.ts'
import { claimedStdoutStream } from '@dsh/stdout-claim'
import { appExit } from '@dsh/surface-kit'
import { createServer, listTools } from './server.ts'

export const name = 'mcp-server'
export const inject = ['tools']

/** The credential `dsh mcp serve --transport http` reads its bearer token from, by default. */
export const TOKEN_CREDENTIAL = 'DSH_MCP_SERVE_TOKEN'

export interface Config {
  transport: 'stdio' | 'http'
  host: string
  port: number
  path: string
  agentTool: boolean
  auth: boolean
  tokenCredential: string
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
  auth: Schema.boolean()
    .default(true)
    .description('HTTP: require a bearer token on every request (off is allowed on a loopback host only).'),
  tokenCredential: Schema.string()
    .pattern(/^[A-Za-z_][A-Za-z0-9_]*$/)
    .default(TOKEN_CREDENTIAL)
    .description('HTTP: the credential holding the bearer token; unset, a fresh token is printed at start.'),
  maxSteps: Schema.natural().min(1).description('Steps one dsh_agent turn may take at most.'),
  permissionMode: Schema.string().description('Permission preset of every call (default: the profile default).'),
  cwd: Schema.string().default('').description('Working directory of calls; default the process working directory.'),
  waitForReady: Schema.boolean().default(true),
})

export { AGENT_TOOL, createServer, listTools, toCallResult, type ServerOptions } from './server.ts'
export { transcript, SESSION_TEMPLATE, SESSION_URI } from './catalog.ts'
/** The claimed stdout as a stream for the SDK's stdio transport (see @dsh/stdout-claim). */
export { claimedStdoutStream as claimStdout } from '@dsh/stdout-claim'
export { bearerMatches, isLoopbackHost, isLoopbackOrigin } from './auth.ts'

const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
  .version

export function apply(ctx: Context, config: Config): void {
  const say = (line: string) => void process.stderr.write(`dsh mcp serve: ${line}\n`)
  const exit = appExit(ctx)
  const opts = () => ({
    cwd: config.cwd || process.cwd(),
    agentTool: config.agentTool,
    maxSteps: config.maxSteps,
    version,
  })
  // Every connected server, told when the tool set changes: a plugin loaded or unloaded (a fiber
  // changed state), or an MCP client row's server connected, re-listed or went away. Compared by
  // what tools/list would answer, so nothing is sent for a change a client cannot see.
  const live = new Set<Server>()
  let listedAs: string | undefined
  let checking = false
  let disposed = false
  ctx.effect(() => () => {
    disposed = true
  })
  const checkTools = () => {
    if (checking || listedAs === undefined) return
    checking = true
    setImmediate(() => {
      checking = false
      if (disposed) return
      const now = JSON.stringify(listTools(ctx, config.agentTool))
      if (now === listedAs) return
      listedAs = now
      for (const server of live) void server.sendToolListChanged().catch(() => {})
    })
  }
  ctx.on('internal/status', checkTools)
  ctx.on('mcp/status', checkTools)
  // A session of this directory that finished its first turn is a new resource.
  ctx.on('session/event', (session, event) => {
    if (event.type !== 'turn/end' || event.data.turn !== 0 || session.cwd !== opts().cwd) return
    for (const server of live) void server.sendResourceListChanged().catch(() => {})
  })
  const track = (server: Server) => {
    live.add(server)
    const closed = server.onclose
    server.onclose = () => {
      live.delete(server)
      closed?.()
    }
  }

  const start = async () => {
    if (config.transport === 'http' && !config.auth && !isLoopbackHost(config.host)) {
      say(
        `--no-auth is only allowed on a loopback host, not "${config.host}": anyone who reaches the port could run the tools`,
      )
      return exit(2)
    }
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
    listedAs = JSON.stringify(listTools(ctx, config.agentTool))
    if (config.transport === 'stdio') await serveStdio()
    else await serveHttp()
  }

  const serveStdio = async () => {
    const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js')
    const server = createServer(ctx, opts())
    const transport = new StdioServerTransport(process.stdin, claimedStdoutStream())
    ctx.effect(() => () => void server.close().catch(() => {}))
    // The client closing its end of stdin is the end of the session, and of the process.
    process.stdin.once('end', () => exit(0))
    await server.connect(transport)
    track(server)
  }

  /** The bearer token of this run: the credential's value, else a fresh one printed on stderr. */
  const bearerToken = async (): Promise<string | undefined> => {
    if (!config.auth) return undefined
    const credentials = ctx.get('credentials')
    const set = credentials ? await credentials.get(config.tokenCredential) : process.env[config.tokenCredential]
    if (set !== undefined && set !== '') return set
    const fresh = randomBytes(24).toString('base64url')
    say(`no ${config.tokenCredential} is set; the bearer token of this run is ${fresh}`)
    return fresh
  }

  const serveHttp = async () => {
    const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js')
    const sessions = new Map<string, InstanceType<typeof StreamableHTTPServerTransport>>()
    let allowedHosts: string[] | undefined
    const token = await bearerToken()
    const reply = (res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers })
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }))
    }
    const realm = 'Bearer realm="dsh mcp serve"'
    const handle = async (req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? '/', 'http://localhost')
      if (url.pathname !== config.path) return reply(res, 404, `not found: the MCP endpoint is ${config.path}`)
      // A web page is not an MCP client: a request a browser sent from another origin is refused.
      const origin = req.headers.origin
      if (allowedHosts && origin !== undefined && !isLoopbackOrigin(origin))
        return reply(res, 403, `origin ${JSON.stringify(origin)} is not allowed`)
      if (token !== undefined && !bearerMatches(req.headers.authorization, token)) {
        const sent = req.headers.authorization !== undefined
        return reply(
          res,
          401,
          sent
            ? 'unauthorized: the bearer token is wrong'
            : `unauthorized: send "Authorization: Bearer <token>" with the value of ${config.tokenCredential} (or the token dsh mcp serve printed at start)`,
          { 'www-authenticate': sent ? `${realm}, error="invalid_token"` : realm },
        )
      }
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
        onsessioninitialized: (sid) => {
          sessions.set(sid, transport)
          track(server)
        },
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
    if (isLoopbackHost(config.host)) allowedHosts = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]
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
