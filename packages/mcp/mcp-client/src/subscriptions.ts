// Resource subscriptions: a resource a human `@`-mentioned in a session is subscribed to
// (`resources/subscribe`) when its server offers subscriptions. The server's
// `notifications/resources/updated` for it is logged in every session that mentioned it
// (`mcp/resource-updated`, not model-visible) and, before that session's next model request, the
// resource is read again and its current text added as one context message. A URI no live
// session mentions any more is unsubscribed when its next update arrives; a reconnected server
// is subscribed again to every URI still watched. A session that enters the store with a log
// (resumed, reopened after a restart, forked) watches again what its log mentions
// (logged-mentions.ts), once the server is connected.
import type { ReadResourceResult } from '@modelcontextprotocol/sdk/types.js'
import { type EnteredMessage, expandMentions, MENTION_SOURCE, mentionText, renderResource } from './mentions.ts'
import type { Context } from 'cordis'
import type { Session, SessionStore } from '@dsh/session'
import { type LoggedMention, loggedMentions } from './logged-mentions.ts'
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

/**
 * Sessions that enter the store with a log (resumed, reopened, forked; and those already there)
 * watch again the resources their log mentions. `inner` is the context that injected `sessions`.
 */
export function recallOnResume(
  inner: Context,
  subscriptions: ResourceSubscriptions,
  connections: () => readonly SubscribableConnection[],
): void {
  const recall = (session: Session) => subscriptions.resume(session.id, loggedMentions(session.events), connections())
  for (const session of inner.sessions.list()) recall(session)
  inner.on('session/created', recall)
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
  /** URIs subscribed on the connection's live client (settled once the server answered). */
  private readonly subscribed = new Map<SubscribableConnection, Map<string, Promise<void>>>()
  /** Per resumed session, the mentions of its log not yet watched on a connection of this process. */
  private readonly remembered = new Map<string, LoggedMention[]>()
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
    also: readonly string[] = [],
  ): Promise<Array<M | UpdateNote>> {
    const offering = new Map<string, SubscribableConnection>()
    for (const entry of connections) {
      if (!entry.offersResources || (entry.scope !== undefined && entry.scope !== scope)) continue
      if (!offering.has(entry.name) || entry.scope !== undefined) offering.set(entry.name, entry)
    }
    // The servers of the session's live subagents (`also`, their scopes), for names not reached above.
    for (const entry of connections)
      if (entry.offersResources && entry.scope !== undefined && also.includes(entry.scope) && !offering.has(entry.name))
        offering.set(entry.name, entry)
    const read = async (server: string, uri: string, trimmed?: string) => {
      const connection = offering.get(server)!
      const got = await mentionText(connection, uri, trimmed, limits.mentionMaxChars)
      if (got.read) await this.watch(connection, got.uri, sessionId)
      return got
    }
    await this.recallFor(sessionId, offering)
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
      this.queue(id, connection, uri)
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
    // A global server is visible from every session: resumed sessions watch their mentions of it now
    // (a scope's own server is matched at that session's next step, where its scope is known).
    if (connection.scope !== undefined) return
    for (const id of [...this.remembered.keys()]) {
      if (this.host.live(id)) void this.recall(connection, id)
      else this.remembered.delete(id)
    }
  }

  /**
   * A session entered the store with a log that mentions `mentions`: each is watched again on the
   * connected global server of its name now, or when one connects, or at the session's next step
   * on the server visible from its scope; a logged update the model was not told of is queued.
   */
  resume(sessionId: string, mentions: readonly LoggedMention[], connections: readonly SubscribableConnection[]): void {
    if (mentions.length === 0) return
    this.remembered.set(
      sessionId,
      mentions.map((m) => ({ ...m })),
    )
    for (const connection of connections)
      if (connection.scope === undefined && this.connectedNow.has(connection)) void this.recall(connection, sessionId)
  }

  /** At a step: the session's remembered mentions of the servers visible from its scope are watched (and stay so). */
  private async recallFor(sessionId: string, offering: ReadonlyMap<string, SubscribableConnection>): Promise<void> {
    const mentions = this.remembered.get(sessionId)
    if (!mentions) return
    await Promise.all([...offering.values()].map((connection) => this.recall(connection, sessionId)))
    const left = mentions.filter((m) => !offering.has(m.server))
    if (left.length > 0) this.remembered.set(sessionId, left)
    else this.remembered.delete(sessionId)
  }

  /** Watches the session's remembered mentions of `connection`'s server; settles once subscribed. */
  private async recall(connection: SubscribableConnection, sessionId: string): Promise<void> {
    if (!connection.offersResources) return
    const watches: Promise<void>[] = []
    for (const mention of this.remembered.get(sessionId) ?? []) {
      if (mention.server !== connection.name) continue
      watches.push(this.watch(connection, mention.uri, sessionId))
      if (!mention.pending) continue
      mention.pending = false
      this.queue(sessionId, connection, mention.uri)
    }
    await Promise.all(watches)
  }

  /** Queues an update of `uri` for the session's next step (one per connection and URI). */
  private queue(sessionId: string, connection: SubscribableConnection, uri: string): void {
    let queue = this.pending.get(sessionId)
    if (!queue) this.pending.set(sessionId, (queue = new Map()))
    queue.set(`${connection.name}\u0000${connection.scope ?? ''}\u0000${uri}`, { connection, uri })
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

  /** Subscribes once per URI and live client; a second caller waits for the same answer. */
  private subscribe(connection: SubscribableConnection, uri: string): Promise<void> {
    let uris = this.subscribed.get(connection)
    if (!uris) this.subscribed.set(connection, (uris = new Map()))
    const known = uris.get(uri)
    if (known !== undefined) return known
    const done: Promise<void> = connection
      .request(undefined, (client, options) => client.subscribeResource({ uri }, options))
      .then(
        () => {},
        (error: Error) => {
          if (this.subscribed.get(connection)?.get(uri) === done) this.subscribed.get(connection)?.delete(uri)
          this.host.warn(`MCP server "${connection.name}": subscribing to ${uri} failed: ${error.message}`)
        },
      )
    uris.set(uri, done)
    return done
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
