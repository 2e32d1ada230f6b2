// @dsh/session-title: `ctx.sessionTitle`, log-backed session titles. The first human prompt of a
// session gets an immediate deterministic title (the `fallback` source); one optional provider
// (e.g. @dsh/session-title-llm) may later propose a better one. Every accepted revision is a
// `session/title {title, source}` event: log-only (never model-visible), and the latest one wins.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { AnySessionEvent, Session, SessionId } from '@dsh/session'
import type { TokenUsage, UserContentBlock } from '@dsh/llm'
import type {} from '@dsh/session-persistence'
import type { ProjectionUnit } from '@dsh/session-projection'

declare module '@dsh/session' {
  interface SessionEventMap {
    /**
     * Tokens one title request of a provider used (log-only, never model-visible). A title call is
     * not a turn: stats count it apart from the turns and in the session's totals.
     */
    'title/usage': TitleUsage
  }
}

declare module 'cordis' {
  interface Context {
    sessionTitle: SessionTitleService
  }
  interface Events {
    /** A provider failed to title a session; the previous title stays. */
    'session-title/error'(sessionId: string, provider: string, error: unknown): void
  }
}

/** The `source` of titles this package writes itself. */
export const FALLBACK_SOURCE = 'fallback'
/** The `source` of a title set by a person (`set()`). */
export const USER_SOURCE = 'user'

export interface SessionTitle {
  title: string
  source: string
  /** Seq and time of the `session/title` event that carries it. */
  seq: number
  time: number
}

/** The latest `session/title` of a log (events in seq order), or undefined. */
export function foldSessionTitle(events: Iterable<AnySessionEvent>): SessionTitle | undefined {
  let found: SessionTitle | undefined
  for (const event of events) {
    if (event.type === 'session/title')
      found = { title: event.data.title, source: event.data.source, seq: event.seq, time: event.time }
  }
  return found
}

/** The `title` projection unit: the latest `session/title` (null before the first one). */
export const titleUnit: ProjectionUnit<SessionTitle | null> = {
  name: 'title',
  version: 1,
  init: () => null,
  fold: (state, event) =>
    event.type === 'session/title'
      ? { title: event.data.title, source: event.data.source, seq: event.seq, time: event.time }
      : state,
}

/** Text blocks of a message, whitespace collapsed. */
export function promptText(content: readonly UserContentBlock[]): string {
  return content
    .filter((block): block is Extract<UserContentBlock, { type: 'text' }> => block.type === 'text')
    .map((block) => block.text)
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim()
}

/**
 * The deterministic title of a prompt: its text on one line, cut at a word boundary to at most
 * `maxLength` characters (an ellipsis marks a cut). Undefined when the prompt has no text.
 */
export function fallbackTitle(text: string, maxLength = 60): string | undefined {
  const flat = text.replace(/\s+/g, ' ').trim()
  if (!flat) return undefined
  if (flat.length <= maxLength) return flat
  const room = flat.slice(0, Math.max(1, maxLength - 1))
  // The room ends on a word boundary when the next character is a space.
  const space = flat[room.length] === ' ' ? room.length : room.lastIndexOf(' ')
  const cut = space >= maxLength / 2 ? room.slice(0, space) : room
  return `${cut.replace(/[\s,.;:!?-]+$/, '')}…`
}

/** The `title/usage` event: what one provider request cost. */
export interface TitleUsage {
  /** The provider's name (the `source` of the titles it writes). */
  source: string
  /** Route and model the provider asked, when it says. */
  provider?: string
  model?: string
  usage: TokenUsage
}

/** What a provider may answer instead of bare text: the title plus what the request cost. */
export interface TitleProposal {
  title: string
  /** Token usage of the request; logged as `title/usage` even when the title is not used. */
  usage?: Partial<TokenUsage>
  provider?: string
  model?: string
}

/** What a provider is asked to title. */
export interface TitleRequest {
  sessionId: SessionId
  /** Text of the prompt the title is for, and its seq. */
  prompt: string
  promptSeq: number
  /** Earlier human prompts of the session (oldest first), for the `all-prompts` cadence. */
  earlierPrompts: string[]
  /** The current title (the fallback at first). */
  current?: SessionTitle
  /** Aborted when a newer revision starts, the session leaves the store or the plugin unloads. */
  signal: AbortSignal
}

export type TitleCadence = 'first-prompt' | 'all-prompts'

export interface TitleProvider {
  /** Written as the `source` of the titles it produces. */
  name: string
  /** `first-prompt`: once, for the first human prompt of a fresh session; `all-prompts`: after every human prompt. */
  cadence: TitleCadence
  /** The title text (or a proposal carrying its usage); a rejection keeps the current title. */
  generate(request: TitleRequest): Promise<string | TitleProposal>
}

export interface SessionTitleConfig {
  maxLength: number
}

interface Work {
  controller: AbortController
  done: Promise<void>
}

export class SessionTitleService extends Service {
  static inject = ['sessions']
  static Config: Schema<Partial<SessionTitleConfig>, SessionTitleConfig> = Schema.object({
    maxLength: Schema.natural()
      .min(10)
      .max(200)
      .default(60)
      .description('Longest title, fallback or provided, in characters.'),
  })

  // Mutated in place only (methods may run on a per-caller shadow of the service).
  private readonly providers: TitleProvider[] = []
  private readonly work = new Map<string, Work>()
  /** Set when the plugin unloads: late answers then write nothing (their event type is unregistered). */
  private readonly unloaded = { value: false }
  private readonly home: Context
  private readonly maxLength: number

  constructor(ctx: Context, config: Partial<SessionTitleConfig> = {}) {
    super(ctx, 'sessionTitle')
    this.home = ctx
    this.maxLength = config.maxLength ?? 60
    ctx.on('session/event', (session, event) => this.onEvent(session, event))
    // `title/usage` is logged: persistence must know it. Ignorable: a reader without this plugin
    // still loads the session (the event changes nothing else in the log).
    ctx.inject(
      ['sessionPersistence'],
      (inner) => void inner.sessionPersistence.registerEventType('title/usage', { ignorable: true }),
    )
    ctx.on('session/deleted', (session) => this.cancel(session.id))
    ctx.inject(['sessionProjections'], (inner) => void inner.sessionProjections.register(titleUnit))
    ctx.effect(
      () => () => {
        this.unloaded.value = true
        for (const id of [...this.work.keys()]) this.cancel(id)
      },
      'session-title: cancel work',
    )
  }

  /** The current title of a live session, or undefined (no prompt yet, or not in `ctx.sessions`). */
  get(sessionId: SessionId | string): SessionTitle | undefined {
    const event = this.home.sessions.get(sessionId)?.last('session/title')
    return event ? { title: event.data.title, source: event.data.source, seq: event.seq, time: event.time } : undefined
  }

  /**
   * Sets a title by hand (a rename). Throws for a session not in `ctx.sessions` or an empty title.
   * Provider work in flight is cancelled so it cannot overwrite the person's choice.
   */
  set(sessionId: SessionId | string, title: string, source: string = USER_SOURCE): SessionTitle {
    const session = this.home.sessions.get(sessionId)
    if (!session) throw new Error(`session-title: no live session ${sessionId}`)
    const text = clean(title, this.maxLength)
    if (!text) throw new Error('session-title: a title needs some text')
    this.cancel(session.id)
    const event = session.append('session/title', { title: text, source })
    return { title: text, source, seq: event.seq, time: event.time }
  }

  /**
   * Registers the one title provider. A second registration while one is active throws: two
   * providers would race to retitle the same session. Undone by the disposer or by unloading.
   */
  registerProvider(provider: TitleProvider): () => void {
    return this.ctx.effect(() => {
      if (this.providers.length > 0)
        throw new Error(
          `session-title: provider "${this.providers[0].name}" is already registered; unload it before registering "${provider.name}"`,
        )
      this.providers.push(provider)
      return () => {
        const i = this.providers.indexOf(provider)
        if (i >= 0) this.providers.splice(i, 1)
      }
    }, `session-title: provider ${provider.name}`)
  }

  /** The registered provider, if any. */
  provider(): TitleProvider | undefined {
    return this.providers[0]
  }

  /**
   * Asks the provider again for the session's latest human prompt (the only way to retry after an
   * automatic failure). Resolves with the title afterwards (unchanged on failure); undefined when
   * there is no live session or prompt.
   */
  async refresh(sessionId: SessionId | string): Promise<SessionTitle | undefined> {
    const session = this.home.sessions.get(sessionId)
    if (!session) return undefined
    const prompts = humanPrompts(session.events)
    const last = prompts.at(-1)
    if (!last) return this.get(sessionId)
    const provider = this.providers[0]
    if (provider)
      await this.start(
        session,
        provider,
        last,
        prompts.slice(0, -1).map((p) => p.text),
      )
    return this.get(sessionId)
  }

  /** Settles when the session's provider work in flight (if any) has finished. */
  async settled(sessionId: SessionId | string): Promise<void> {
    await this.work.get(sessionId)?.done
  }

  private onEvent(session: Session, event: AnySessionEvent): void {
    if (event.type !== 'user/message' || event.data.source?.kind !== 'human') return
    const text = promptText(event.data.content)
    if (!text) return
    const current = session.last('session/title')
    const provider = this.providers[0]
    if (!current) {
      const title = fallbackTitle(text, this.maxLength)
      if (!title) return
      session.append('session/title', { title, source: FALLBACK_SOURCE })
      // Automatic model titles only for a fresh session: a fork or resume seed carries history.
      const fresh = session.parent === undefined && !session.events.some((e) => e.type === 'seed/end')
      if (provider && (provider.cadence === 'all-prompts' || fresh))
        void this.start(session, provider, { seq: event.seq, text }, [])
      return
    }
    if (provider?.cadence === 'all-prompts' && current.data.source !== USER_SOURCE) {
      const earlier = humanPrompts(session.events.slice(0, event.seq)).map((p) => p.text)
      void this.start(session, provider, { seq: event.seq, text }, earlier)
    }
  }

  /** Runs the provider for one prompt; never throws (a failure is an event and keeps the title). */
  private start(
    session: Session,
    provider: TitleProvider,
    prompt: { seq: number; text: string },
    earlier: string[],
  ): Promise<void> {
    this.cancel(session.id)
    const controller = new AbortController()
    const current = this.get(session.id)
    // Assigned before the body's first await can reach `finally`.
    let work: Work | undefined
    work = {
      controller,
      done: (async () => {
        try {
          const proposed = await provider.generate({
            sessionId: session.id,
            prompt: prompt.text,
            promptSeq: prompt.seq,
            earlierPrompts: earlier,
            ...(current ? { current } : {}),
            signal: controller.signal,
          })
          const text =
            typeof proposed === 'string' ? proposed : typeof proposed?.title === 'string' ? proposed.title : ''
          // The tokens were spent whatever happens to the title: log them while the session is here.
          const usage = typeof proposed === 'object' && proposed ? usageOf(proposed, provider.name) : undefined
          if (usage && !this.unloaded.value && this.home.sessions.get(session.id) === session)
            session.append('title/usage', usage)
          // A superseded or cancelled revision never commits, even if the provider ignored the signal.
          if (controller.signal.aborted || this.home.sessions.get(session.id) !== session) return
          const title = clean(text, this.maxLength)
          if (!title) throw new Error('the provider returned an empty title')
          const latest = session.last('session/title')
          if (latest?.data.source === USER_SOURCE) return
          if (latest?.data.title === title) return
          session.append('session/title', { title, source: provider.name })
        } catch (error) {
          if (!controller.signal.aborted) this.home.emit('session-title/error', session.id, provider.name, error)
        } finally {
          if (this.work.get(session.id) === work) this.work.delete(session.id)
        }
      })(),
    }
    this.work.set(session.id, work)
    return work.done
  }

  private cancel(sessionId: string): void {
    const work = this.work.get(sessionId)
    if (!work) return
    this.work.delete(sessionId)
    work.controller.abort()
  }
}

/** Human prompts with text, in order. */
export function humanPrompts(events: readonly AnySessionEvent[]): Array<{ seq: number; text: string }> {
  const out: Array<{ seq: number; text: string }> = []
  for (const event of events) {
    if (event.type !== 'user/message' || event.data.source?.kind !== 'human') continue
    const text = promptText(event.data.content)
    if (text) out.push({ seq: event.seq, text })
  }
  return out
}

const count = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0)

/** The `title/usage` of a proposal, or undefined when it reports no usage. */
function usageOf(proposal: TitleProposal, source: string): TitleUsage | undefined {
  const u = proposal.usage
  if (!u || typeof u !== 'object') return undefined
  return {
    source,
    ...(typeof proposal.provider === 'string' ? { provider: proposal.provider } : {}),
    ...(typeof proposal.model === 'string' ? { model: proposal.model } : {}),
    usage: {
      input: count(u.input),
      output: count(u.output),
      cacheRead: count(u.cacheRead),
      cacheWrite: count(u.cacheWrite),
      reasoning: count(u.reasoning),
    },
  }
}

/** A provided title on one line: quotes and a trailing period dropped, cut to `maxLength`. */
function clean(title: string, maxLength: number): string {
  // Curly quotes as escapes: one non-ASCII character makes the whole prelinked stack a two-byte
  // string (twice the memory, a slower decode and scan at every boot).
  const flat = title
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^["'`\u201C\u2018]+|["'`\u201D\u2019]+$/g, '')
    .replace(/\.$/, '')
    .trim()
  return flat.length <= maxLength ? flat : `${flat.slice(0, maxLength - 1).trimEnd()}…`
}

export const name = '@dsh/session-title'
export default SessionTitleService
