// @dsh/open-in-editor: `/open [path[:line]]` opens a workspace file (or the workspace) in the
// user's editor: the row's `command`, else $VISUAL, else $EDITOR. The editor is started through
// ctx.subprocess with a fixed argv (the variable is split on whitespace, never given to a shell)
// and the command waits for it to exit, as git does with $EDITOR. Under `dsh web` the row also
// registers `host.openPath` (loopback-only) on ctx.api, the method behind the sidebar's per-workspace
// "Open in editor" action (@dsh/ui-open-in-editor).
import { statSync } from 'node:fs'
import { basename, dirname, isAbsolute, resolve } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { CommandContext } from '@dsh/commands'
import type {} from '@dsh/subprocess'
import type {} from '@dsh/api-gateway'
import { ApiError } from '@dsh/web-protocol'
import { hostOpenPath } from './contract.ts'

export * from './contract.ts'

export const name = 'open-in-editor'
export const inject = ['commands', 'subprocess']

export type LineStyle = 'auto' | 'plus' | 'goto' | 'none'

export interface Config {
  command: string
  editor: string[]
  lineStyle: LineStyle
  waitMs: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  command: Schema.string()
    .pattern(/^[a-z][a-z0-9-]*$/)
    .default('open')
    .description('Command name without the slash.'),
  editor: Schema.array(Schema.string().min(1))
    .default([])
    .description('The editor argv, e.g. [code, --wait]; empty: $VISUAL, else $EDITOR.'),
  lineStyle: Schema.union(['auto', 'plus', 'goto', 'none'] as const)
    .default('auto')
    .description(
      'How a line is passed: plus (+N FILE: vi, nano, emacs...), goto (--goto FILE:N: VS Code and forks), none, or auto by the editor name.',
    ),
  waitMs: Schema.natural()
    .max(60_000)
    .default(2000)
    .description(
      'host.openPath (web): how long the host waits for the editor to exit before answering that it is running.',
    ),
}) as Schema<Partial<Config>, Config>

const GOTO = new Set(['code', 'code-insiders', 'codium', 'cursor', 'windsurf'])
const PLUS = new Set([
  'vi',
  'vim',
  'nvim',
  'gvim',
  'nano',
  'emacs',
  'emacsclient',
  'micro',
  'kak',
  'hx',
  'helix',
  'joe',
  'mg',
  'ne',
])

/** The editor argv: configured, else $VISUAL, else $EDITOR (split on whitespace); undefined when none. */
export function editorArgv(config: Pick<Config, 'editor'>, env: NodeJS.ProcessEnv = process.env): string[] | undefined {
  if (config.editor.length) return [...config.editor]
  for (const name of ['VISUAL', 'EDITOR']) {
    const parts = (env[name] ?? '').trim().split(/\s+/).filter(Boolean)
    if (parts.length) return parts
  }
  return undefined
}

/** `path`, `path:12` or `path:12:4` (column ignored); a Windows-style or odd name stays whole. */
export function parseTarget(text: string): { path: string; line?: number } {
  const m = /^(.*?):(\d+)(?::\d+)?$/.exec(text)
  if (m && m[1] !== '') return { path: m[1], line: Number(m[2]) }
  return { path: text }
}

/** The arguments after the editor argv for `file` at `line`. */
export function targetArgs(editor: string[], file: string, line: number | undefined, style: LineStyle): string[] {
  if (line === undefined) return [file]
  const exe = basename(editor[0])
  const chosen = style === 'auto' ? (GOTO.has(exe) ? 'goto' : PLUS.has(exe) ? 'plus' : 'none') : style
  if (chosen === 'goto') return ['--goto', `${file}:${line}`]
  if (chosen === 'plus') return [`+${line}`, file]
  return [file]
}

const NO_EDITOR = 'no editor: set $VISUAL or $EDITOR (e.g. export VISUAL="code --wait"), or the row\'s editor field'

/** Starts `editor` on `file` (at `line`) through the subprocess seam, in `cwd`. */
function launch(
  ctx: Context,
  config: Config,
  editor: string[],
  file: string,
  line: number | undefined,
  cwd: string,
  signal?: AbortSignal,
) {
  try {
    return ctx.subprocess.spawn({
      file: editor[0],
      args: [...editor.slice(1), ...targetArgs(editor, file, line, config.lineStyle)],
      cwd,
      kill: { graceMs: 1000 },
      retentionMode: 'merged',
      retention: { maxBytes: 4096, headBytes: 2048, tailBytes: 2048 },
      ...(signal ? { signal } : {}),
    })
  } catch (error) {
    throw new Error(`${editor[0]} could not start: ${(error as Error).message}`)
  }
}

/** One line for an editor that did not start or exited non-zero; undefined when it went well. */
function failure(editor: string[], exit: Awaited<ReturnType<Context['subprocess']['spawn']>['exited']>) {
  if (exit.spawnError) return `${editor[0]} could not start: ${exit.spawnError.message}`
  if (exit.code === 0) return undefined
  const out = exit.output.merged
  const text = out ? new TextDecoder().decode(out.truncated ? out.tail : out.head) : ''
  const last = text.trim().split('\n').at(-1) ?? ''
  return `${editor[0]} exited with ${exit.code ?? exit.signal}${last ? `: ${last}` : ''}`
}

export function apply(ctx: Context, config: Config): void {
  ctx.commands.register({
    name: config.command,
    description: 'Open a file (path[:line]) or the workspace in your editor ($VISUAL / $EDITOR).',
    usage: '[path[:line]]',
    async run(args: string, { agent, signal }: CommandContext) {
      const editor = editorArgv(config)
      if (!editor) throw new Error(NO_EDITOR)
      const target = args.trim() ? parseTarget(args.trim()) : { path: '.' }
      const file = isAbsolute(target.path) ? target.path : resolve(agent.cwd, target.path)
      let isDir: boolean
      try {
        isDir = statSync(file).isDirectory()
      } catch {
        throw new Error(`${target.path}: no such file or directory (relative paths start at ${agent.cwd})`)
      }
      const handle = launch(ctx, config, editor, file, isDir ? undefined : target.line, agent.cwd, signal)
      const problem = failure(editor, await handle.exited)
      if (problem) throw new Error(problem)
      return `Opened ${target.path}${target.line !== undefined && !isDir ? `:${target.line}` : ''} in ${basename(editor[0])}.`
    },
  })

  // dsh web: the sidebar's "Open in editor" action. The gateway refuses a non-loopback caller
  // (the contract is loopbackOnly); the handler checks again, so another carrier cannot skip it.
  ctx.inject(['api'], (inner) => {
    inner.api.register(hostOpenPath, async (params, call) => {
      if (!call.loopback) throw new ApiError('FORBIDDEN', 'host.openPath is only available to loopback callers')
      if (!isAbsolute(params.path))
        throw new ApiError('INVALID_PARAMS', `${params.path}: not an absolute path`, { field: 'path' })
      const editor = editorArgv(config)
      if (!editor) throw new ApiError('NO_EDITOR', NO_EDITOR, { status: 409 })
      let isDir: boolean
      try {
        isDir = statSync(params.path).isDirectory()
      } catch {
        throw new ApiError('NOT_FOUND', `${params.path}: no such file or directory`, { status: 404 })
      }
      // No request signal: the editor outlives the HTTP call (a page that reloads keeps it open).
      const handle = launch(
        ctx,
        config,
        editor,
        params.path,
        isDir ? undefined : params.line,
        isDir ? params.path : dirname(params.path),
      )
      let timer: ReturnType<typeof setTimeout> | undefined
      const exit = await Promise.race([
        handle.exited,
        new Promise<undefined>((done) => {
          timer = setTimeout(() => done(undefined), config.waitMs)
        }),
      ])
      clearTimeout(timer)
      if (exit) {
        const problem = failure(editor, exit)
        if (problem) throw new ApiError('EDITOR_FAILED', problem, { status: 502 })
      }
      return { path: params.path, editor: basename(editor[0]), running: !exit }
    })
  })
}
