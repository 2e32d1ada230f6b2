// `dsh mcp list`: which MCP servers a profile would start, and how each one is doing right now.
// `dsh mcp get NAME`: one server in detail (its tools, prompt commands, resources).
// `dsh mcp add|remove`: writes a server to the user's settings or the project's .mcp.json, with
// Claude Code's arguments (`--transport`, `--scope`, `-e`, `--header`).
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
import { join } from 'node:path'
import { resolveDshHome } from '@dsh/home-paths'
import type { McpServerStatus } from './server.ts'
import type {} from './index.ts'
import type {} from '@dsh/settings'
import { parseAdd, parseNamed, readMcpJson, UsageError, writeMcpJson, type ConfigScope } from './cli-config.ts'
import { promptCommandName, promptUsage } from './prompts.ts'

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
       dsh mcp get NAME [--profile NAME] [--patch FILE]... [--json]
       dsh mcp add [--transport stdio|http|sse] [--scope user|project] [-e KEY=VALUE]... [--header 'Name: value']... NAME COMMAND_OR_URL [ARGS...]
       dsh mcp remove NAME [--scope user|project]
       dsh mcp login NAME [--profile NAME] [--patch FILE]...
       dsh mcp serve [--transport stdio|http] [--port N] ...   (dsh as an MCP server: "dsh mcp serve --help")

list starts the MCP servers the profile declares (its mcp-client rows, the project's .mcp.json and
the mcpServers settings), waits for each one's first connection attempt, prints their state and
stops; get does the same for one server and prints its tools, prompt commands and resources.
  --profile NAME   profile to read (default: headless)
  --patch FILE     one more patch layer (repeatable)
  --json           print the status as JSON

add writes a server: --scope user (the default) to the mcpServers section of $DSH_HOME/settings.yaml,
--scope project to the project's .mcp.json (it then starts only once you trust the new content:
dsh trust DIR). Words after the command (or after --) are the server's own arguments.
  -t, --transport  stdio (a command, the default), http (streamable HTTP) or sse
  -s, --scope      user or project
  -e, --env        KEY=VALUE for a stdio server's environment (repeatable)
  -H, --header     'Name: value' sent to an http or sse server (repeatable)
Examples:
  dsh mcp add fs npx -y @modelcontextprotocol/server-filesystem .
  dsh mcp add --transport http --header 'Authorization: Bearer \${TOKEN}' linear https://mcp.linear.app/mcp
  dsh mcp add --scope project -e DEBUG=1 tools -- node tools/server.js --verbose

remove deletes the server NAME from the scope that has it (--scope when both do).

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
    return {
      error: `unknown mcp command ${JSON.stringify(command)}; the commands are "list", "get", "add", "remove" and "login"`,
    }
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

/** `get NAME`: the server's status, what it runs, its tools, prompt commands and resources. */
export function formatServer(
  status: McpServerStatus,
  catalog: ReturnType<import('./index.ts').McpClient['catalog']>,
): string {
  const lines = [
    `${status.name}`,
    `  source:     ${status.source} (${status.origin})`,
    `  transport:  ${status.transport ?? '-'}`,
    `  state:      ${status.state}${status.error ? ` - ${status.error}` : ''}`,
    `  tools:      ${status.tools.length ? status.tools.join(', ') : '(none)'}`,
  ]
  if (status.skipped?.length)
    lines.push(`  skipped:    ${status.skipped.map((s) => `${s.tool} (${s.reason})`).join('; ')}`)
  const prompts = catalog?.prompts ?? []
  lines.push(
    `  prompts:    ${prompts.length ? '' : '(none)'}`,
    ...prompts.map((p) => {
      const usage = promptUsage(p)
      return `    /${promptCommandName(status.name, p.name)}${usage ? ` ${usage}` : ''}${p.description ? `  ${p.description}` : ''}`
    }),
  )
  const resources = catalog?.resources ?? []
  const templates = catalog?.templates ?? []
  lines.push(
    `  resources:  ${resources.length + templates.length ? '' : '(none)'}`,
    ...resources.map((r) => `    @${status.name}:${r.uri}  ${r.name}${r.mimeType ? ` (${r.mimeType})` : ''}`),
    ...templates.map((t) => `    @${status.name}:${t.uriTemplate}  ${t.name} (template)`),
  )
  return `${lines.join('\n')}\n`
}

interface IoOptions {
  env: NodeJS.ProcessEnv
  cwd: string
  stdout: NodeJS.WritableStream
  stderr: NodeJS.WritableStream
}

/** Boots only the settings rows of the profile (nothing is started) and hands `ctx.settings` to `work`. */
async function withSettings<T>(
  opts: McpCommandOptions,
  io: IoOptions,
  profile: string,
  patches: string[],
  work: (settings: import('@dsh/settings').SettingsService) => Promise<T>,
): Promise<T> {
  const home = resolveDshHome(io.env)
  const { dir } = ensureProfile(home, profile, opts.templatesDir)
  const comp = composeProfile({
    home,
    profileName: profile,
    profileDir: dir,
    patches,
    installBase: opts.installBase,
    cwd: io.cwd,
  })
  const rows = comp.rows.filter((row) => row.row.id === 'home-paths' || row.row.id === 'settings')
  if (!rows.some((row) => row.row.id === 'settings'))
    throw new DshUserError(
      `dsh mcp: the profile "${profile}" has no settings row, so the user settings cannot be written`,
    )
  const tree = await bootComposition(
    { ...comp, rows },
    { bootInfo: { home, cwd: io.cwd, appArgs: [] }, stderr: io.stderr },
  )
  try {
    return await work(tree.ctx.settings)
  } finally {
    await tree.dispose()
  }
}

const isRecordValue = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

async function addServer(opts: McpCommandOptions, io: IoOptions, words: string[]): Promise<number> {
  const add = parseAdd(words)
  const kind = add.transport === 'stdio' ? 'stdio' : add.transport
  if (add.scope === 'project') {
    const file = readMcpJson(io.cwd)
    if (add.name in file.servers)
      throw new Error(
        `${file.path} already has a server "${add.name}"; remove it first (dsh mcp remove ${add.name} --scope project)`,
      )
    writeMcpJson(file.path, { ...file.doc, mcpServers: { ...file.servers, [add.name]: add.entry } })
    io.stdout.write(
      `Added ${kind} MCP server "${add.name}" to ${file.path}.\nThe project's servers start once you trust its new content: dsh trust ${io.cwd}\n`,
    )
    return 0
  }
  return withSettings(opts, io, 'headless', [], async (settings) => {
    const current = settings.get('mcpServers')
    if (current !== undefined && !isRecordValue(current))
      throw new Error(
        `${settings.location}: "mcpServers" is not a mapping of servers; fix it first, nothing was written`,
      )
    if (current && add.name in current)
      throw new Error(
        `${settings.location} already has a server "${add.name}"; remove it first (dsh mcp remove ${add.name} --scope user)`,
      )
    await settings.update('mcpServers', { [add.name]: add.entry as never })
    io.stdout.write(`Added ${kind} MCP server "${add.name}" to the user settings (${settings.location}).\n`)
    return 0
  })
}

async function removeServer(opts: McpCommandOptions, io: IoOptions, words: string[]): Promise<number> {
  const args = parseNamed('remove', words)
  return withSettings(opts, io, args.profile ?? 'headless', args.patches, async (settings) => {
    const user = settings.get('mcpServers')
    const inUser = isRecordValue(user) && args.name in user
    let project: ReturnType<typeof readMcpJson> | undefined
    let projectProblem: string | undefined
    try {
      project = readMcpJson(io.cwd)
    } catch (error) {
      projectProblem = (error as Error).message
    }
    const inProject = project !== undefined && args.name in project.servers
    let scope: ConfigScope | undefined = args.scope
    if (scope === undefined) {
      if (inUser && inProject)
        throw new UsageError(
          `"${args.name}" is in the user settings and in ${project!.path}; give --scope user or --scope project`,
        )
      scope = inUser ? 'user' : inProject ? 'project' : undefined
    }
    if (scope === 'project' && projectProblem) throw new Error(projectProblem)
    if (scope === undefined || (scope === 'user' && !inUser) || (scope === 'project' && !inProject)) {
      const where =
        scope === 'user'
          ? `the user settings (${settings.location})`
          : scope === 'project'
            ? project!.path
            : `the user settings (${settings.location}) or ${join(io.cwd, '.mcp.json')}`
      io.stderr.write(`dsh mcp: no MCP server named "${args.name}" in ${where}\n`)
      return 1
    }
    if (scope === 'user') {
      await settings.update('mcpServers', { [args.name]: undefined })
      io.stdout.write(`Removed MCP server "${args.name}" from the user settings (${settings.location}).\n`)
    } else {
      const { [args.name]: _removed, ...servers } = project!.servers
      writeMcpJson(project!.path, { ...project!.doc, mcpServers: servers })
      io.stdout.write(`Removed MCP server "${args.name}" from ${project!.path}.\n`)
    }
    return 0
  })
}

export async function runMcpCommand(opts: McpCommandOptions): Promise<number> {
  const env = opts.env ?? process.env
  const cwd = opts.cwd ?? process.cwd()
  const stdout = opts.stdout ?? process.stdout
  const stderr = opts.stderr ?? process.stderr
  const [command, ...words] = opts.argv
  if (command === 'add' || command === 'remove') {
    if (words.includes('--help') || words.includes('-h')) {
      stdout.write(MCP_HELP)
      return 0
    }
    const io = { env, cwd, stdout, stderr }
    try {
      applyDotEnv({ env, cwd, home: resolveDshHome(env) })
      return command === 'add' ? await addServer(opts, io, words) : await removeServer(opts, io, words)
    } catch (error) {
      if (error instanceof UsageError) {
        stderr.write(`dsh mcp: ${error.message}\ndsh mcp: see "dsh mcp --help"\n`)
        return 2
      }
      if (error instanceof DshUserError) {
        const msg = error.message.startsWith('dsh') ? error.message : `dsh: ${error.message}`
        stderr.write(msg + '\n')
        return error.exitCode
      }
      stderr.write(`dsh mcp: ${(error as Error).message}\n`)
      return 1
    }
  }
  let get: ReturnType<typeof parseNamed> | undefined
  if (command === 'get') {
    try {
      get = parseNamed('get', words)
    } catch (error) {
      stderr.write(`dsh mcp: ${(error as Error).message}\ndsh mcp: see "dsh mcp --help"\n`)
      return 2
    }
  }
  const args = get ? { profile: get.profile ?? 'headless', patches: get.patches, json: get.json } : parse(opts.argv)
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
      if ('login' in args && args.login !== undefined) return await login(tree.ctx.mcp, args.login, stdout, stderr)
      if (get) {
        const status = tree.ctx.mcp.get(get.name)
        if (!status) {
          const known = tree.ctx.mcp.list().map((s) => s.name)
          stderr.write(
            `dsh mcp: no MCP server named "${get.name}"${known.length ? ` (known: ${known.join(', ')})` : ''}\n`,
          )
          return 1
        }
        const catalog = tree.ctx.mcp.catalog(get.name)
        stdout.write(
          get.json ? `${JSON.stringify({ ...status, ...(catalog ?? {}) }, null, 2)}\n` : formatServer(status, catalog),
        )
        return 0
      }
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
