// @dsh/spill-policy: keeps oversized plain-text tool results out of the model's context. A
// `tools/post-execute` listener; after the inner listeners ran it measures the final text, saves
// the whole of it through `ctx.spillStore`, and replaces the model-facing content by a head/tail
// preview, an omission marker and the store's locator and retrieval hint.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { JsonObject, PostExecutePayload, ToolOutput } from '@dsh/tools'
import type {} from '@dsh/spill'
import { preview, type Preview } from './preview.ts'

export { lineCount, preview, type Preview, type PreviewOptions } from './preview.ts'

export interface SpillPolicyConfig {
  maxInlineBytes: number
  headBytes: number
  tailBytes: number
  exclude: string[]
}

export const Config: Schema<Partial<SpillPolicyConfig>, SpillPolicyConfig> = Schema.object({
  maxInlineBytes: Schema.natural()
    .min(1024)
    .default(32 * 1024)
    .description('Results with more UTF-8 bytes of text than this are spilled.'),
  headBytes: Schema.natural()
    .min(256)
    .default(20 * 1024)
    .description('Bytes of the beginning kept in the preview.'),
  tailBytes: Schema.natural()
    .min(0)
    .default(8 * 1024)
    .description('Bytes of the end kept in the preview.'),
  exclude: Schema.array(Schema.string()).default([]).description('Tool names whose results are never spilled.'),
})

export const name = 'spill-policy'
export const inject = ['tools', 'spillStore']

/** Room the marker and the closing note need besides head and tail. */
const NOTE_BUDGET = 1024

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1).replace(/\.0$/, '')} KiB`
  return `${(bytes / 1024 / 1024).toFixed(1).replace(/\.0$/, '')} MiB`
}

const num = (n: number) => n.toLocaleString('en-US')

/** The text of an output when it is plain text (no image blocks), else undefined. */
function plainText(output: ToolOutput): string | undefined {
  if (typeof output.content === 'string') return output.content
  if (!output.content.every((block) => block.type === 'text')) return undefined
  return output.content.map((block) => (block as { text: string }).text).join('\n')
}

function marker(p: Preview): string {
  const span =
    p.firstOmittedLine === p.lastOmittedLine
      ? `line ${num(p.firstOmittedLine)}`
      : `lines ${num(p.firstOmittedLine)}-${num(p.lastOmittedLine)}`
  return `[... ${num(p.omittedBytes)} bytes omitted (${span} of ${num(p.totalLines)}) ...]`
}

export function apply(ctx: Context, config: SpillPolicyConfig): void {
  if (config.headBytes + config.tailBytes + NOTE_BUDGET > config.maxInlineBytes) {
    throw new Error(
      `spill-policy: headBytes (${config.headBytes}) + tailBytes (${config.tailBytes}) + ${NOTE_BUDGET} bytes for the notes must not exceed maxInlineBytes (${config.maxInlineBytes})`,
    )
  }
  const exclude = new Set(config.exclude)

  ctx.on('tools/post-execute', async (payload: PostExecutePayload, next) => {
    await next()
    if (exclude.has(payload.tool.name)) return
    const output = payload.output
    const text = plainText(output)
    if (text === undefined || Buffer.byteLength(text, 'utf8') <= config.maxInlineBytes) return
    const cut = preview(text, config)
    if (!cut) return
    const size = `${formatBytes(cut.totalBytes)} (${num(cut.totalLines)} lines)`
    const limit = formatBytes(config.maxInlineBytes)
    let note: string
    let spill: JsonObject
    try {
      const record = await ctx.spillStore.save({
        ...(payload.context.sessionId !== undefined ? { sessionId: payload.context.sessionId } : {}),
        callId: payload.call.callId,
        toolName: payload.tool.name,
        text,
      })
      note =
        `[This result is ${size}, over the ${limit} inline limit, so only its beginning and end are shown. ` +
        `The full result was saved to this file:\n${record.locator}\n${record.hint}]`
      spill = { locator: record.locator, bytes: record.bytes, lines: cut.totalLines, omittedBytes: cut.omittedBytes }
    } catch (error) {
      const code = (error as { code?: unknown })?.code
      const message = error instanceof Error ? error.message : String(error)
      ctx
        .logger('spill-policy')
        .warn('could not spill the result of %s (%s): %s', payload.tool.name, payload.call.callId, message)
      note =
        `[This result is ${size}, over the ${limit} inline limit, so only its beginning and end are shown. ` +
        `Saving the full result failed (${message}), so the omitted part is not available. ` +
        'If you need it, run the command again with narrower output (filter it, or print only a range).]'
      spill = {
        failed: typeof code === 'string' ? code : 'IO',
        message,
        bytes: cut.totalBytes,
        lines: cut.totalLines,
        omittedBytes: cut.omittedBytes,
      }
    }
    const content = `${cut.head}${cut.head.endsWith('\n') ? '' : '\n'}${marker(cut)}\n${cut.tail}${cut.tail.endsWith('\n') ? '' : '\n'}\n${note}`
    payload.output = { ...output, content, meta: { ...(output.meta ?? {}), spill } }
  })
}
