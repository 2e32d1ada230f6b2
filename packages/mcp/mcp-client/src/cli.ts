// `dsh mcp list`: which MCP servers a profile would start, and how each one is doing right now.
// `dsh mcp login NAME`: signs in to one remote server (OAuth): prints the authorization URL and
// waits for the browser to come back to the loopback callback; the tokens are stored.
// It composes the profile like `dsh` does, keeps only the rows the MCP client needs (home paths,
// settings, the subprocess provider and the mcp-client rows themselves), boots them, waits for
// every server's first attempt (each bounded by the row's connectTimeoutMs), prints, and stops.
import {
  bootComposition,
  composeProfile,
  DshUserError,
  ensureProfile,
  applyDotEnv,
  type ResolvedRow,
} from '@dsh/app-boot'
import { resolveDshHome } from '@dsh/home-paths'
import type { McpServerStatus } from './server.ts'
import type {} from './index.ts'

export interface McpCommandOptions {
  argv: string[]
  installBase: string
  templatesDir: string
  env?: NodeJS.ProcessEnv
  cwd?: string
  stdout?: NodeJS.WritableStream
  stderr?: NodeJS.WritableStream
}

export const MCP_HELP = `Usage: dsh mcp list [--profile NAME] [--patch FILE]... [--json]
       dsh mcp login NAME [--profile NAME] [--patch FILE]...

Starts the MCP servers the profile declares (its mcp-client rows, the project's .mcp.json and the
mcpServers settings), waits for each one's first connection attempt, prints their state and stops.
  --profile NAME   profile to read (default: headless)
  --patch FILE     one more patch layer (repeatable)
  --json           print the status list as JSON

login signs in to the remote server NAME (OAuth): it prints the address to open in a browser on
this machine, waits for the sign-in to come back, and stores the tokens with the credentials.
`

/** Row ids (of the base bundle) the client needs besides its own rows: the tools are registered, never offered. */
const SUPPORT_IDS = new Set([
  'home-paths',
  'cmdline',
  'settings',
  'credentials',
  'subprocess',
  'tools',
  'project-trust',
])

function parse(
  argv: string[],
): { profile: string; patches: string[]; json: boolean; login?: string } | { help: true } | { error: string } {
  const out: { profile: string; patches: string[]; json: boolean; login?: string } = {
    profile: 'headless',
    patches: [],
    json: false,
  }
  const [command, ...rest] = argv
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') return { help: true }
  if (command !== 'list' && command !== 'login')
    return { error: `unknown mcp command ${JSON.stringify(command)}; the commands are "list" and "login"` }
  if (command === 'login') {
    const name = rest.shift()
    if (name === undefined || name.startsWith('-')) return { error: 'login needs the name of a server' }
    out.login = name
  }
  for (let i = 0; i < rest.length; i++) {
    const token = rest[i]
    if (token === '--json' && out.login === undefined) out.json = true
    else if (token === '--help' || token === '-h') return { help: true }
    else if (token === '--profile' || token === '--patch') {
      const value = rest[++i]
      if (value === undefined || value.startsWith('--')) return { error: `${token} needs a value` }
      if (token === '--profile') out.profile = value
      else out.patches.push(value)
    } else return { error: `unknown option ${JSON.stringify(token)}` }
  }
  return out
}

const isClientRow = (row: ResolvedRow) =>
  row.row.name === '@dsh/mcp-client' || /\/mcp-client\/(src|dist)\/index\.[jt]s$/.test(row.url ?? '')

export function formatStatusTable(list: McpServerStatus[]): string {
  if (list.length === 0) return 'No MCP servers are configured (rows, .mcp.json or the mcpServers settings).\n'
  const rows = list.map((s) => [
    s.scope ? `${s.name} (${s.scope})` : s.name,
    s.source,
    s.transport ?? '-',
    s.state,
    String(s.tools.length),
    s.error ?? (s.state === 'connected' ? '' : s.origin),
  ])
  const head = ['NAME', 'SOURCE', 'TRANSPORT', 'STATE', 'TOOLS', 'DETAIL']
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)))
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd()
  return [line(head), ...rows.map(line)].join('\n') + '\n'
}

async function login(
  mcp: import('./index.ts').McpClient,
  name: string,
  stdout: NodeJS.WritableStream,
  stderr: NodeJS.WritableStream,
): Promise<number> {
  const before = mcp.get(name)
  if (!before) {
    const known = mcp.list().map((s) => s.name)
    stderr.write(`dsh mcp: no MCP server named "${name}"${known.length ? ` (known: ${known.join(', ')})` : ''}\n`)
    return 1
  }
  if (before.transport === 'stdio' || before.transport === undefined) {
    stderr.write(`dsh mcp: "${name}" is not a remote server (${before.state}); only http and sse servers sign in\n`)
    return 1
  }
  let shown = false
  const after = await mcp.login(name, (url) => {
    shown = true
    stdout.write(`Open this address in a browser on this machine to sign in to MCP server "${name}":\n${url}\n`)
  })
  if (after?.state === 'connected') {
    stdout.write(
      `Signed in to "${name}" (${after.tools.length} tools).${shown ? '' : ' No browser step was needed.'}\n`,
    )
    return 0
  }
  stderr.write(`dsh mcp: signing in to "${name}" failed: ${after?.error ?? after?.state ?? 'unknown'}\n`)
  return 1
}

export async function runMcpCommand(opts: McpCommandOptions): Promise<number> {
  const env = opts.env ?? process.env
  const cwd = opts.cwd ?? process.cwd()
  const stdout = opts.stdout ?? process.stdout
  const stderr = opts.stderr ?? process.stderr
  const args = parse(opts.argv)
  if ('help' in args) {
    stdout.write(MCP_HELP)
    return 0
  }
  if ('error' in args) {
    stderr.write(`dsh mcp: ${args.error}\ndsh mcp: see "dsh mcp --help"\n`)
    return 2
  }
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
    const clients = comp.rows.filter((row) => isClientRow(row) && !row.row.disabled)
    if (clients.length === 0) {
      stderr.write(`dsh mcp: the profile "${args.profile}" has no enabled @dsh/mcp-client row\n`)
      return 1
    }
    const rows = comp.rows.filter((row) => SUPPORT_IDS.has(row.row.id) || isClientRow(row))
    const tree = await bootComposition({ ...comp, rows }, { bootInfo: { home, cwd, appArgs: [] }, stderr })
    try {
      // A listing waits for every first attempt (each is bounded by connectTimeoutMs), not just startupWaitMs.
      await tree.ctx.mcp.ready(undefined, Number.POSITIVE_INFINITY)
      if (args.login !== undefined) return await login(tree.ctx.mcp, args.login, stdout, stderr)
      const list = tree.ctx.mcp.list()
      stdout.write(args.json ? JSON.stringify(list, null, 2) + '\n' : formatStatusTable(list))
      return 0
    } finally {
      await tree.dispose()
    }
  } catch (error) {
    if (error instanceof DshUserError) {
      const msg = error.message.startsWith('dsh: ') ? error.message : `dsh: ${error.message}`
      stderr.write(msg + '\n')
      return error.exitCode
    }
    throw error
  }
}
