// Resource subscriptions: a resource a human `@`-mentioned in a session is subscribed to
// (`resources/subscribe`) when its server offers subscriptions. The server's
// `notifications/resources/updated` for it is logged in every session that mentioned it
// (`mcp/resource-updated`, not model-visible) and, before that session's next model request, the
// resource is read again and its current text added as one context message. A URI no live
// session mentions any more is unsubscribed when its next update arrives; a reconnected server
// is subscribed again to every URI still watched.
import type { ReadResourceResult } from '@modelcontextprotocol/sdk/types.js'
import { type EnteredMessage, expandMentions, MENTION_SOURCE, mentionText, renderResource } from './mentions.ts'
import type { SessionStore } from '@dsh/session'
import type { Client } from './sdk.ts'

/** What a subscription needs of a connection (McpServerConnection). */
export interface SubscribableConnection {
  readonly name: string
  readonly scope?: string
  /** The live server's capabilities include `resources` (it may be `@`-mentioned). */
  readonly offersResources: boolean
  /** The live server's capabilities include `resources.subscribe`. */
  readonly subscribable: boolean
  readResource(uri: string): Promise<ReadResourceResult>
  request<T>(
    signal: AbortSignal | undefined,
    send: (client: Client, options: { timeout: number; signal?: AbortSignal }) => Promise<T>,
  ): Promise<T>
}

/** The session event an update of a mentioned resource is logged as. Not model-visible. */
export interface ResourceUpdatedNotice {
  server: string
  uri: string
  scope?: string
}

/** A context message for the model (the pre-step's `InjectedContext` shape). */
export interface UpdateNote {
  content: string
  source: { kind: 'plugin'; plugin: string; label: string }
}

export interface SubscriptionHost {
  /** Whether the session still exists (a deleted one stops watching). */
  live(sessionId: string): boolean
  /** Appends `mcp/resource-updated` to a session. */
  log(sessionId: string, notice: ResourceUpdatedNotice): void
  warn(message: string): void
  /** Characters of an updated resource's text included at most (`mentionMaxChars`). */
  maxChars(): number
}

/** Subscriptions whose updates are logged in the sessions of `ctx.sessions` (when mounted). */
export function sessionSubscriptions(
  sessions: () => SessionStore | undefined,
  warn: (message: string) => void,
  maxChars: () => number,
): ResourceSubscriptions {
  return new ResourceSubscriptions({
    live: (id) => sessions()?.get(id) !== undefined,
    log: (id, notice) => {
      try {
        sessions()?.get(id)?.append('mcp/resource-updated', notice)
      } catch (error) {
        warn(`could not log a resource update: ${(error as Error).message}`)
      }
    },
    warn,
    maxChars,
  })
}

const attr = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;')

/** The model-facing note of an update: what changed, then the resource as it reads now. */
export function renderUpdate(server: string, uri: string, read: ReadResourceResult | Error, maxChars: number): string {
  const head = `The MCP server "${server}" reports that the resource @${server}:${uri}, mentioned earlier in this session, changed.`
  if (read instanceof Error)
    return `<resource-updated server="${attr(server)}" uri="${attr(uri)}">${head} It could not be read again: ${read.message.replace(/\s+/g, ' ').slice(0, 300)}</resource-updated>`
  return `<resource-updated server="${attr(server)}" uri="${attr(uri)}">${head} Its content now:</resource-updated>\n${renderResource(server, uri, read, maxChars)}`
}

export class ResourceSubscriptions {
  /** Sessions watching each URI, per connection. */
  private readonly watched = new Map<SubscribableConnection, Map<string, Set<string>>>()
  /** URIs subscribed on the connection's live client. */
  private readonly subscribed = new Map<SubscribableConnection, Set<string>>()
  /** Updates not told to the model yet, per session, in arrival order (one per connection and URI). */
  private readonly pending = new Map<string, Map<string, { connection: SubscribableConnection; uri: string }>>()
  private readonly connectedNow = new WeakSet<SubscribableConnection>()

  constructor(private readonly host: SubscriptionHost) {}

  /**
   * A step's input with, after each human message, its `@server:uri` mentions of the servers
   * visible from `scope` (a scope's own server shadows a global one of the same name), each
   * readable one watched for the session; then the session's pending updates.
   */
  async expand<M extends EnteredMessage>(
    messages: readonly M[],
    connections: readonly SubscribableConnection[],
    scope: string | undefined,
    sessionId: string,
    limits: { maxMentions: number; mentionMaxChars: number },
  ): Promise<Array<M | UpdateNote>> {
    const offering = new Map<string, SubscribableConnection>()
    for (const entry of connections) {
      if (!entry.offersResources || (entry.scope !== undefined && entry.scope !== scope)) continue
      if (!offering.has(entry.name) || entry.scope !== undefined) offering.set(entry.name, entry)
    }
    const read = async (server: string, uri: string, trimmed?: string) => {
      const connection = offering.get(server)!
      const got = await mentionText(connection, uri, trimmed, limits.mentionMaxChars)
      if (got.read) await this.watch(connection, got.uri, sessionId)
      return got
    }
    const out = await expandMentions(messages, new Set(offering.keys()), limits.maxMentions, read)
    return [...out, ...(await this.take(sessionId))]
  }

  /**
   * A session mentioned `uri` of `connection` (and it could be read): watch it, subscribing once.
   * Settles when the subscription is in place (or failed, which is logged).
   */
  async watch(connection: SubscribableConnection, uri: string, sessionId: string): Promise<void> {
    if (!connection.subscribable) return
    let uris = this.watched.get(connection)
    if (!uris) this.watched.set(connection, (uris = new Map()))
    let sessions = uris.get(uri)
    if (!sessions) uris.set(uri, (sessions = new Set()))
    sessions.add(sessionId)
    await this.subscribe(connection, uri)
  }

  /** `notifications/resources/updated`: logged in each watching session and queued for its next step. */
  updated(connection: SubscribableConnection, uri: string): void {
    const sessions = this.watched.get(connection)?.get(uri)
    if (!sessions) return
    for (const id of [...sessions]) {
      if (this.host.live(id)) continue
      sessions.delete(id)
      this.pending.delete(id)
    }
    if (sessions.size === 0) {
      this.watched.get(connection)?.delete(uri)
      this.unsubscribe(connection, uri)
      return
    }
    for (const id of sessions) {
      let queue = this.pending.get(id)
      if (!queue) this.pending.set(id, (queue = new Map()))
      queue.set(`${connection.name}\u0000${connection.scope ?? ''}\u0000${uri}`, { connection, uri })
      this.host.log(id, {
        server: connection.name,
        uri,
        ...(connection.scope !== undefined ? { scope: connection.scope } : {}),
      })
    }
  }

  /**
   * A state change of a connection: one that (re)connected is subscribed again to every watched
   * URI (a new server process knows none); one that lost its client forgets what it subscribed.
   */
  state(entry: object | undefined, state: string): void {
    if (!entry || !('subscribable' in entry)) return
    const connection = entry as SubscribableConnection
    if (state !== 'connected') {
      this.connectedNow.delete(connection)
      this.subscribed.delete(connection)
      return
    }
    if (this.connectedNow.has(connection)) return
    this.connectedNow.add(connection)
    for (const uri of this.watched.get(connection)?.keys() ?? []) void this.subscribe(connection, uri)
  }

  /** The connection is gone for good: nothing of it is watched or pending. */
  forget(connection: object): void {
    this.watched.delete(connection as SubscribableConnection)
    this.subscribed.delete(connection as SubscribableConnection)
    for (const queue of this.pending.values())
      for (const [key, item] of queue) if (item.connection === connection) queue.delete(key)
  }

  /** The session's pending updates as context messages (each resource read again now); cleared. */
  async take(sessionId: string): Promise<UpdateNote[]> {
    const queue = this.pending.get(sessionId)
    if (!queue || queue.size === 0) return []
    this.pending.delete(sessionId)
    const notes: UpdateNote[] = []
    for (const { connection, uri } of queue.values()) {
      const read = await connection
        .readResource(uri)
        .catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))))
      notes.push({
        content: renderUpdate(connection.name, uri, read, this.host.maxChars()),
        source: { kind: 'plugin', plugin: MENTION_SOURCE, label: `@${connection.name}:${uri} (updated)` },
      })
    }
    return notes
  }

  private async subscribe(connection: SubscribableConnection, uri: string): Promise<void> {
    let uris = this.subscribed.get(connection)
    if (!uris) this.subscribed.set(connection, (uris = new Set()))
    if (uris.has(uri)) return
    uris.add(uri)
    await connection
      .request(undefined, (client, options) => client.subscribeResource({ uri }, options))
      .then(
        () => {},
        (error: Error) => {
          this.subscribed.get(connection)?.delete(uri)
          this.host.warn(`MCP server "${connection.name}": subscribing to ${uri} failed: ${error.message}`)
        },
      )
  }

  private unsubscribe(connection: SubscribableConnection, uri: string): void {
    if (!this.subscribed.get(connection)?.delete(uri)) return
    connection
      .request(undefined, (client, options) => client.unsubscribeResource({ uri }, options))
      .catch((error: Error) =>
        this.host.warn(`MCP server "${connection.name}": unsubscribing from ${uri} failed: ${error.message}`),
      )
  }
}
