// @dsh/attachment: content-addressed image attachments. It defines the store seam
// (`ctx.attachments`, provided by @dsh/attachment-local), the reference token a message carries
// (`[image sha256:<hex> <name>]`), image sniffing, and (default export) the plugin that turns
// tokens in user messages into image blocks for models that accept images, and into a one-line
// "unavailable" description for models that do not.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { RequestPayload } from '@dsh/agent'
import type { Message, TextBlock, UserContentBlock } from '@dsh/llm'
import type {} from '@dsh/llm'
import { sniffImage, type ImageInfo } from './image.ts'
import { CodedError } from '@dsh/brand'

export { sniffImage, type ImageInfo } from './image.ts'

export type AttachmentId = `sha256:${string}`

export interface AttachmentRef extends ImageInfo {
  id: AttachmentId
  bytes: number
  name?: string
}

export type AttachmentErrorCode =
  | 'NOT_AN_IMAGE'
  | 'TOO_LARGE'
  | 'TOO_MANY_PIXELS'
  | 'NOT_FOUND'
  | 'CORRUPT'
  | 'BAD_ID'
  | 'EMPTY'

export class AttachmentError extends CodedError<AttachmentErrorCode> {
  override name = 'AttachmentError'
}

/** The store seam. */
export interface AttachmentStore {
  /** Admits and stores an image (idempotent by content); throws AttachmentError. */
  put(data: Uint8Array, options?: { name?: string }): Promise<AttachmentRef>
  /** Reads one back, re-checking its digest and format; throws AttachmentError. */
  get(id: string): Promise<{ ref: AttachmentRef; data: Buffer }>
  has(id: string): Promise<boolean>
  /** The file of a stored object (for export). */
  pathOf(id: string): string
}

declare module 'cordis' {
  interface Context {
    attachments: AttachmentStore
  }
}

const ID = /^sha256:[0-9a-f]{64}$/
export const isAttachmentId = (id: string): id is AttachmentId => ID.test(id)

/** The token a message carries for an attachment. Names lose brackets and newlines. */
export function attachmentToken(ref: Pick<AttachmentRef, 'id' | 'name'>): string {
  const name = (ref.name ?? '').replace(/[\][\r\n]/g, '_').trim()
  return `[image ${ref.id}${name ? ` ${name}` : ''}]`
}

const TOKEN = /\[image (sha256:[0-9a-f]{64})(?: ([^\]\n]*))?\]/g

/** Every attachment token in `text`, in order. */
export function findTokens(text: string): Array<{ id: AttachmentId; name?: string; index: number; length: number }> {
  return [...text.matchAll(TOKEN)].map((m) => ({
    id: m[1] as AttachmentId,
    ...(m[2] ? { name: m[2] } : {}),
    index: m.index!,
    length: m[0].length,
  }))
}

/** Splits `text` at its tokens: text parts and the tokens between them. */
export async function expandText(
  text: string,
  resolve: (token: { id: AttachmentId; name?: string }) => Promise<UserContentBlock>,
): Promise<UserContentBlock[]> {
  const out: UserContentBlock[] = []
  let at = 0
  for (const token of findTokens(text)) {
    const before = text.slice(at, token.index)
    if (before.trim()) out.push({ type: 'text', text: before })
    out.push(await resolve(token))
    at = token.index + token.length
  }
  const rest = text.slice(at)
  if (rest.trim() || out.length === 0) out.push({ type: 'text', text: rest })
  return out
}

export const name = 'attachment'
export const inject = ['attachments', 'llm']

export interface AttachmentConfig {
  /** Send images to models whose catalog entry says `supportsImages` (else describe them). */
  images: 'auto' | 'never'
}
export const Config: Schema<Partial<AttachmentConfig>, AttachmentConfig> = Schema.object({
  images: Schema.union(['auto', 'never'] as const)
    .default('auto')
    .description('auto: images go to models that accept them; never: always described as text.'),
}) as Schema<Partial<AttachmentConfig>, AttachmentConfig>

const unavailable = (label: string, why: string): TextBlock => ({ type: 'text', text: `[image ${label}: ${why}]` })

export function apply(ctx: Context, config: Partial<AttachmentConfig> = {}): void {
  const mode = config.images ?? 'auto'
  // The log keeps the token (a content-addressed reference); the request gets the pixels. The
  // store is immutable by digest, so the same log always derives the same request.
  ctx.on('agent/request', async (payload: RequestPayload, next) => {
    const { request } = payload
    const hasToken = request.messages.some(
      (m) => m.role === 'user' && m.content.some((b) => b.type === 'text' && b.text.includes('[image sha256:')),
    )
    if (!hasToken) return next()
    const info =
      mode === 'auto'
        ? await ctx.llm.resolveModelInfo(request.provider, request.model).catch(() => undefined)
        : undefined
    const vision = info?.supportsImages === true
    const messages: Message[] = []
    for (const message of request.messages) {
      if (message.role !== 'user') {
        messages.push(message)
        continue
      }
      const content: UserContentBlock[] = []
      for (const block of message.content) {
        if (block.type !== 'text' || !block.text.includes('[image sha256:')) {
          content.push(block)
          continue
        }
        content.push(
          ...(await expandText(block.text, async ({ id, name: label = id }) => {
            if (!vision)
              return unavailable(
                label,
                `an image the user attached; the current model (${request.provider}/${request.model}) cannot see images, so only its name is given`,
              )
            try {
              const { ref, data } = await ctx.attachments.get(id)
              return { type: 'image', mediaType: ref.mediaType, data: data.toString('base64') }
            } catch (error) {
              return unavailable(label, `the attached image is not available (${(error as Error).message})`)
            }
          })),
        )
      }
      messages.push({ ...message, content })
    }
    request.messages = messages
    return next()
  })
}

export default { name, inject, Config, apply }

/** Admission check shared by providers: format from the bytes, limits. Throws AttachmentError. */
export function admit(data: Uint8Array, limits: { maxBytes: number; maxPixels: number }): ImageInfo {
  if (data.length === 0) throw new AttachmentError('EMPTY', 'the upload is empty')
  if (data.length > limits.maxBytes)
    throw new AttachmentError('TOO_LARGE', `the image is ${data.length} bytes; the limit is ${limits.maxBytes} bytes`)
  const info = sniffImage(data)
  if (!info) throw new AttachmentError('NOT_AN_IMAGE', 'not a PNG, JPEG, GIF or WebP image (or the file is truncated)')
  if (info.width * info.height > limits.maxPixels)
    throw new AttachmentError(
      'TOO_MANY_PIXELS',
      `the image is ${info.width}x${info.height} pixels; the limit is ${limits.maxPixels} pixels`,
    )
  return info
}
