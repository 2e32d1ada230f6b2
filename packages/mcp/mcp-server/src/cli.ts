// `dsh mcp serve`: composes a profile like `dsh` does (default: headless), swaps its one-shot runner
// for the MCP server row and runs until the client leaves (stdio) or a signal (HTTP).
import {
  applyDotEnv,
  bootComposition,
  composeProfile,
  DshUserError,
  ensureProfile,
  runTree,
  type ResolvedRow,
} from '@dsh/app-boot'
import { resolveDshHome } from '@dsh/home-paths'
import { isLoopbackHost } from './auth.ts'
import type { Config } from './index.ts'
import { claimStdout } from '@dsh/stdout-claim'

export const SERVE_HELP = `Usage: dsh mcp serve [--transport stdio|http] [--port N] [--host ADDR] [--profile NAME]
                     [--patch FILE]... [--permission-mode MODE] [--no-agent-tool] [--no-auth]

Serves dsh's tools as a Model Context Protocol server, plus the tool dsh_agent, which runs a dsh
agent on a task (a fresh session each call) and returns its answer. Calls run under the profile's
permission mode and sandbox; an approval that would need a human is refused with a reason.
  --transport       stdio (default: frames on stdin/stdout, logs on stderr) or http (streamable HTTP)
  --port N          http: port to listen on (default 0: a free one, printed on stderr)
  --host ADDR       http: address to bind (default 127.0.0.1; anything else exposes the tools)
  --no-auth         http: serve without the bearer token (loopback hosts only). Otherwise every
                    request needs "Authorization: Bearer <token>": the value of DSH_MCP_SERVE_TOKEN
                    (environment or dsh's credentials), or a fresh token printed on stderr
  --profile NAME    profile whose tools are served (default: headless)
  --patch FILE      one more patch layer (repeatable)
  --permission-mode MODE  permission preset of every call (e.g. read-only, workspace-write)
  --no-agent-tool   do not offer dsh_agent
Example (Claude Code): claude mcp add dsh -- dsh mcp serve
`

export interface ServeOptions {
  argv: string[]
  installBase: string
  templatesDir: string
  env?: NodeJS.ProcessEnv
  cwd?: string
  stdout?: NodeJS.WritableStream
  stderr?: NodeJS.WritableStream
}

interface ServeArgs {
  profile: string
  patches: string[]
  config: Partial<Config>
}

export function parseServeArgs(argv: readonly string[]): ServeArgs | { help: true } | { error: string } {
  const out: ServeArgs = { profile: 'headless', patches: [], config: {} }
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]
    const eq = token.startsWith('--') ? token.indexOf('=') : -1
    const flag = eq > 0 ? token.slice(0, eq) : token
    const value = () => {
      const v = eq > 0 ? token.slice(eq + 1) : argv[++i]
      if (v === undefined || v === '' || (eq < 0 && v.startsWith('--'))) throw new Error(`${flag} needs a value`)
      return v
    }
    try {
      if (flag === '--help' || flag === '-h') return { help: true }
      else if (flag === '--transport' || flag === '-t') {
        const v = value()
        if (v !== 'stdio' && v !== 'http') return { error: `--transport must be stdio or http, not "${v}"` }
        out.config.transport = v
      } else if (flag === '--port') {
        const v = value()
        const n = Number(v)
        if (!/^\d+$/.test(v) || n > 65535) return { error: `--port must be a port number (0-65535), not "${v}"` }
        out.config.port = n
      } else if (flag === '--host') out.config.host = value()
      else if (flag === '--profile') out.profile = value()
      else if (flag === '--patch') out.patches.push(value())
      else if (flag === '--permission-mode') out.config.permissionMode = value()
      else if (flag === '--no-agent-tool') out.config.agentTool = false
      else if (flag === '--no-auth') out.config.auth = false
      else return { error: `unknown option ${JSON.stringify(token)}` }
    } catch (error) {
      return { error: (error as Error).message }
    }
  }
  if (out.config.transport !== 'http' && (out.config.port !== undefined || out.config.host !== undefined))
    return { error: '--port and --host need --transport http' }
  if (out.config.auth === false && out.config.transport !== 'http') return { error: '--no-auth needs --transport http' }
  if (out.config.auth === false && out.config.host !== undefined && !isLoopbackHost(out.config.host))
    return { error: `--no-auth is only allowed on a loopback --host, not "${out.config.host}"` }
  return out
}

const isRunner = (row: ResolvedRow) => row.row.id === 'headless-runner' || row.row.name === '@dsh/headless-runner'

export async function runMcpServe(opts: ServeOptions): Promise<number> {
  const env = opts.env ?? process.env
  const cwd = opts.cwd ?? process.cwd()
  const stdout = opts.stdout ?? process.stdout
  const stderr = opts.stderr ?? process.stderr
  const args = parseServeArgs(opts.argv)
  if ('help' in args) {
    stdout.write(SERVE_HELP)
    return 0
  }
  if ('error' in args) {
    stderr.write(`dsh mcp serve: ${args.error}\ndsh mcp serve: see "dsh mcp serve --help"\n`)
    return 2
  }
  // On stdio nothing but frames may reach stdout, from here on (boot messages included).
  if ((args.config.transport ?? 'stdio') === 'stdio') claimStdout()
  try {
    const home = resolveDshHome(env)
    applyDotEnv({ env, cwd, home })
    const { dir } = ensureProfile(home, args.profile, opts.templatesDir)
    const comp = composeProfile({
      home,
      profileName: args.profile,
      profileDir: dir,
      patches: args.patches,
      installBase: opts.installBase,
      cwd,
    })
    for (const w of comp.warnings) stderr.write(`dsh mcp serve: warning: ${w}\n`)
    const self = new URL(import.meta.url.endsWith('.ts') ? './index.ts' : './index.js', import.meta.url).href
    const row: ResolvedRow = {
      row: { id: 'mcp-server', name: '@dsh/mcp-server', config: { ...args.config, cwd } },
      layers: ['dsh mcp serve'],
      nameFrom: opts.installBase,
      url: self,
    }
    const rows = [...comp.rows.filter((r) => !isRunner(r)), row]
    return await runTree(
      () => bootComposition({ ...comp, rows }, { bootInfo: { profile: args.profile, home, cwd, appArgs: [] }, stderr }),
      { name: 'dsh mcp serve', stderr },
    )
  } catch (error) {
    if (error instanceof DshUserError) {
      const msg = error.message.replace(/^dsh: /, '')
      stderr.write(`dsh mcp serve: ${msg}\n`)
      return error.exitCode
    }
    throw error
  }
}
