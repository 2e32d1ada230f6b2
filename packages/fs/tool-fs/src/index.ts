// @dsh/tool-fs: the model-facing `read`, `read_image`, `write` and `edit` tools over `ctx.fs`.
//
// The tools own names, schemas, windowing and result text. Freshness rules are not here: a policy
// plugin (fs-observation-policy) refuses through the `fs/before-write` gate, and the refusal
// arrives as an FsError whose code and sentence are passed to the model unchanged.
import { relative } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { FsError } from '@dsh/fs'
import { FILE_ESCALATION_PARAMETER, isSandboxedFs, type SandboxEscalationRequest } from '@dsh/sandbox'
import type { ToolCallContext, ToolOutput } from '@dsh/tools'
import { toolError as fail } from '@dsh/tools'
import { looksBinary, sniffImage } from './detect.ts'
import { MatchError, replaceExact } from './edit.ts'
import { renderWindow, splitLines } from './window.ts'
import { registerPromptSection } from './prompt.ts'

export { looksBinary, sniffImage } from './detect.ts'
export { MatchError, replaceExact, type Replacement } from './edit.ts'
export { renderWindow, splitLines } from './window.ts'

export interface ToolFsConfig {
  defaultLimit: number
  maxLineLength: number
  maxOutputBytes: number
  maxFileBytes: number
  maxImageBytes: number
  diffContext: number
  maxDiffBytes: number
  readImage: boolean
}

export const Config: Schema<Partial<ToolFsConfig>, ToolFsConfig> = Schema.object({
  defaultLimit: Schema.natural().min(1).default(2000).description('Lines `read` returns when the call gives no limit.'),
  maxLineLength: Schema.natural()
    .min(80)
    .default(2000)
    .description('Characters of one line shown before it is cut with a marker.'),
  maxOutputBytes: Schema.natural()
    .min(1024)
    .default(256 * 1024)
    .description('Bytes of one `read` result; the window stops early at a line boundary.'),
  maxFileBytes: Schema.natural()
    .min(1024)
    .default(32 * 1024 * 1024)
    .description('Larger files are not read (the model is told to use grep or bash).'),
  maxImageBytes: Schema.natural()
    .min(1024)
    .default(5 * 1024 * 1024)
    .description('Largest image `read_image` returns.'),
  diffContext: Schema.natural().default(3).description('Context lines of the unified diff in `meta.diff`.'),
  maxDiffBytes: Schema.natural()
    .default(4 * 1024 * 1024)
    .description('Edits of larger files carry no diff (meta.diffOmitted).'),
  readImage: Schema.boolean().default(true).description('Register `read_image`.'),
})

export const name = 'tool-fs'
export const inject = ['tools', 'fs']

/** Provider and policy errors become model-visible results; anything else is a bug and propagates. */
function fromError(error: unknown): ToolOutput {
  if (error instanceof FsError || error instanceof MatchError) return fail(error.code, error.message)
  throw error
}

function sizeLabel(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`
}

export { PROMPT_SECTION } from './prompt.ts'

export function apply(ctx: Context, config: ToolFsConfig): void {
  registerPromptSection(ctx)
  const resolve = (path: string, call: ToolCallContext) => ctx.fs.resolve(path, call.cwd)
  const session = (call: ToolCallContext) => (call.sessionId !== undefined ? { session: call.sessionId } : {})

  async function tooLarge(abs: string, limit: number, what: string): Promise<ToolOutput | undefined> {
    const stat = await ctx.fs.stat(abs)
    if (stat.kind === 'directory')
      return fail('IS_DIRECTORY', `${abs} is a directory, not a file. Use glob to list files in it.`)
    if (stat.size > limit) {
      return fail(
        'FILE_TOO_LARGE',
        `${abs} is ${sizeLabel(stat.size)}, over the ${sizeLabel(limit)} limit of ${what}. Use grep to find the part you need, or bash (e.g. sed -n) to print a range.`,
      )
    }
    return undefined
  }

  ctx.tools.register<{ file_path: string; offset?: number; limit?: number }>({
    name: 'read',
    description:
      'Read a text file as numbered lines ("N<tab>text"; the number and tab are not file content). ' +
      `Up to ${config.defaultLimit} lines by default; page with offset (1-based) and limit. Lines over ` +
      `${config.maxLineLength} characters are cut. Read a file before you edit or overwrite it.`,
    parameters: {
      type: 'object',
      properties: {
        file_path: {
          type: 'string',
          minLength: 1,
          description: 'Path of the file, absolute or relative to the working directory.',
        },
        offset: { type: 'integer', minimum: 1, description: '1-based line to start from (default 1).' },
        limit: {
          type: 'integer',
          minimum: 1,
          description: `Number of lines to return (default ${config.defaultLimit}).`,
        },
      },
      required: ['file_path'],
      additionalProperties: false,
    },
    concurrencySafe: true,
    async execute(args, call) {
      try {
        const abs = resolve(args.file_path, call)
        const large = await tooLarge(abs, config.maxFileBytes, 'the read tool')
        if (large) return large
        const { bytes, stat } = await ctx.fs.readFile(abs, { ...session(call), signal: call.signal })
        const image = sniffImage(bytes)
        if (image) {
          const hint = config.readImage
            ? 'call read_image with this file_path to view it.'
            : 'no image viewer tool is available here.'
          return fail(
            'IS_IMAGE',
            `${abs} is a ${image.label} image (${sizeLabel(stat.size)}). The read tool shows text only; ${hint}`,
          )
        }
        if (looksBinary(bytes)) {
          return fail(
            'BINARY_FILE',
            `${abs} is a binary file (${sizeLabel(stat.size)}) and has no text to show. Use bash (e.g. file, xxd, strings) if you need to inspect it.`,
          )
        }
        const text = new TextDecoder().decode(bytes)
        const offset = args.offset ?? 1
        const window = renderWindow(text, {
          offset,
          limit: args.limit ?? config.defaultLimit,
          maxLineLength: config.maxLineLength,
          maxOutputBytes: config.maxOutputBytes,
        })
        if (!window.ok) {
          return fail(
            'OFFSET_OUT_OF_RANGE',
            `offset ${offset} is past the end of ${abs}, which has ${plural(window.totalLines, 'line')}. Use an offset from 1 to ${window.totalLines}.`,
          )
        }
        const meta = {
          path: abs,
          totalLines: window.totalLines,
          firstLine: window.first,
          lastLine: window.last,
          bytes: stat.size,
        }
        if (window.totalLines === 0) return { content: `(${abs} is empty.)`, meta }
        const notes: string[] = []
        if (window.first > 1 || window.last < window.totalLines) {
          notes.push(`Showing lines ${window.first}-${window.last} of ${window.totalLines}.`)
          if (window.last < window.totalLines) notes.push(`Call read with offset=${window.last + 1} to continue.`)
        }
        if (window.truncatedLines > 0)
          notes.push(
            `${plural(window.truncatedLines, 'line')} longer than ${config.maxLineLength} characters ${window.truncatedLines === 1 ? 'was' : 'were'} cut.`,
          )
        return { content: notes.length ? `${window.text}\n\n(${notes.join(' ')})` : window.text, meta }
      } catch (error) {
        return fromError(error)
      }
    },
  })

  if (config.readImage) {
    ctx.tools.register<{ file_path: string }>({
      name: 'read_image',
      // The line load_tools lists while this tool is deferred (@dsh/tool-deferral).
      summary: 'View an image file (PNG, JPEG, GIF or WebP).',
      defer: true,
      description:
        'View an image file (PNG, JPEG, GIF or WebP, detected from its content). Returns the image itself. ' +
        `Images over ${sizeLabel(config.maxImageBytes)} are refused. Relative paths are taken against the working directory.`,
      parameters: {
        type: 'object',
        properties: { file_path: { type: 'string', minLength: 1, description: 'Path of the image file.' } },
        required: ['file_path'],
        additionalProperties: false,
      },
      concurrencySafe: true,
      async execute(args, call) {
        try {
          const abs = resolve(args.file_path, call)
          const large = await tooLarge(abs, config.maxImageBytes, 'read_image')
          if (large) return large
          const { bytes, stat } = await ctx.fs.readFile(abs, { ...session(call), signal: call.signal })
          const image = sniffImage(bytes)
          if (!image)
            return fail('NOT_AN_IMAGE', `${abs} is not a PNG, JPEG, GIF or WebP image. Use read for text files.`)
          return {
            content: [
              { type: 'text', text: `${abs}: ${image.label} image, ${sizeLabel(stat.size)}.` },
              { type: 'image', mediaType: image.mediaType, data: Buffer.from(bytes).toString('base64') },
            ],
            meta: { path: abs, mediaType: image.mediaType, bytes: stat.size },
          }
        } catch (error) {
          return fromError(error)
        }
      },
    })
  }

  // Over a confining filesystem, write and edit take `sandbox_escalation`: the provider asks the user
  // to allow one change outside the writable roots (fs-sandbox).
  const sandboxed = isSandboxedFs(ctx.fs)
  const escalation = sandboxed ? { sandbox_escalation: FILE_ESCALATION_PARAMETER } : {}
  const escalate = (args: { sandbox_escalation?: SandboxEscalationRequest }, call: ToolCallContext) =>
    sandboxed && args.sandbox_escalation !== undefined
      ? { sandboxEscalation: args.sandbox_escalation, callId: call.callId }
      : {}

  ctx.tools.register<{ file_path: string; content: string; sandbox_escalation?: SandboxEscalationRequest }>({
    name: 'write',
    description:
      'Create or overwrite a whole file (missing parent directories are created). ' +
      'An existing file must have been read and not changed since.',
    parameters: {
      type: 'object',
      properties: {
        file_path: {
          type: 'string',
          minLength: 1,
          description: 'Path of the file, absolute or relative to the working directory.',
        },
        content: { type: 'string', description: 'The complete new content of the file.' },
        ...escalation,
      },
      required: ['file_path', 'content'],
      additionalProperties: false,
    },
    async execute(args, call) {
      try {
        const abs = resolve(args.file_path, call)
        const result = await ctx.fs.writeFile(abs, args.content, {
          ...session(call),
          ...escalate(args, call),
          createParents: true,
          signal: call.signal,
        })
        const lines = splitLines(args.content).length
        const verb = result.created ? 'Created' : 'Overwrote'
        return {
          content: `${verb} ${abs} (${plural(lines, 'line')}, ${sizeLabel(result.stat.size)}).`,
          meta: { path: abs, created: result.created, bytes: result.stat.size, lines },
        }
      } catch (error) {
        return fromError(error)
      }
    },
  })

  ctx.tools.register<{
    file_path: string
    old_string: string
    new_string: string
    replace_all?: boolean
    sandbox_escalation?: SandboxEscalationRequest
  }>({
    name: 'edit',
    description:
      "Replace exact text in a file: old_string (whitespace included, without read's line-number prefix) must occur " +
      'exactly once unless replace_all. The file must have been read and not changed since. ' +
      'An empty old_string creates a new file.',
    parameters: {
      type: 'object',
      properties: {
        file_path: {
          type: 'string',
          minLength: 1,
          description: 'Path of the file, absolute or relative to the working directory.',
        },
        old_string: { type: 'string', description: 'The exact text to replace.' },
        new_string: { type: 'string', description: 'The text to put in its place (must differ from old_string).' },
        replace_all: {
          type: 'boolean',
          description: 'Replace every occurrence instead of requiring exactly one (default false).',
        },
        ...escalation,
      },
      required: ['file_path', 'old_string', 'new_string'],
      additionalProperties: false,
    },
    async execute(args, call) {
      if (args.old_string === args.new_string) {
        return fail(
          'NO_CHANGE',
          'old_string and new_string are identical, so the edit would change nothing. Give the new text in new_string.',
        )
      }
      try {
        const abs = resolve(args.file_path, call)
        const display = relative(call.cwd, abs) || abs
        if (args.old_string === '' && !(await ctx.fs.exists(abs))) {
          const result = await ctx.fs.writeFile(abs, args.new_string, {
            ...session(call),
            ...escalate(args, call),
            createParents: true,
            signal: call.signal,
          })
          return {
            content: `Created ${abs} (${plural(splitLines(args.new_string).length, 'line')}).`,
            meta: {
              path: abs,
              created: true,
              replacements: 0,
              ...(await diffMeta(display, '', args.new_string, result.stat.size)),
            },
          }
        }
        let replacement: ReturnType<typeof replaceExact> | undefined
        const result = await ctx.fs.edit(
          abs,
          (text) => {
            replacement = replaceExact(text, args.old_string, args.new_string, args.replace_all === true, abs)
            return replacement.after
          },
          { ...session(call), ...escalate(args, call), signal: call.signal },
        )
        const r = replacement!
        const where = r.firstLine === r.lastLine ? `line ${r.firstLine}` : `lines ${r.firstLine}-${r.lastLine}`
        const what =
          r.count === 1
            ? `replaced 1 occurrence (now ${where})`
            : `replaced all ${r.count} occurrences (the first is now ${where})`
        return {
          content: `Edited ${abs}: ${what}.${r.crlf ? ' The file uses CRLF line endings; they were kept.' : ''}`,
          meta: {
            path: abs,
            created: false,
            replacements: r.count,
            ...(await diffMeta(display, result.before, result.after, result.before.length + result.after.length)),
          },
        }
      } catch (error) {
        return fromError(error)
      }
    },
  })

  async function diffMeta(
    display: string,
    before: string,
    after: string,
    size: number,
  ): Promise<{ diff: string } | { diffOmitted: true }> {
    if (size > config.maxDiffBytes) return { diffOmitted: true }
    // `diff` (about 20 modules) loads at the first edit, not at every boot.
    const { createTwoFilesPatch } = await loadDiff()
    return {
      diff: createTwoFilesPatch(`a/${display}`, `b/${display}`, before, after, undefined, undefined, {
        context: config.diffContext,
      }),
    }
  }
}

let diffModule: Promise<typeof import('diff')> | undefined
const loadDiff = () => (diffModule ??= import('diff'))
