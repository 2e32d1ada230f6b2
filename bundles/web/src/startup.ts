// The `dsh web` command line: parses --host/--port/--no-open/--trusted-host/--help from the app
// arguments before anything binds a port, then mounts the webserver and its access gate with the
// chosen address, prints the URL as soon as it listens behind its gate (the static client is served
// from then on; API calls wait for the whole tree) and opens a browser when one can show.
import { spawn } from 'node:child_process'
import { parseArgs } from 'node:util'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { fiberError, isFiberActive } from '@dsh/cordis-compat'
import type {} from '@dsh/cordis-compat/loader' // declares ctx.loader.exit(code)
import WebServer from '@dsh/webserver'
import * as accessGate from '@dsh/access-gate'
import type {} from '@dsh/brand' // declares the app/ready and app/stopping events
import { registerSurfaceContext } from './surface.ts'

export const name = 'web-startup'
export const inject = ['cmdlineArgs']

export interface Config {
  /** Bind address when --host is not given. */
  host: string
  /** Port when --port is not given (0: any free port). */
  port: number
  /** Open a browser (when there is a display and this is no SSH session) unless --no-open. */
  open: boolean
  /** Print the URL as one stdout line once the app is up. */
  printUrl: boolean
  /** Host names accepted besides loopback; --trusted-host adds to them. */
  trustedHosts: string[]
  /** Default body cap of the webserver's readJson. */
  maxBodyBytes: number
  /** Failed logins per client per window before 429 (non-loopback binds). */
  maxLoginFailures: number
  /**
   * Print the URL and serve the static client as soon as the server listens behind its gate,
   * before the rest of the app is up (API calls wait for it); false: only once every row is up.
   */
  earlyStatic: boolean
  /**
   * Tell the model it serves the dsh web page (the web-surface and harness-source prompt sections)
   * and give the commands it runs the page's URL as DSH_WEB_URL.
   */
  surfaceContext: boolean
}

export const Config: Schema<Config> = Schema.object({
  host: Schema.string().default('127.0.0.1'),
  port: Schema.natural().max(65535).default(3080),
  open: Schema.boolean().default(true),
  printUrl: Schema.boolean().default(true),
  trustedHosts: Schema.array(String).default([]),
  maxBodyBytes: Schema.natural()
    .min(1)
    .default(1024 * 1024),
  maxLoginFailures: Schema.natural().min(1).default(5),
  earlyStatic: Schema.boolean().default(true),
  surfaceContext: Schema.boolean().default(true),
})

export const HELP = `Usage: dsh web [options]        (or: dsh --profile web [options])

Serves the dsh web host: one local process that hosts sessions for a browser. Prints the URL
as one line on stdout once it is up and opens it in the default browser.

Options:
  --host HOST          address to listen on (default 127.0.0.1). Anything but loopback needs
                       DSH_ACCESS_SECRET (at least 16 characters); browsers then sign in with it
  --port PORT          TCP port (default 3080; 0 picks a free port)
  --no-open            do not open a browser (never opened over SSH or without a display)
  --trusted-host HOST  also accept requests addressed to HOST (a reverse proxy's or LAN name;
                       repeatable); other Host headers are refused
  -h, --help           show this help

Launcher flags, accepted anywhere before "--":
  --profile NAME       profile to boot (dsh web is --profile web)
  --patch FILE         one more patch layer over the profile (repeatable)
  --dump-config        print the composed rows as YAML and exit

Stop with Ctrl-C (SIGINT) or SIGTERM: the server stops accepting, open streams end, running
turns are cancelled and flushed, and dsh exits 0.
Exit status: 0 stopped, 1 could not start (port in use, missing secret), 2 usage error.
`

export class UsageError extends Error {}

export interface WebOptions {
  host?: string
  port?: number
  open: boolean
  trustedHosts: string[]
  help: boolean
}

/** Parses the app arguments of `dsh web`; throws UsageError with one line for a mistake. */
export function parseWebArgs(argv: readonly string[]): WebOptions {
  let values: Record<string, string | boolean | string[] | undefined>
  let positionals: string[]
  try {
    ;({ values, positionals } = parseArgs({
      args: [...argv],
      options: {
        host: { type: 'string' },
        port: { type: 'string' },
        'no-open': { type: 'boolean' },
        'trusted-host': { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    }))
  } catch (error) {
    // node's messages are long and mention parseArgs; keep the flag and the fact.
    const message = (error as Error).message
    const unknown = /Unknown option '([^']+)'/.exec(message)
    if (unknown) throw new UsageError(`unknown option ${unknown[1]}`)
    const missing = /Option '(?:-\w, )?(--[\w-]+) <value>' argument missing/.exec(message)
    if (missing) throw new UsageError(`${missing[1]} needs a value`)
    const ambiguous = /Option '(?:-\w, )?(--[\w-]+)' argument is ambiguous/.exec(message)
    if (ambiguous) throw new UsageError(`${ambiguous[1]}: write a value starting with '-' as ${ambiguous[1]}=VALUE`)
    throw new UsageError(message.split('\n')[0])
  }
  if (values.help) return { open: true, trustedHosts: [], help: true }
  if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}' (dsh web takes only options)`)
  const out: WebOptions = { open: !values['no-open'], trustedHosts: [], help: false }
  if (values.host !== undefined) {
    const host = String(values.host).trim()
    if (!host || /[\s/]/.test(host))
      throw new UsageError(`--host must be an address or host name, not '${values.host}'`)
    out.host = host.replace(/^\[(.*)\]$/, '$1')
  }
  if (values.port !== undefined) {
    const text = String(values.port)
    const port = Number(text)
    if (!/^\d+$/.test(text) || port > 65535)
      throw new UsageError(`--port must be a number from 0 to 65535, not '${text}'`)
    out.port = port
  }
  for (const host of (values['trusted-host'] as string[] | undefined) ?? []) {
    const h = host.trim()
    if (!h || /[\s/]/.test(h)) throw new UsageError(`--trusted-host must be a host name, not '${host}'`)
    out.trustedHosts.push(h)
  }
  return out
}

/** Why no browser is opened, or undefined when one should be. */
export function browserSkipReason(
  env: NodeJS.ProcessEnv,
  platform: NodeJS.Platform,
  open: boolean,
): string | undefined {
  if (!open) return '--no-open'
  if (env.SSH_CONNECTION || env.SSH_TTY) return 'an SSH session'
  if (platform !== 'darwin' && platform !== 'win32' && !env.DISPLAY && !env.WAYLAND_DISPLAY) return 'no display'
  return undefined
}

/** Starts the platform's URL opener, detached; every failure is ignored. */
export function openBrowser(url: string, platform: NodeJS.Platform = process.platform): void {
  const [command, args] =
    platform === 'darwin'
      ? ['open', [url]]
      : platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url]]
        : ['xdg-open', [url]]
  try {
    const child = spawn(command, args as string[], { detached: true, stdio: 'ignore', windowsHide: true })
    child.on('error', () => {})
    child.unref()
  } catch {
    // No opener: the URL is on stdout.
  }
}

/** The address a browser on this machine reaches: wildcard binds are shown as loopback. */
export function displayUrl(host: string, port: number): string {
  const shown = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host
  return `http://${shown}:${port}/`
}

/**
 * Mounts a child plugin and rejects when it failed. Under the dsh loader a failed fiber's
 * `await()` resolves (app-boot reports row failures itself), so the error is read off the fiber.
 */
async function mount(ctx: Context, plugin: unknown, config: unknown): Promise<void> {
  const fiber = ctx.plugin(plugin as never, config as never)
  await fiber
  const error = fiberError(fiber)
  if (error) throw error
  if (!isFiberActive(fiber)) throw new Error(`${(plugin as { name?: string }).name ?? 'plugin'} did not start`)
}

export async function apply(ctx: Context, config: Config) {
  const loader = ctx.get('loader')
  const stop = (code: number) => {
    if (loader) loader.exit(code)
    else throw new Error(`dsh web: exit ${code}`)
  }
  let options: WebOptions
  try {
    options = parseWebArgs(ctx.cmdlineArgs.argv)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    process.stderr.write(`dsh: ${error.message} (see: dsh web --help)\n`)
    return stop(2)
  }
  if (options.help) {
    process.stdout.write(HELP)
    return stop(0)
  }

  const host = options.host ?? config.host
  const port = options.port ?? config.port
  // Refuse an unprotected non-loopback bind before anything listens (the gate checks it again).
  const refusal = accessGate.checkBind(host)
  if (refusal) {
    process.stderr.write(`dsh: ${refusal}\n`)
    return stop(1)
  }
  let server: WebServer
  try {
    // Nothing is routed until the gate's guard is in place (waitForReady); requests arriving
    // before app/ready are held rather than refused.
    await mount(ctx, WebServer, {
      host,
      port,
      maxBodyBytes: config.maxBodyBytes,
      waitForReady: true,
      holdBeforeReady: true,
    })
    server = ctx.get('webServer') as WebServer
    await mount(ctx, accessGate, {
      trustedHosts: [...config.trustedHosts, ...options.trustedHosts],
      maxFailures: config.maxLoginFailures,
    })
  } catch (error) {
    const message = (error as Error)?.message ?? String(error)
    const hint = /already in use/.test(message) ? ' (pick another with --port, or --port 0 for any free one)' : ''
    process.stderr.write(`dsh: ${message}${hint}\n`)
    return stop(1)
  }

  // Damaged stored data (a malformed storage file set aside) is the user's to know about: one line
  // on stderr, whether or not the debug logger is on.
  ctx.on(
    'storage/warning' as never,
    ((warning: { domain?: string; message: string }) => {
      process.stderr.write(`dsh: warning: ${warning.message}\n`)
    }) as never,
  )

  // A web server stopped by SIGINT/SIGTERM has done its job: exit 0 (the shared runTree reports
  // the code on this StopInfo, which app/stopping listeners receive).
  ctx.on('app/stopping', (info) => {
    if (info.reason === 'signal') info.code = 0
  })

  // Start listening before the slow rows: the gate's guard is in place, so the static client (the
  // fallback, GET/HEAD) is served from now on, while API calls, streams and plugin files wait for
  // app/ready (their methods and the set of active rows are complete only then). The URL goes out
  // now, so a browser loads the page while the rest of the app comes up.
  if (config.earlyStatic) server.serveBeforeReady(isEarlyStatic)
  if (config.surfaceContext) registerSurfaceContext(ctx, displayUrl(host, server.port))
  const announce = () => {
    const url = displayUrl(host, server.port)
    if (config.printUrl) process.stdout.write(`${url}\n`)
    if (config.open && !browserSkipReason(process.env, process.platform, options.open)) openBrowser(url)
  }
  if (config.earlyStatic) announce()
  else ctx.on('app/ready' as never, announce as never)
}

/** Path prefixes whose routes may still be mounting before app/ready: never sent to the fallback early. */
const ROUTED_PREFIXES = ['/api', '/plugins', '/auth']

/**
 * Served before app/ready: GET/HEAD of the static client, i.e. a path that no route claims and
 * that lies outside the prefixes other rows route (an API path must not get index.html).
 */
export function isEarlyStatic(req: { method?: string }, info: { url: URL }, route: unknown): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false
  if (route !== undefined) return false
  const path = info.url.pathname
  return !ROUTED_PREFIXES.some((p) => path === p || path.startsWith(p + '/'))
}
