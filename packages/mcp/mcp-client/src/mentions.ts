// `@server:uri` mentions of MCP resources in a human message. Each mention of a server that offers
// resources becomes one logged context message after the message, with the resource's text (or a
// one-line reason it has none), so what the model saw is in the log and survives a resume.
import type { ReadResourceResult } from '@modelcontextprotocol/sdk/types.js'

/** The source plugin of the context messages `@server:uri` mentions add. */
export const MENTION_SOURCE = '@dsh/mcp-client'

const TOKEN = /(^|\s)@([A-Za-z0-9_.-]+):(\S+)/g
const TRAILING = /[,.;:!?)\]}'"`]+$/

export interface ResourceMention {
  server: string
  uri: string
  /** The URI without trailing prose punctuation (tried when the URI as written cannot be read). */
  trimmed?: string
}

/** `@server:uri` tokens at a word boundary, in order, without duplicates; `@session:` is not one. */
export function mentionedResources(text: string, servers: ReadonlySet<string>): ResourceMention[] {
  const out: ResourceMention[] = []
  for (const match of text.matchAll(TOKEN)) {
    const server = match[2]
    const uri = match[3]
    if (!servers.has(server)) continue
    if (out.some((m) => m.server === server && m.uri === uri)) continue
    const trimmed = uri.replace(TRAILING, '')
    out.push(trimmed !== uri && trimmed !== '' ? { server, uri, trimmed } : { server, uri })
  }
  return out
}

const attr = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;')

/**
 * The model-facing text of a read resource: each text content in full up to `maxChars` (the rest
 * left out with a note), binary contents described.
 */
export function renderResource(server: string, uri: string, result: ReadResourceResult, maxChars: number): string {
  const head = `<resource server="${attr(server)}" uri="${attr(uri)}">`
  const parts: string[] = []
  let left = maxChars
  for (const content of result.contents) {
    const mime = content.mimeType ? ` (${content.mimeType})` : ''
    if ('text' in content && typeof content.text === 'string') {
      const text = content.text
      const shown = text.slice(0, Math.max(0, left))
      left -= shown.length
      const rest = text.length - shown.length
      const label = content.uri !== uri || result.contents.length > 1 ? `${content.uri}${mime}:\n` : ''
      parts.push(
        `${label}${shown}${rest > 0 ? `${shown.endsWith('\n') ? '' : '\n'}[… ${rest} more characters not included; read the resource for the rest]` : ''}`,
      )
    } else if ('blob' in content && typeof content.blob === 'string') {
      parts.push(
        `[binary content ${content.uri}${mime}, ${Math.floor((content.blob.length * 3) / 4)} bytes; not included]`,
      )
    }
  }
  const body = parts.length ? parts.join('\n\n') : '[the server returned no content for this resource]'
  return `${head}\n${body}${body.endsWith('\n') ? '' : '\n'}</resource>`
}

/** The note for a mention that could not be read. */
export function renderUnavailable(server: string, uri: string, reason: string): string {
  return `<resource server="${attr(server)}" uri="${attr(uri)}" unavailable="error">The user mentioned @${server}:${uri}, but it could not be read: ${reason.replace(/\s+/g, ' ').slice(0, 300)}</resource>`
}

/** A message of the pre-step payload, as far as mentions need it. */
interface EnteredMessage {
  content: string | ReadonlyArray<{ type: string; text?: string }>
  source: { kind: string }
}

/**
 * The messages with, after each human one, one context message per `@server:uri` it mentions
 * (at most `max` per message), read in order through `read`.
 */
export async function expandMentions<M extends EnteredMessage>(
  messages: readonly M[],
  servers: ReadonlySet<string>,
  max: number,
  read: (server: string, uri: string, trimmed?: string) => Promise<{ uri: string; content: string }>,
): Promise<Array<M | { content: string; source: { kind: 'plugin'; plugin: string; label: string } }>> {
  const out: Array<M | { content: string; source: { kind: 'plugin'; plugin: string; label: string } }> = []
  for (const message of messages) {
    out.push(message)
    if (message.source.kind !== 'human') continue
    const text =
      typeof message.content === 'string'
        ? message.content
        : message.content.flatMap((b) => (b.type === 'text' ? [b.text ?? ''] : [])).join('\n')
    for (const mention of mentionedResources(text, servers).slice(0, max)) {
      const got = await read(mention.server, mention.uri, mention.trimmed)
      out.push({
        content: got.content,
        source: { kind: 'plugin', plugin: MENTION_SOURCE, label: `@${mention.server}:${got.uri}` },
      })
    }
  }
  return out
}

/** A mentioned resource's text for the model, or a one-line note why there is none. */
export async function mentionText(
  connection: { name: string; readResource(uri: string): Promise<ReadResourceResult> },
  uri: string,
  trimmed: string | undefined,
  max: number,
): Promise<{ uri: string; content: string }> {
  try {
    return { uri, content: renderResource(connection.name, uri, await connection.readResource(uri), max) }
  } catch (error) {
    if (trimmed) {
      const second = await connection.readResource(trimmed).catch(() => undefined)
      if (second) return { uri: trimmed, content: renderResource(connection.name, trimmed, second, max) }
    }
    return { uri, content: renderUnavailable(connection.name, uri, (error as Error).message) }
  }
}
