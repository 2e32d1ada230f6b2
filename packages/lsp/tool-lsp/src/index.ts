// @dsh/tool-lsp: the model-facing `lsp` tool over `ctx.lsp` (definition, references,
// implementations, hover, document and workspace symbols), with 1-based positions and results
// formatted as `path:line:column` plus the source line; and, after the agent edits a file, the
// language server's errors for that file appended to the edit's result.
import { readFileSync } from 'node:fs'
import { isAbsolute, relative, resolve } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Diagnostic, Location, SymbolInfo } from '@dsh/lsp'
import { toolError as fail } from '@dsh/tools'
import { contributeSection } from '@dsh/system-prompt'

export interface ToolLspConfig {
  /** Most locations or symbols listed in one result. */
  maxResults: number
  /** Tools whose successful results get the edited file's diagnostics appended. */
  diagnoseTools: string[]
  /** Most diagnostics appended. */
  maxDiagnostics: number
  /** Also append warnings (errors always). */
  includeWarnings: boolean
  /**
   * Longest time an edit's result waits for the file's diagnostics, the server's start and project
   * load included; past it the result goes back without them (the server keeps loading).
   */
  diagnosticsTimeoutMs: number
  /**
   * Tools whose successful call on a file a server handles starts that server and opens the file
   * in the background (nothing waits), so a later edit's diagnostics do not pay for the start.
   */
  warmTools: string[]
}

export const Config: Schema<Partial<ToolLspConfig>, ToolLspConfig> = Schema.object({
  maxResults: Schema.natural().min(1).default(50).description('Most locations or symbols in one result.'),
  diagnoseTools: Schema.array(Schema.string())
    .default(['write', 'edit', 'str_replace_editor'])
    .description("Tools whose results get the edited file's diagnostics."),
  maxDiagnostics: Schema.natural().default(10).description("Most diagnostics appended to an edit's result (0: none)."),
  includeWarnings: Schema.boolean().default(false).description('Append warnings as well as errors.'),
  diagnosticsTimeoutMs: Schema.natural()
    .min(1)
    .default(15_000)
    .description("Longest wait for an edited file's diagnostics, server start included (ms)."),
  warmTools: Schema.array(Schema.string())
    .default(['read'])
    .description('Tools whose call on a file starts its language server in the background.'),
})

export const name = 'tool-lsp'
export const inject = ['tools', 'lsp']

export const OPERATIONS = [
  'definition',
  'references',
  'implementations',
  'hover',
  'document_symbols',
  'workspace_symbols',
] as const
type Operation = (typeof OPERATIONS)[number]

export const PROMPT_SECTION = {
  id: 'tool:lsp',
  order: 350,
  // Left out while all of these tools are deferred (@dsh/tool-deferral).
  tools: ['lsp'],
  text: [
    'Code navigation (lsp):',
    '- To find where a symbol is defined, used or implemented, or what its type is, prefer the lsp tool over text search: it follows imports and types exactly.',
    '- After you edit a file the language server serves, its errors for that file are appended to the edit result; fix them before moving on.',
  ].join('\n'),
}

interface LspArgs {
  operation: Operation
  file_path?: string
  line?: number
  column?: number
  query?: string
}

const lineCache = new Map<string, string[]>()
function sourceLine(path: string, line: number): string {
  let lines = lineCache.get(path)
  if (!lines) {
    try {
      lines = readFileSync(path, 'utf8').split('\n')
    } catch {
      lines = []
    }
    lineCache.set(path, lines)
  }
  const text = (lines[line] ?? '').trim()
  return text.length > 160 ? `${text.slice(0, 157)}...` : text
}

export function formatLocations(list: Location[], cwd: string, max: number): string {
  lineCache.clear()
  const shown = list.slice(0, max).map((l) => {
    const where = `${display(l.path, cwd)}:${l.start.line + 1}:${l.start.character + 1}`
    const text = sourceLine(l.path, l.start.line)
    return text ? `${where}: ${text}` : where
  })
  if (list.length > max) shown.push(`... ${list.length - max} more not shown`)
  return shown.join('\n')
}

export function formatSymbols(list: SymbolInfo[], cwd: string, max: number): string {
  const shown = list
    .slice(0, max)
    .map(
      (s) =>
        `${s.kind} ${s.container ? `${s.container}.` : ''}${s.name}  ${display(s.location.path, cwd)}:${s.location.start.line + 1}:${s.location.start.character + 1}`,
    )
  if (list.length > max) shown.push(`... ${list.length - max} more not shown`)
  return shown.join('\n')
}

export function formatDiagnostics(list: Diagnostic[], cwd: string, max: number): string {
  const code = (d: Diagnostic) =>
    d.code === undefined ? '' : ` ${d.source === 'typescript' && /^\d+$/.test(d.code) ? `TS${d.code}` : d.code}`
  const shown = list
    .slice(0, max)
    .map(
      (d) =>
        `${display(d.path, cwd)}:${d.start.line + 1}:${d.start.character + 1} ${d.severity}${code(d)}: ${d.message.split('\n')[0]}`,
    )
  if (list.length > max) shown.push(`... ${list.length - max} more`)
  return shown.join('\n')
}

function display(path: string, cwd: string): string {
  const rel = relative(cwd, path)
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path
}

export function apply(ctx: Context, config: ToolLspConfig): void {
  contributeSection(ctx, PROMPT_SECTION)
  ctx.tools.register<LspArgs>({
    name: 'lsp',
    defer: true,
    description:
      'Precise code navigation through the language server: definition, references, implementations, hover (type and docs) at a position, ' +
      'document_symbols of a file, workspace_symbols by name. Positions are 1-based line and column, as shown by the read tool. ' +
      'Read-only.',
    parameters: {
      type: 'object',
      properties: {
        operation: { type: 'string', enum: [...OPERATIONS] },
        file_path: {
          type: 'string',
          description:
            'The file (relative to the working directory or absolute). Required except for workspace_symbols, where it picks the language server.',
        },
        line: { type: 'integer', minimum: 1, description: '1-based line of the symbol (position operations).' },
        column: { type: 'integer', minimum: 1, description: '1-based column of a character inside the symbol name.' },
        query: { type: 'string', description: 'Symbol name to search (workspace_symbols).' },
      },
      required: ['operation'],
      additionalProperties: false,
    },
    concurrencySafe: true,
    async execute(args, call) {
      const path = args.file_path !== undefined ? resolve(call.cwd, args.file_path) : undefined
      const needsPosition =
        args.operation === 'definition' ||
        args.operation === 'references' ||
        args.operation === 'implementations' ||
        args.operation === 'hover'
      if (args.operation !== 'workspace_symbols' && !path)
        return fail('INVALID_ARGUMENTS', `operation ${args.operation} needs file_path.`)
      if (needsPosition && (args.line === undefined || args.column === undefined))
        return fail('INVALID_ARGUMENTS', `operation ${args.operation} needs line and column (1-based).`)
      if (args.operation === 'workspace_symbols' && !args.query)
        return fail('INVALID_ARGUMENTS', 'workspace_symbols needs query (a symbol name).')
      const near = path ?? call.cwd
      if (!ctx.lsp.providerFor(near)) {
        return fail(
          'NO_LANGUAGE_SERVER',
          `no language server is configured or installed for ${path ? display(path, call.cwd) : 'this directory'}. Use grep or read instead.`,
        )
      }
      const position = { line: (args.line ?? 1) - 1, character: (args.column ?? 1) - 1 }
      try {
        switch (args.operation) {
          case 'hover': {
            const text = await ctx.lsp.hover(path!, position)
            return {
              content:
                text ??
                `No information at ${display(path!, call.cwd)}:${args.line}:${args.column}; check that the position is inside a symbol name.`,
            }
          }
          case 'document_symbols': {
            const list = await ctx.lsp.documentSymbols(path!)
            return {
              content: list.length
                ? formatSymbols(list, call.cwd, config.maxResults)
                : 'No symbols found in this file.',
            }
          }
          case 'workspace_symbols': {
            const list = await ctx.lsp.workspaceSymbols(args.query!, near)
            return {
              content: list.length
                ? formatSymbols(list, call.cwd, config.maxResults)
                : `No symbol matches ${JSON.stringify(args.query)}.`,
            }
          }
          default: {
            const list = await ctx.lsp[args.operation](path!, position)
            if (list.length === 0)
              return {
                content: `No ${args.operation} found at ${display(path!, call.cwd)}:${args.line}:${args.column}; check that the position is inside a symbol name.`,
              }
            return { content: formatLocations(list, call.cwd, config.maxResults), meta: { count: list.length } }
          }
        }
      } catch (error) {
        const code = (error as { code?: string }).code
        return fail(
          code === 'NO_SERVER' ? 'NO_LANGUAGE_SERVER' : 'LSP_FAILED',
          `${(error as Error).message}. Use grep or read instead for now.`,
        )
      }
    },
  })

  const fileOf = (payload: { args: unknown; context: { cwd: string } }): string | undefined => {
    const args = payload.args as { file_path?: unknown; path?: unknown } | undefined
    const file =
      typeof args?.file_path === 'string' ? args.file_path : typeof args?.path === 'string' ? args.path : undefined
    return file === undefined ? undefined : resolve(payload.context.cwd, file)
  }

  if (config.warmTools.length > 0) {
    ctx.on('tools/post-execute', async (payload, next) => {
      await next()
      if (!config.warmTools.includes(payload.tool.name) || payload.output.isError || payload.output.error) return
      const path = fileOf(payload)
      if (!path || !ctx.lsp.providerFor(path)) return
      // Not awaited: the read's result goes back at once; a failure shows on the next real question.
      ctx.lsp.diagnostics(path).catch(() => {})
    })
  }

  if (config.maxDiagnostics > 0 && config.diagnoseTools.length > 0) {
    const logger = ctx.logger('tool-lsp')
    // A server that keeps failing would otherwise warn on every edit: one warning per provider.
    const warned = new Set<string>()
    ctx.on('tools/post-execute', async (payload, next) => {
      await next()
      if (!config.diagnoseTools.includes(payload.tool.name)) return
      if (payload.output.isError || payload.output.error) return
      const path = fileOf(payload)
      if (!path) return
      // No provider (no server configured, or an optional one not installed): no wait at all.
      const provider = ctx.lsp.providerFor(path)
      if (!provider) return
      let list: Diagnostic[] | undefined
      let timer: NodeJS.Timeout | undefined
      const pending = ctx.lsp.diagnostics(path)
      try {
        list = await Promise.race([
          pending,
          new Promise<undefined>((resolve) => {
            timer = setTimeout(() => resolve(undefined), config.diagnosticsTimeoutMs)
          }),
        ])
      } catch (error) {
        if (warned.has(provider.id)) logger.debug('diagnostics for %s failed: %s', path, (error as Error).message)
        else {
          warned.add(provider.id)
          logger.warn('diagnostics for %s failed: %s', path, (error as Error).message)
        }
        return
      } finally {
        clearTimeout(timer)
      }
      if (list === undefined) {
        pending.catch(() => {})
        logger.debug('no diagnostics for %s within %d ms', path, config.diagnosticsTimeoutMs)
        return
      }
      const shown = list.filter((d) => d.severity === 'error' || (config.includeWarnings && d.severity === 'warning'))
      if (shown.length === 0) return
      const errors = shown.filter((d) => d.severity === 'error').length
      const head = `The language server reports ${errors} error${errors === 1 ? '' : 's'}${shown.length > errors ? ` and ${shown.length - errors} warning${shown.length - errors === 1 ? '' : 's'}` : ''} in ${display(path, payload.context.cwd)} after this change:`
      const note = `${head}\n${formatDiagnostics(shown, payload.context.cwd, config.maxDiagnostics)}`
      const output = payload.output
      payload.output =
        typeof output.content === 'string'
          ? { ...output, content: `${output.content}\n\n${note}` }
          : { ...output, content: [...output.content, { type: 'text', text: note }] }
    })
  }
}
