// @dsh/tool-str-replace-editor: the standalone model-facing `str_replace_editor` tool (commands
// view, create, str_replace, insert) over `ctx.fs`. Every read and write goes through the fs
// service with the call's session, so the `fs/before-write` gate and its policies (for example
// fs-observation-policy's read-before-edit rule) apply exactly as they do to the other file tools.
import { join, relative } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { FsError } from '@dsh/fs'
import type { ToolCallContext, ToolOutput } from '@dsh/tools'
import { toolError as fail } from '@dsh/tools'
import { EditorError, insertAfter, linesOf, numbered, replaceOnce, type Replaced } from './text.ts'
import { registerPromptSection } from './prompt.ts'

export { EditorError, insertAfter, linesOf, numbered, replaceOnce } from './text.ts'

export interface StrReplaceEditorConfig {
  maxLineLength: number
  maxViewBytes: number
  maxFileBytes: number
  maxDirEntries: number
  snippetLines: number
}

export const Config: Schema<Partial<StrReplaceEditorConfig>, StrReplaceEditorConfig> = Schema.object({
  maxLineLength: Schema.natural()
    .min(80)
    .default(2000)
    .description('Characters of one line shown by view before it is cut.'),
  maxViewBytes: Schema.natural()
    .min(1024)
    .default(128 * 1024)
    .description('Bytes of one view result; longer views stop at a line boundary.'),
  maxFileBytes: Schema.natural()
    .min(1024)
    .default(32 * 1024 * 1024)
    .description('Larger files are neither viewed nor edited.'),
  maxDirEntries: Schema.natural().min(1).default(500).description('Entries a directory view lists.'),
  snippetLines: Schema.natural().default(4).description('Context lines around an edit in its result snippet.'),
})

export const name = 'tool-str-replace-editor'
export const inject = ['tools', 'fs']

type Command = 'view' | 'create' | 'str_replace' | 'insert'

interface EditorArgs {
  command: Command
  path: string
  file_text?: string
  old_str?: string
  new_str?: string
  insert_line?: number
  view_range?: number[]
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

/** Which parameters each command needs and which it ignores, for errors the model can act on. */
const NEEDS: Record<Command, (keyof EditorArgs)[]> = {
  view: [],
  create: ['file_text'],
  str_replace: ['old_str'],
  insert: ['insert_line', 'new_str'],
}

export { PROMPT_SECTION } from './prompt.ts'

export function apply(ctx: Context, config: StrReplaceEditorConfig): void {
  registerPromptSection(ctx)
  const session = (call: ToolCallContext) => (call.sessionId !== undefined ? { session: call.sessionId } : {})

  async function checkFile(abs: string): Promise<ToolOutput | undefined> {
    const stat = await ctx.fs.stat(abs)
    if (stat.kind === 'directory') return undefined
    if (stat.size > config.maxFileBytes) {
      return fail(
        'FILE_TOO_LARGE',
        `${abs} is ${stat.size} bytes, over the ${config.maxFileBytes}-byte limit of this tool. Use a shell command (grep, sed -n) to work with part of it.`,
      )
    }
    return undefined
  }

  async function viewDirectory(abs: string): Promise<ToolOutput> {
    const rows: string[] = []
    let more = false
    const walk = async (dir: string, depth: number): Promise<void> => {
      for (const entry of await ctx.fs.list(dir)) {
        if (entry.name.startsWith('.') || entry.name === 'node_modules') continue
        if (rows.length >= config.maxDirEntries) {
          more = true
          return
        }
        const path = join(dir, entry.name)
        const shown = relative(abs, path)
        rows.push(entry.kind === 'directory' ? `${shown}/` : shown)
        if (entry.kind === 'directory' && depth < 2) await walk(path, depth + 1)
      }
    }
    await walk(abs, 1)
    const head = `${abs}/ (files and directories up to 2 levels deep, hidden items and node_modules left out):`
    const body = rows.length > 0 ? rows.join('\n') : '(empty)'
    const tail = more
      ? `\n(Listing stopped after ${config.maxDirEntries} entries; view a subdirectory to see more.)`
      : ''
    return {
      content: `${head}\n${body}${tail}`,
      meta: { path: abs, kind: 'directory', entries: rows.length, truncated: more },
    }
  }

  async function view(args: EditorArgs, abs: string, call: ToolCallContext): Promise<ToolOutput> {
    const stat = await ctx.fs.stat(abs)
    if (stat.kind === 'directory') {
      if (args.view_range !== undefined)
        return fail(
          'INVALID_ARGUMENTS',
          `view_range applies to files only, and ${abs} is a directory. Leave view_range out to list it.`,
        )
      return viewDirectory(abs)
    }
    const large = await checkFile(abs)
    if (large) return large
    const { bytes } = await ctx.fs.readFile(abs, { ...session(call), signal: call.signal })
    if (bytes.includes(0))
      return fail(
        'BINARY_FILE',
        `${abs} is a binary file and cannot be shown as text. Use a shell command (file, xxd, strings) to inspect it.`,
      )
    const lines = linesOf(new TextDecoder().decode(bytes))
    const total = lines.length
    if (total === 0) {
      if (args.view_range !== undefined)
        return fail('INVALID_RANGE', `${abs} is empty, so view_range cannot select anything. Leave view_range out.`)
      return { content: `(${abs} is empty.)`, meta: { path: abs, totalLines: 0 } }
    }
    let first = 1
    let last = total
    if (args.view_range !== undefined) {
      const range = args.view_range
      const [start, end] = range
      if (range.length !== 2 || !Number.isInteger(start) || !Number.isInteger(end)) {
        return fail(
          'INVALID_RANGE',
          'view_range must be two integers [start, end]: 1-based lines, with end -1 meaning the last line.',
        )
      }
      if (start < 1 || start > total)
        return fail(
          'INVALID_RANGE',
          `view_range start ${start} is outside ${abs}, which has ${plural(total, 'line')}. Use a start from 1 to ${total}.`,
        )
      if (end !== -1 && (end < start || end > total)) {
        return fail(
          'INVALID_RANGE',
          `view_range end ${end} is invalid for ${abs} (start ${start}, ${plural(total, 'line')}). Use an end from ${start} to ${total}, or -1 for the last line.`,
        )
      }
      first = start
      last = end === -1 ? total : end
    }
    const shown = numbered(lines, first, last, config.maxLineLength, config.maxViewBytes)
    const notes: string[] = []
    if (shown.last < last)
      notes.push(
        `Output stopped at line ${shown.last} of ${total} (size limit); view with view_range [${shown.last + 1}, ${last === total ? -1 : last}] to continue.`,
      )
    else if (first > 1 || last < total) notes.push(`Showing lines ${first}-${last} of ${total}.`)
    if (shown.cut > 0) notes.push(`${plural(shown.cut, 'long line')} cut at ${config.maxLineLength} characters.`)
    return {
      content: notes.length > 0 ? `${shown.text}\n\n(${notes.join(' ')})` : shown.text,
      meta: { path: abs, totalLines: total, firstLine: first, lastLine: shown.last },
    }
  }

  function snippet(after: string, change: Replaced): string {
    const lines = linesOf(after)
    if (lines.length === 0) return '(the file is now empty)'
    const first = Math.max(1, change.firstLine - config.snippetLines)
    const last = Math.min(lines.length, change.lastLine + config.snippetLines)
    if (first > last) return '(the file is now empty)'
    return numbered(lines, first, last, config.maxLineLength, 16 * 1024).text
  }

  async function mutate(
    abs: string,
    call: ToolCallContext,
    change: (text: string) => Replaced,
    verb: string,
  ): Promise<ToolOutput> {
    const large = await checkFile(abs)
    if (large) return large
    let done: Replaced | undefined
    const result = await ctx.fs.edit(
      abs,
      (text) => {
        done = change(text)
        return done.after
      },
      { ...session(call), signal: call.signal },
    )
    const r = done!
    const where = r.firstLine === r.lastLine ? `line ${r.firstLine}` : `lines ${r.firstLine}-${r.lastLine}`
    return {
      content: `${verb} in ${abs} (now ${where}). The edited part with ${config.snippetLines} lines of context:\n${snippet(result.after, r)}\nCheck it, and edit again if it is not right.`,
      meta: { path: abs, firstLine: r.firstLine, lastLine: r.lastLine, bytes: result.stat.size },
    }
  }

  ctx.tools.register<EditorArgs>({
    name: 'str_replace_editor',
    description:
      'View, create and edit files. Commands:\n' +
      '- view: show a file with line numbers (view_range [start, end] selects 1-based lines, end -1 for the last line), ' +
      'or list a directory two levels deep.\n' +
      '- create: write file_text as the whole content of path (missing directories are created).\n' +
      '- str_replace: replace old_str, which must occur exactly once in the file, by new_str (empty or left out deletes it). ' +
      'Match the file exactly, whitespace included, without the line numbers shown by view.\n' +
      '- insert: insert new_str as new lines after line insert_line (0 inserts at the top).\n' +
      'Relative paths are taken against the working directory. An existing file must be viewed before it is changed, and again if it changed since.',
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', enum: ['view', 'create', 'str_replace', 'insert'], description: 'What to do.' },
        path: {
          type: 'string',
          minLength: 1,
          description: 'File or directory, absolute or relative to the working directory.',
        },
        file_text: { type: 'string', description: 'create: the complete content of the new file.' },
        old_str: { type: 'string', description: 'str_replace: the exact text to replace (must occur once).' },
        new_str: {
          type: 'string',
          description: 'str_replace: the replacement (default empty); insert: the lines to insert.',
        },
        insert_line: {
          type: 'integer',
          minimum: 0,
          description: 'insert: the line after which new_str goes (0 for the top).',
        },
        view_range: {
          type: 'array',
          items: { type: 'integer' },
          minItems: 2,
          maxItems: 2,
          description: 'view: [start, end] 1-based lines; end -1 means the last line.',
        },
      },
      required: ['command', 'path'],
      additionalProperties: false,
    },
    concurrencySafe: (args) => args.command === 'view',
    async execute(args, call) {
      const missing = NEEDS[args.command].filter((key) => args[key] === undefined)
      if (missing.length > 0) {
        return fail(
          'MISSING_PARAMETER',
          `the ${args.command} command needs ${missing.join(' and ')}. Call str_replace_editor again with ${missing.length === 1 ? 'it' : 'them'}.`,
        )
      }
      try {
        const abs = ctx.fs.resolve(args.path, call.cwd)
        switch (args.command) {
          case 'view':
            return await view(args, abs, call)
          case 'create': {
            const result = await ctx.fs.writeFile(abs, args.file_text!, {
              ...session(call),
              createParents: true,
              signal: call.signal,
            })
            const lines = linesOf(args.file_text!).length
            return {
              content: `${result.created ? 'Created' : 'Overwrote'} ${abs} (${plural(lines, 'line')}, ${result.stat.size} bytes).`,
              meta: { path: abs, created: result.created, bytes: result.stat.size, lines },
            }
          }
          case 'str_replace': {
            const newStr = args.new_str ?? ''
            if (args.old_str === '')
              return fail(
                'EMPTY_OLD_STR',
                'old_str is empty; give the exact text to replace. To add text without replacing any, use insert; to write a whole file, use create.',
              )
            if (args.old_str === newStr)
              return fail(
                'NO_CHANGE',
                'old_str and new_str are identical, so nothing would change. Put the new text in new_str.',
              )
            return await mutate(abs, call, (text) => replaceOnce(text, args.old_str!, newStr, abs), 'Replaced the text')
          }
          case 'insert':
            return await mutate(
              abs,
              call,
              (text) => insertAfter(text, args.insert_line!, args.new_str!, abs),
              `Inserted ${plural(linesOf(args.new_str!).length || 1, 'line')} after line ${args.insert_line}`,
            )
        }
      } catch (error) {
        if (error instanceof FsError && error.code === 'NOT_FOUND') {
          return fail(
            error.code,
            `${error.message}. Check the path (view a directory to list it), or use create to make a new file.`,
          )
        }
        if (error instanceof FsError || error instanceof EditorError) return fail(error.code, error.message)
        throw error
      }
    },
  })
}
