// `@server:uri` mentions of MCP resources in a human message. Each mention of a server that offers
// resources becomes one logged context message after the message, with the resource's text (or a
// one-line reason it has none), so what the model saw is in the log and survives a resume.
import type { ReadResourceResult } from '@modelcontextprotocol/sdk/types.js'

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
