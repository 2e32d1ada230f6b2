// `@server:uri` mentions of MCP resources in a human message. Each mention of a server that offers
// resources becomes one logged context message after the message, with the resource's text (or a
// one-line reason it has none), so what the model saw is in the log and survives a resume.
import type { ReadResourceResult } from '@modelcontextprotocol/sdk/types.js'
import type { CatalogSnapshot } from './server-catalog.ts'

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
export interface EnteredMessage {
  content: string | ReadonlyArray<{ type: string; text?: string }>
  source: { kind: string; references?: ReadonlyArray<{ kind: string; server?: string; uri?: string }> }
}

/**
 * The resources a human message mentions: with `references` (a client that marks what was picked:
 * the web composer), exactly the picked resources of `servers`; without them (TUI, headless), the
 * `@server:uri` words of its text.
 */
export function messageMentions(message: EnteredMessage, servers: ReadonlySet<string>): ResourceMention[] {
  const references = message.source.references
  if (references) {
    const out: ResourceMention[] = []
    for (const r of references) {
      if (r.kind !== 'resource' || !r.server || !r.uri || !servers.has(r.server)) continue
      if (!out.some((m) => m.server === r.server && m.uri === r.uri)) out.push({ server: r.server, uri: r.uri })
    }
    return out
  }
  const text =
    typeof message.content === 'string'
      ? message.content
      : message.content.flatMap((b) => (b.type === 'text' ? [b.text ?? ''] : [])).join('\n')
  return mentionedResources(text, servers)
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
    for (const mention of messageMentions(message, servers).slice(0, max)) {
      const got = await read(mention.server, mention.uri, mention.trimmed)
      out.push({
        content: got.content,
        source: { kind: 'plugin', plugin: MENTION_SOURCE, label: `@${mention.server}:${got.uri}` },
      })
    }
  }
  return out
}

/** A mentioned resource's text for the model (`read`), or a one-line note why there is none. */
export async function mentionText(
  connection: { name: string; readResource(uri: string): Promise<ReadResourceResult> },
  uri: string,
  trimmed: string | undefined,
  max: number,
): Promise<{ uri: string; content: string; read: boolean }> {
  try {
    return { uri, content: renderResource(connection.name, uri, await connection.readResource(uri), max), read: true }
  } catch (error) {
    if (trimmed) {
      const second = await connection.readResource(trimmed).catch(() => undefined)
      if (second) return { uri: trimmed, content: renderResource(connection.name, trimmed, second, max), read: true }
    }
    return { uri, content: renderUnavailable(connection.name, uri, (error as Error).message), read: false }
  }
}

/** One entry of an `@` menu: a resource (or a template, whose `{variables}` the user fills in). */
export interface ResourceCandidate {
  server: string
  uri: string
  name: string
  description?: string
  template: boolean
}

/**
 * The resources and templates of the servers offering resources that are visible from `scope`
 * (a scope's own server shadows a global one of the same name), as last listed, for `@` menus.
 */
export function resourceCandidates(
  connections: ReadonlyArray<{ name: string; scope?: string; offersResources: boolean; catalog(): CatalogSnapshot }>,
  scope?: string,
): ResourceCandidate[] {
  const visible = new Map<string, (typeof connections)[number]>()
  for (const entry of connections) {
    if (!entry.offersResources || (entry.scope !== undefined && entry.scope !== scope)) continue
    if (!visible.has(entry.name) || entry.scope !== undefined) visible.set(entry.name, entry)
  }
  const out: ResourceCandidate[] = []
  for (const [server, connection] of [...visible].sort(([a], [b]) => a.localeCompare(b))) {
    const { resources, templates } = connection.catalog()
    for (const r of resources)
      out.push({
        server,
        uri: r.uri,
        name: r.title ?? r.name,
        template: false,
        ...(r.description ? { description: r.description } : {}),
      })
    for (const t of templates)
      out.push({
        server,
        uri: t.uriTemplate,
        name: t.title ?? t.name,
        template: true,
        ...(t.description ? { description: t.description } : {}),
      })
  }
  return out
}
