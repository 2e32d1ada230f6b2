// @dsh/open-in-editor: `/open [path[:line]]` opens a workspace file (or the workspace) in the
// user's editor: the row's `command`, else $VISUAL, else $EDITOR. The editor is started through
// ctx.subprocess with a fixed argv (the variable is split on whitespace, never given to a shell)
// and the command waits for it to exit, as git does with $EDITOR.
import { statSync } from 'node:fs'
import { basename, isAbsolute, resolve } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { CommandContext } from '@dsh/commands'
import type {} from '@dsh/subprocess'

export const name = 'open-in-editor'
export const inject = ['commands', 'subprocess']

export type LineStyle = 'auto' | 'plus' | 'goto' | 'none'

export interface Config {
  command: string
  editor: string[]
  lineStyle: LineStyle
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

export function apply(ctx: Context, config: Config): void {
  ctx.commands.register({
    name: config.command,
    description: 'Open a file (path[:line]) or the workspace in your editor ($VISUAL / $EDITOR).',
    usage: '[path[:line]]',
    async run(args: string, { agent, signal }: CommandContext) {
      const editor = editorArgv(config)
      if (!editor)
        throw new Error(
          'no editor: set $VISUAL or $EDITOR (e.g. export VISUAL="code --wait"), or the row\'s editor field',
        )
      const target = args.trim() ? parseTarget(args.trim()) : { path: '.' }
      const file = isAbsolute(target.path) ? target.path : resolve(agent.cwd, target.path)
      let isDir: boolean
      try {
        isDir = statSync(file).isDirectory()
      } catch {
        throw new Error(`${target.path}: no such file or directory (relative paths start at ${agent.cwd})`)
      }
      const rest = targetArgs(editor, file, isDir ? undefined : target.line, config.lineStyle)
      let handle: ReturnType<Context['subprocess']['spawn']>
      try {
        handle = ctx.subprocess.spawn({
          file: editor[0],
          args: [...editor.slice(1), ...rest],
          cwd: agent.cwd,
          kill: { graceMs: 1000 },
          retentionMode: 'merged',
          retention: { maxBytes: 4096, headBytes: 2048, tailBytes: 2048 },
          ...(signal ? { signal } : {}),
        })
      } catch (error) {
        throw new Error(`${editor[0]} could not start: ${(error as Error).message}`)
      }
      const exit = await handle.exited
      if (exit.spawnError) throw new Error(`${editor[0]} could not start: ${exit.spawnError.message}`)
      if (exit.code !== 0) {
        const out = exit.output.merged
        const text = out ? new TextDecoder().decode(out.truncated ? out.tail : out.head) : ''
        const last = text.trim().split('\n').at(-1) ?? ''
        throw new Error(`${editor[0]} exited with ${exit.code ?? exit.signal}${last ? `: ${last}` : ''}`)
      }
      return `Opened ${target.path}${target.line !== undefined && !isDir ? `:${target.line}` : ''} in ${basename(editor[0])}.`
    },
  })
}
