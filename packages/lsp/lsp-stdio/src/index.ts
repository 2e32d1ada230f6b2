// @dsh/lsp-stdio: a generic stdio language-server host for `ctx.lsp`. The row names servers
// (command, file extensions, root markers); each becomes one provider. A server starts lazily on
// the first question about one of its files, one process per workspace root (the nearest
// directory holding a root marker), and is started again after it crashed.
import { accessSync, constants, existsSync, statSync } from 'node:fs'
import { delimiter, dirname, extname, isAbsolute, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { LspError, type Diagnostic, type Location, type LspProvider, type Position, type SymbolInfo } from '@dsh/lsp'
import type {} from '@dsh/subprocess'
import type {} from '@dsh/sandbox'
import type {} from '@dsh/sandbox-policy'
import { LanguageServerClient, uriOf, type RawDiagnostic } from './client.ts'

export interface ServerConfig {
  command: string
  args: string[]
  env: Record<string, string>
  /** File extensions served, with the dot. */
  extensions: string[]
  /** Files or directories marking a workspace root, nearest first wins. */
  rootMarkers: string[]
  /** Extension -> language id (default: the extension without its dot, `.ts` -> typescript, ...). */
  languageIds: Record<string, string>
  initializationOptions?: unknown
  /**
   * A command not found (the project's `node_modules/.bin`, then PATH) means no server for these
   * files: the provider handles none of them, with one debug line, instead of failing.
   */
  optional: boolean
}

export interface LspStdioConfig {
  servers: Record<string, ServerConfig>
  requestTimeoutMs: number
  /** After the first file of a workspace is opened, how long to wait for the server to report loading work. */
  openGraceMs: number
  /** Longest wait for a file's diagnostics after it changed. */
  diagnosticsWaitMs: number
  /** Diagnostics are taken as settled after this long without a new publication. */
  diagnosticsQuietMs: number
}

const ServerSchema: Schema<Partial<ServerConfig>, ServerConfig> = Schema.object({
  command: Schema.string().required().description('The language server executable.'),
  args: Schema.array(Schema.string()).default([]).description('Its arguments (e.g. --stdio).'),
  env: Schema.dict(Schema.string()).default({}).description('Extra environment.'),
  extensions: Schema.array(Schema.string()).required().description('File extensions it serves, with the dot.'),
  rootMarkers: Schema.array(Schema.string()).default(['.git']).description('Files marking a workspace root.'),
  languageIds: Schema.dict(Schema.string()).default({}).description('Extension -> LSP language id.'),
  initializationOptions: Schema.any().description('Sent as initializationOptions.'),
  optional: Schema.boolean()
    .default(false)
    .description('When the command is not installed, serve nothing (one debug line) instead of failing.'),
})

export const Config: Schema<Partial<LspStdioConfig>, LspStdioConfig> = Schema.object({
  servers: Schema.dict(ServerSchema).default({}).description('Language servers by name.'),
  requestTimeoutMs: Schema.natural()
    .min(1)
    .default(60_000)
    .description('Time limit of one request, and of waiting for a server to finish loading (ms).'),
  openGraceMs: Schema.natural()
    .default(1_000)
    .description(
      'After the first file of a workspace is opened, how long to wait for the server to start reporting its loading (ms).',
    ),
  diagnosticsWaitMs: Schema.natural().default(8_000).description('Longest wait for diagnostics after a change (ms).'),
  diagnosticsQuietMs: Schema.natural()
    .default(1_000)
    .description('Quiet time after which diagnostics count as settled (ms).'),
})

export const name = 'lsp-stdio'
export const inject = ['lsp', 'subprocess']

const DEFAULT_LANGUAGE_IDS: Record<string, string> = {
  '.ts': 'typescript',
  '.mts': 'typescript',
  '.cts': 'typescript',
  '.tsx': 'typescriptreact',
  '.js': 'javascript',
  '.mjs': 'javascript',
  '.cjs': 'javascript',
  '.jsx': 'javascriptreact',
  '.py': 'python',
  '.rs': 'rust',
  '.go': 'go',
}

const SYMBOL_KINDS = [
  '',
  'File',
  'Module',
  'Namespace',
  'Package',
  'Class',
  'Method',
  'Property',
  'Field',
  'Constructor',
  'Enum',
  'Interface',
  'Function',
  'Variable',
  'Constant',
  'String',
  'Number',
  'Boolean',
  'Array',
  'Object',
  'Key',
  'Null',
  'EnumMember',
  'Struct',
  'Event',
  'Operator',
  'TypeParameter',
]
const SEVERITIES = ['error', 'error', 'warning', 'information', 'hint'] as const

type Range = { start: Position; end: Position }
type RawLocation =
  | { uri: string; range: Range }
  | { targetUri: string; targetRange: Range; targetSelectionRange?: Range }

const pathOf = (uri: string) => (uri.startsWith('file:') ? fileURLToPath(uri) : uri)

function locations(result: unknown): Location[] {
  if (!result) return []
  const list = (Array.isArray(result) ? result : [result]) as RawLocation[]
  return list.map((item) => {
    if ('targetUri' in item) {
      const range = item.targetSelectionRange ?? item.targetRange
      return { path: pathOf(item.targetUri), start: range.start, end: range.end }
    }
    return { path: pathOf(item.uri), start: item.range.start, end: item.range.end }
  })
}

function hoverText(result: unknown): string | undefined {
  const contents = (result as { contents?: unknown } | null)?.contents
  if (contents === undefined || contents === null) return undefined
  const one = (part: unknown): string =>
    typeof part === 'string'
      ? part
      : typeof (part as { value?: unknown }).value === 'string'
        ? (part as { value: string }).value
        : ''
  const text = (Array.isArray(contents) ? contents.map(one) : [one(contents)]).filter(Boolean).join('\n\n').trim()
  return text === '' ? undefined : text
}

interface RawSymbol {
  name: string
  kind: number
  range?: Range
  selectionRange?: Range
  children?: RawSymbol[]
  location?: { uri: string; range: Range }
  containerName?: string
}

function symbols(result: unknown, path: string, container?: string): SymbolInfo[] {
  if (!Array.isArray(result)) return []
  return (result as RawSymbol[]).flatMap((item) => {
    const range = item.location?.range ?? item.selectionRange ?? item.range
    if (!range) return []
    const info: SymbolInfo = {
      name: item.name,
      kind: SYMBOL_KINDS[item.kind] ?? 'Symbol',
      location: { path: item.location ? pathOf(item.location.uri) : path, start: range.start, end: range.end },
      ...((item.containerName ?? container) ? { container: item.containerName ?? container } : {}),
    }
    return [info, ...symbols(item.children, path, item.name)]
  })
}

function diagnosticsOf(path: string, raw: RawDiagnostic[]): Diagnostic[] {
  return raw.map((d) => ({
    path,
    start: d.range.start,
    end: d.range.end,
    severity: SEVERITIES[d.severity ?? 1] ?? 'error',
    message: d.message,
    ...(d.source ? { source: d.source } : {}),
    ...(d.code !== undefined ? { code: String(d.code) } : {}),
  }))
}

/** The nearest directory at or above `dir` holding one of `markers`; `dir` itself when none does. */
export function findRoot(dir: string, markers: string[]): string {
  let current = resolve(dir)
  for (;;) {
    if (markers.some((marker) => existsSync(join(current, marker)))) return current
    const parent = dirname(current)
    if (parent === current) return resolve(dir)
    current = parent
  }
}

function executable(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/**
 * Where `command` runs from for a workspace `root`: a path (with a slash) as given, relative to the
 * root; a bare name from the nearest `node_modules/.bin` at or above the root (only when
 * `projectBins`), then from `PATH`. Undefined when none holds an executable of that name.
 */
export function resolveCommand(
  command: string,
  root: string,
  options: { projectBins: boolean; path?: string },
): string | undefined {
  if (command.includes('/')) {
    const full = isAbsolute(command) ? command : resolve(root, command)
    return executable(full) ? full : undefined
  }
  if (options.projectBins) {
    let dir = resolve(root)
    for (;;) {
      const candidate = join(dir, 'node_modules', '.bin', command)
      if (executable(candidate)) return candidate
      const parent = dirname(dir)
      if (parent === dir) break
      dir = parent
    }
  }
  for (const entry of (options.path ?? process.env.PATH ?? '').split(delimiter)) {
    if (!entry || !isAbsolute(entry)) continue
    const candidate = join(entry, command)
    if (executable(candidate)) return candidate
  }
  return undefined
}

/**
 * The argv that runs a server confined by the deployment's sandbox policy for its root, when the
 * sandbox seam is mounted. A server reads the project's files and may load code the project ships
 * (TypeScript language-service plugins named in tsconfig.json, pyright's configured paths), so it
 * runs like a command the model started. Servers are shared by every session working under one
 * root, so the policy is the root's default mode, not one session's override.
 */
function confinement(ctx: Context): ((argv: string[], cwd: string) => Promise<string[]>) | undefined {
  const sandbox = ctx.get('sandbox')
  const policy = ctx.get('sandboxPolicy')
  if (!sandbox || !policy) return undefined
  return async (argv, cwd) => {
    try {
      return (await sandbox.wrap({ argv, cwd, policy: policy.resolve({ cwd }), launcher: false })).argv
    } catch (error) {
      throw new Error(`the sandbox cannot confine it: ${(error as Error).message}`)
    }
  }
}

export function apply(ctx: Context, config: LspStdioConfig): void {
  const logger = ctx.logger('lsp-stdio')
  for (const [serverName, server] of Object.entries(config.servers)) {
    const clients = new Map<string, LanguageServerClient>()
    const languageIds = { ...DEFAULT_LANGUAGE_IDS, ...server.languageIds }
    const rootOf = (path: string) => findRoot(extname(path) ? dirname(path) : path, server.rootMarkers)
    // A project's own node_modules/.bin is code the project ships: it is used only when the server
    // runs confined like the model's commands (the sandbox seam is mounted), never unconfined.
    const commandFor = (root: string) =>
      resolveCommand(server.command, root, { projectBins: confinement(ctx) !== undefined })
    const missingLogged = new Set<string>()
    /** Optional servers: whether the command is installed for the root serving `path` (one debug line when not). */
    const installedFor = (path: string): boolean => {
      const root = rootOf(path)
      if (clients.get(root)?.dead === false) return true
      if (commandFor(root)) return true
      if (!missingLogged.has(root)) {
        missingLogged.add(root)
        logger.debug(
          '%s: %s is not installed for %s; no language server for its files',
          serverName,
          server.command,
          root,
        )
      }
      return false
    }
    const clientFor = async (path: string): Promise<LanguageServerClient> => {
      const root = rootOf(path)
      let client = clients.get(root)
      if (!client || client.dead) {
        const spec = {
          command: commandFor(root) ?? server.command,
          args: server.args,
          env: server.env,
          initializationOptions: server.initializationOptions,
          languageIds,
        }
        client = new LanguageServerClient(
          ctx.subprocess,
          spec,
          root,
          config.requestTimeoutMs,
          config.openGraceMs,
          confinement(ctx),
        )
        clients.set(root, client)
      }
      try {
        await client.ready
      } catch (error) {
        clients.delete(root)
        throw new LspError(
          'SERVER_FAILED',
          `language server "${serverName}" did not start: ${(error as Error).message}`,
        )
      }
      return client
    }
    const ask = async <T>(
      path: string,
      method: string,
      params: (uri: string) => unknown,
      map: (result: unknown) => T,
    ): Promise<T> => {
      const client = await clientFor(path)
      try {
        await client.sync(path)
        await client.settle(0)
        return map(await client.request(method, params(uriOf(path))))
      } catch (error) {
        if (error instanceof LspError) throw error
        throw new LspError('SERVER_FAILED', `language server "${serverName}": ${(error as Error).message}`)
      }
    }
    const at = (position: Position) => (uri: string) => ({ textDocument: { uri }, position })
    const provider: LspProvider = {
      id: serverName,
      handles: (path) => server.extensions.includes(extname(path)) && (!server.optional || installedFor(path)),
      definition: (path, position) => ask(path, 'textDocument/definition', at(position), locations),
      implementations: (path, position) => ask(path, 'textDocument/implementation', at(position), locations),
      references: (path, position) =>
        ask(
          path,
          'textDocument/references',
          (uri) => ({ textDocument: { uri }, position, context: { includeDeclaration: true } }),
          locations,
        ),
      hover: (path, position) => ask(path, 'textDocument/hover', at(position), hoverText),
      documentSymbols: (path) =>
        ask(
          path,
          'textDocument/documentSymbol',
          (uri) => ({ textDocument: { uri } }),
          (result) => symbols(result, path),
        ),
      workspaceSymbols: async (query, near) => {
        const client = await clientFor(near)
        if (extname(near)) await client.sync(near)
        return symbols(await client.request('workspace/symbol', { query }), near)
      },
      diagnostics: async (path) => {
        const client = await clientFor(path)
        return diagnosticsOf(path, await client.diagnostics(path, config.diagnosticsWaitMs, config.diagnosticsQuietMs))
      },
    }
    ctx.lsp.register(provider)
    ctx.effect(
      () => () => {
        for (const client of clients.values()) void client.stop()
        clients.clear()
      },
      `lsp-stdio: stop ${serverName}`,
    )
  }
}
