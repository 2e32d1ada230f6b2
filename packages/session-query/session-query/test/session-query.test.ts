// The `ctx.sessionQuery` seam: `eventText`, `literalPhrase`, and the exact reads and filters the
// abstract class implements once, over a real `ctx.sessions` store and a real `SessionPersistence`
// (its base class, with an in-memory backend written here) plus a small scanning provider.
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import SessionStore, {
  Session,
  asSessionId,
  type AnySessionEvent,
  type SessionEventMap,
  type SessionEventType,
  type SessionId,
} from '@dsh/session'
import {
  SessionPersistence,
  SessionPersistenceError,
  sessionNotFound,
  summarize,
  type BackendReadResult,
  type SessionHeader,
  type SessionSummary,
  type StoredRecord,
} from '@dsh/session-persistence'
import {
  SessionQuery,
  SessionQueryError,
  eventText,
  literalPhrase,
  type EventHit,
  type SearchHit,
  type SearchQuery,
} from '@dsh/session-query'

/** A real `SessionPersistence` (the base class does ids, seq checks, batching) storing logs in a Map. */
class MemoryPersistence extends SessionPersistence {
  readonly backend = 'memory'
  private readonly logs = new Map<string, { header: SessionHeader; records: StoredRecord[] }>()

  constructor(ctx: Context) {
    super(ctx, { batchWindowMs: 1 })
  }

  protected async backendCreate(header: SessionHeader): Promise<void> {
    if (this.logs.has(header.id)) throw new SessionPersistenceError('EXISTS', header.id, `session ${header.id} exists`)
    this.logs.set(header.id, { header, records: [] })
  }

  protected async backendOpen(id: SessionId): Promise<void> {
    if (!this.logs.has(id)) throw sessionNotFound(id)
  }

  protected async backendRead(id: SessionId): Promise<BackendReadResult> {
    const log = this.logs.get(id)
    if (!log) throw sessionNotFound(id)
    return { header: log.header, records: [...log.records] }
  }

  protected async backendWrite(id: SessionId, records: StoredRecord[]): Promise<void> {
    this.logs.get(id)!.records.push(...records)
  }

  protected async backendClose(): Promise<void> {}

  protected async backendList(): Promise<SessionSummary[]> {
    return [...this.logs.values()].map((log) =>
      summarize(
        log.header,
        log.records.map((r) => r.event as AnySessionEvent),
      ),
    )
  }
}

/** The smallest search provider: scans `eventText` of every event of the filtered sessions. */
class ScanQuery extends SessionQuery {
  async search(query: SearchQuery): Promise<SearchHit[]> {
    const needle = query.text.trim().toLowerCase()
    if (!needle) throw new SessionQueryError('BAD_QUERY', 'search text is empty')
    const hits: SearchHit[] = []
    for (const info of await this.sessions({ cwd: query.cwd, sessionIds: query.sessionIds })) {
      const events = (await this.read(info.id, { types: query.types })).filter((e) =>
        eventText(e).toLowerCase().includes(needle),
      )
      if (events.length === 0) continue
      const first = events[0]
      hits.push({
        sessionId: info.id,
        cwd: info.cwd,
        title: info.title,
        updatedAt: info.updatedAt,
        live: info.live,
        seq: first.seq,
        type: first.type,
        snippet: eventText(first),
        matches: events.length,
      })
    }
    return hits.slice(0, query.limit ?? 20)
  }

  async searchEvents(query: SearchQuery): Promise<EventHit[]> {
    const needle = query.text.trim().toLowerCase()
    if (!needle) throw new SessionQueryError('BAD_QUERY', 'search text is empty')
    const hits: EventHit[] = []
    for (const info of await this.sessions({ cwd: query.cwd, sessionIds: query.sessionIds })) {
      for (const e of await this.read(info.id, { types: query.types })) {
        if (!eventText(e).toLowerCase().includes(needle)) continue
        hits.push({
          sessionId: info.id,
          cwd: info.cwd,
          live: info.live,
          seq: e.seq,
          type: e.type,
          snippet: eventText(e),
        })
      }
    }
    return hits.slice(0, query.limit ?? 20)
  }
}

const fibers: { dispose(): unknown }[] = []
afterEach(async () => {
  for (const fiber of fibers.splice(0).reverse()) await fiber.dispose()
})

async function tree(options: { persistence?: boolean } = {}) {
  const ctx = new Context()
  const plugins: unknown[] = [SessionStore, ...(options.persistence === false ? [] : [MemoryPersistence]), ScanQuery]
  for (const plugin of plugins) {
    const fiber = ctx.plugin(plugin as never, {} as never)
    await fiber
    fibers.push(fiber)
  }
  return ctx
}

function fill(session: Session, prompt: string, output = 'ok'): void {
  session.append('turn/start', { turn: 0 })
  session.append('user/message', { content: [{ type: 'text', text: prompt }], source: { kind: 'human' } })
  session.append('tool/call', { callId: 'c1', name: 'bash', arguments: '{"command":"ls"}' })
  session.append('tool/result', {
    message: { role: 'tool', callId: 'c1', name: 'bash', content: [{ type: 'text', text: output }] },
  })
  session.append('assistant/message', { message: { role: 'assistant', content: [{ type: 'text', text: 'done' }] } })
  session.append('turn/end', { turn: 0, reason: 'completed' })
}

/** Stores a session created at `start - 1` whose events are timed from `start`, one ms apart; returns the events. */
async function stored(
  ctx: Context,
  id: string,
  cwd: string,
  start: number,
  prompt: string,
  extra?: (s: Session) => void,
  parentSession?: { sessionId: string; boundary: number },
) {
  let t = start
  const session = new Session({ cwd, id, clock: () => t++ })
  fill(session, prompt)
  extra?.(session)
  await ctx.sessionPersistence.create({
    id,
    cwd,
    createdAt: start - 1,
    ...(parentSession
      ? { parentSession: { sessionId: asSessionId(parentSession.sessionId), boundary: parentSession.boundary } }
      : {}),
  })
  await ctx.sessionPersistence.append(id, session.events)
  await ctx.sessionPersistence.close(id)
  return session.events
}

function live(ctx: Context, id: string, cwd: string, start: number): Session {
  let t = start
  return ctx.sessions.create({ cwd, id, clock: () => t++ })
}

/** One real event of each type, appended to a real session. */
function event<K extends SessionEventType>(type: K, data: SessionEventMap[K]): AnySessionEvent {
  const session = new Session({ cwd: '/p', id: 'ev' })
  return session.append(type, data) as AnySessionEvent
}

describe('eventText', () => {
  it('takes the text blocks of a user message, not its images', () => {
    const e = event('user/message', {
      content: [
        { type: 'text', text: 'first line' },
        { type: 'image', mediaType: 'image/png', data: 'aGVsbG8=' },
        { type: 'text', text: 'second' },
      ],
      source: { kind: 'human' },
    })
    expect(eventText(e)).toBe('first line\nsecond')
  })

  it('takes assistant text and tool calls as "name arguments", not reasoning', () => {
    const e = event('assistant/message', {
      message: {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'secret thoughts' },
          { type: 'text', text: 'I will list files' },
          { type: 'tool-call', callId: 'c1', name: 'bash', arguments: '{"command":"ls -la"}' },
        ],
      },
    })
    expect(eventText(e)).toBe('I will list files\nbash {"command":"ls -la"}')
  })

  it('takes tool calls, tool result text (not images) and titles', () => {
    expect(eventText(event('tool/call', { callId: 'c1', name: 'grep', arguments: '{"pattern":"TODO"}' }))).toBe(
      'grep {"pattern":"TODO"}',
    )
    const result = event('tool/result', {
      message: {
        role: 'tool',
        callId: 'c1',
        name: 'grep',
        content: [
          { type: 'text', text: 'a.ts:1: TODO' },
          { type: 'image', mediaType: 'image/png', data: 'eA==' },
          { type: 'text', text: 'b.ts:2: TODO' },
        ],
      },
    })
    expect(eventText(result)).toBe('a.ts:1: TODO\nb.ts:2: TODO')
    expect(eventText(event('session/title', { title: 'Fix the parser', source: 'llm' }))).toBe('Fix the parser')
  })

  it('is empty for chunks and bookkeeping events', () => {
    expect(
      eventText(event('assistant/chunk', { chunk: { type: 'text-delta', text: 'partial answer' } as never })),
    ).toBe('')
    expect(eventText(event('turn/start', { turn: 0 }))).toBe('')
    expect(eventText(event('step/end', { turn: 0, step: 0 }))).toBe('')
    expect(
      eventText(
        event('request/header', { provider: 'p', model: 'm', system: 'you are a searchable system prompt', tools: [] }),
      ),
    ).toBe('')
    expect(eventText(event('seed/end', { fromSession: 'x', boundary: 0 }))).toBe('')
  })

  it('is empty for a message with no text at all', () => {
    expect(
      eventText(
        event('user/message', {
          content: [{ type: 'image', mediaType: 'image/png', data: 'eA==' }],
          source: { kind: 'human' },
        }),
      ),
    ).toBe('')
  })
})

describe('literalPhrase', () => {
  /** What FTS5 reads back from a double-quoted string: the inside, with "" as one quote. */
  const unquote = (phrase: string) => {
    expect(phrase.startsWith('"') && phrase.endsWith('"')).toBe(true)
    const inner = phrase.slice(1, -1)
    // No lone quote inside: every quote is doubled, so the string never ends early.
    expect(inner.replace(/""/g, '')).not.toContain('"')
    return inner.replace(/""/g, '"')
  }

  it('quotes operators, wildcards, columns and SQL as one phrase', () => {
    expect(literalPhrase('a OR b')).toBe('"a OR b"')
    expect(literalPhrase('*')).toBe('"*"')
    expect(literalPhrase('col:text NEAR(x y)')).toBe('"col:text NEAR(x y)"')
    expect(literalPhrase("'; DELETE FROM t; --")).toBe(`"'; DELETE FROM t; --"`)
  })

  it('doubles inner quotes so they cannot close the phrase', () => {
    expect(literalPhrase('"); DROP TABLE')).toBe('"""); DROP TABLE"')
    expect(literalPhrase('"quoted"')).toBe('"""quoted"""')
    expect(literalPhrase('"')).toBe('""""')
    expect(literalPhrase('')).toBe('""')
  })

  it('round-trips any text', () => {
    for (const text of [
      '"); DROP TABLE fts; --',
      'a OR b',
      '*',
      '"quoted"',
      'say ""hi""',
      '"unbalanced ( quote',
      'ünïcödé "x" 🙂',
      '\n"\t"',
    ]) {
      expect(unquote(literalPhrase(text))).toBe(text)
    }
  })
})

describe('SessionQuery.sessions', () => {
  it('merges stored and live sessions, newest first, live ones marked and ahead of their log', async () => {
    const ctx = await tree()
    await stored(ctx, 'old', '/a', 1_000, 'old work')
    await stored(ctx, 'resumed', '/a', 2_000, 'resumed work')
    // `resumed` is live again with one more event than its log; `fresh` was never stored.
    const events = await ctx.sessionPersistence.readFrom('resumed', 0)
    let t = 5_000
    const again = ctx.sessions.create({ cwd: '/a', id: 'resumed', events, clock: () => t++ })
    again.append('user/message', { content: [{ type: 'text', text: 'more' }], source: { kind: 'human' } })
    fill(live(ctx, 'fresh', '/b', 3_000), 'fresh work')

    const rows = await ctx.sessionQuery.sessions()
    expect(rows.map((r) => [r.id, r.live, r.events, r.updatedAt])).toEqual([
      ['resumed', true, 7, 5_000],
      ['fresh', true, 6, 3_005],
      ['old', false, 6, 1_005],
    ])
    expect(rows.find((r) => r.id === 'fresh')).toMatchObject({ cwd: '/b', createdAt: 3_000, turns: 1 })
    expect(rows.find((r) => r.id === 'old')).toMatchObject({ firstPrompt: 'old work', turns: 1 })
  })

  it('filters by cwd, ids, time, title or first prompt, top level, and limits', async () => {
    const ctx = await tree()
    await stored(ctx, 's1', '/a', 1_000, 'Refactor the Lexer', (s) =>
      s.append('session/title', { title: 'Lexer cleanup', source: 'llm' }),
    )
    await stored(ctx, 's2', '/a', 2_000, 'write docs')
    await stored(ctx, 's3', '/b', 3_000, 'tune the lexer speed')
    await stored(ctx, 'child', '/a', 4_000, 'subtask', undefined, { sessionId: 's1', boundary: 6 })
    const ids = async (filter: Parameters<SessionQuery['sessions']>[0]) =>
      (await ctx.sessionQuery.sessions(filter)).map((r) => r.id)

    expect(await ids({})).toEqual(['child', 's3', 's2', 's1'])
    expect(await ids({ cwd: '/a' })).toEqual(['child', 's2', 's1'])
    expect(await ids({ cwd: '/a/' })).toEqual([])
    expect(await ids({ sessionIds: ['s1', 's3', 'nope'] })).toEqual(['s3', 's1'])
    expect(await ids({ sessionIds: [] })).toEqual([])
    // `since` inclusive, `until` exclusive, on updatedAt (s2's last event is at 2_005).
    expect(await ids({ since: 2_005 })).toEqual(['child', 's3', 's2'])
    expect(await ids({ until: 2_005 })).toEqual(['s1'])
    expect(await ids({ since: 2_000, until: 3_006 })).toEqual(['s3', 's2'])
    // Case-insensitive, over the title (s1) and the first prompt (s1, s3).
    expect(await ids({ titleContains: 'LEXER' })).toEqual(['s3', 's1'])
    expect(await ids({ titleContains: 'cleanup' })).toEqual(['s1'])
    expect(await ids({ titleContains: 'nothing like this' })).toEqual([])
    expect(await ids({ topLevelOnly: true })).toEqual(['s3', 's2', 's1'])
    expect(await ids({ limit: 2 })).toEqual(['child', 's3'])
    expect(await ids({ limit: 0 })).toEqual([])
    expect(await ids({ cwd: '/a', topLevelOnly: true, limit: 1 })).toEqual(['s2'])
  })

  it('filters live sessions the same way: first prompt, title, fork children', async () => {
    const ctx = await tree()
    const parent = live(ctx, 'parent', '/a', 1_000)
    fill(parent, 'Investigate the flaky Build')
    const child = ctx.sessions.fork(parent)
    parent.append('session/title', { title: 'Flaky build hunt', source: 'llm' })
    const ids = async (filter: Parameters<SessionQuery['sessions']>[0]) =>
      (await ctx.sessionQuery.sessions(filter)).map((r) => r.id).sort()
    expect(await ids({ titleContains: 'flaky build' })).toEqual([child.id, 'parent'].sort())
    expect(await ids({ titleContains: 'hunt' })).toEqual(['parent'])
    expect(await ids({ topLevelOnly: true })).toEqual(['parent'])
    expect((await ctx.sessionQuery.session(child.id))?.parentSession).toEqual({ sessionId: 'parent', boundary: 6 })
  })

  it('shows the live title and prompt of a stored session that is live again', async () => {
    const ctx = await tree()
    const events = await stored(ctx, 'back', '/a', 1_000, 'first try', (s) =>
      s.append('session/title', { title: 'Stored title', source: 'llm' }),
    )
    expect(await ctx.sessionQuery.session('back')).toMatchObject({
      live: false,
      title: 'Stored title',
      turns: 1,
      createdAt: 999,
    })
    let t = 2_000
    const session = ctx.sessions.create({ cwd: '/a', id: 'back', events, clock: () => t++ })
    session.append('session/title', { title: 'Renamed while live', source: 'user' })
    session.append('turn/start', { turn: 1 })
    const row = await ctx.sessionQuery.session('back')
    // createdAt stays the stored header's (before the first event).
    expect(row).toMatchObject({
      live: true,
      title: 'Renamed while live',
      firstPrompt: 'first try',
      turns: 2,
      events: 9,
      createdAt: 999,
      updatedAt: 2_001,
    })
    expect((await ctx.sessionQuery.sessions({ titleContains: 'renamed' })).map((r) => r.id)).toEqual(['back'])
  })

  it('rejects a negative or fractional limit with BAD_QUERY', async () => {
    const ctx = await tree()
    await stored(ctx, 's1', '/a', 1_000, 'x')
    await stored(ctx, 's2', '/a', 2_000, 'y')
    for (const limit of [-1, 1.5, Number.NaN]) {
      await expect(ctx.sessionQuery.sessions({ limit })).rejects.toMatchObject({
        name: 'SessionQueryError',
        code: 'BAD_QUERY',
        message: expect.stringContaining('limit'),
      })
    }
  })

  it('lists live sessions alone when no persistence is mounted', async () => {
    const ctx = await tree({ persistence: false })
    fill(live(ctx, 'only', '/a', 1_000), 'hello')
    expect((await ctx.sessionQuery.sessions()).map((r) => [r.id, r.live, r.firstPrompt])).toEqual([
      ['only', true, 'hello'],
    ])
    expect(await ctx.sessionQuery.session('missing')).toBeUndefined()
  })
})

describe('SessionQuery.read', () => {
  it('reads a stored log and a live one alike, with every option', async () => {
    const ctx = await tree()
    const events = await stored(ctx, 'st', '/a', 1_000, 'same prompt')
    ctx.sessions.create({ cwd: '/a', id: 'lv', events })
    const cases = [
      {},
      { fromSeq: 2 },
      { toSeq: 3 },
      { fromSeq: 1, toSeq: 4 },
      { fromSeq: 4, toSeq: 2 },
      { fromSeq: 99 },
      { toSeq: 0 },
      { toSeq: 99 },
      { types: ['user/message', 'tool/result'] },
      { types: [] },
      { limit: 2 },
      { limit: 0 },
      { fromSeq: 1, types: ['tool/call', 'tool/result', 'turn/end'], limit: 2 },
    ]
    for (const options of cases) {
      const fromStore = (await ctx.sessionQuery.read('st', options)).map((e) => e.seq)
      const fromLive = (await ctx.sessionQuery.read('lv', options)).map((e) => e.seq)
      expect({ options, seqs: fromLive }).toEqual({ options, seqs: fromStore })
    }
    expect((await ctx.sessionQuery.read('st', { fromSeq: 1, toSeq: 4 })).map((e) => e.type)).toEqual([
      'user/message',
      'tool/call',
      'tool/result',
    ])
    expect((await ctx.sessionQuery.read('st', { types: ['user/message', 'tool/result'] })).map((e) => e.seq)).toEqual([
      1, 3,
    ])
    expect(
      (
        await ctx.sessionQuery.read('lv', { fromSeq: 1, types: ['tool/call', 'tool/result', 'turn/end'], limit: 2 })
      ).map((e) => e.seq),
    ).toEqual([2, 3])
  })

  it('prefers the live session, which is ahead of its stored log', async () => {
    const ctx = await tree()
    const events = await stored(ctx, 'both', '/a', 1_000, 'prompt')
    const session = ctx.sessions.create({ cwd: '/a', id: 'both', events })
    session.append('user/message', { content: [{ type: 'text', text: 'not flushed yet' }], source: { kind: 'human' } })
    const read = await ctx.sessionQuery.read('both', { fromSeq: 6 })
    expect(read.map((e) => eventText(e))).toEqual(['not flushed yet'])
    expect(ctx.sessionQuery.liveSession('both')).toBe(session)
    expect(ctx.sessionQuery.liveSession('other')).toBeUndefined()
  })

  it('names an unknown or malformed id NOT_FOUND, and a non-live session with no persistence NO_PERSISTENCE', async () => {
    const ctx = await tree()
    for (const id of ['nope', '../../etc/passwd', '']) {
      await expect(ctx.sessionQuery.read(id)).rejects.toMatchObject({
        name: 'SessionQueryError',
        code: 'NOT_FOUND',
        message: `no session ${JSON.stringify(id)}`,
      })
    }
    const bare = await tree({ persistence: false })
    const error = await bare.sessionQuery.read('nope').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SessionQueryError)
    expect(error).toMatchObject({ code: 'NO_PERSISTENCE', message: expect.stringContaining('nope') })
    // A live session needs no persistence.
    fill(live(bare, 'here', '/a', 1_000), 'hi')
    expect(await bare.sessionQuery.read('here', { types: ['user/message'] })).toHaveLength(1)
  })

  it('rejects a bad range or limit with BAD_QUERY, for stored and live sessions', async () => {
    const ctx = await tree()
    const events = await stored(ctx, 'st', '/a', 1_000, 'p')
    ctx.sessions.create({ cwd: '/a', id: 'lv', events })
    const bad = [{ fromSeq: -1 }, { fromSeq: 1.5 }, { toSeq: -1 }, { toSeq: 2.5 }, { limit: -1 }, { limit: 0.5 }]
    for (const id of ['st', 'lv']) {
      for (const options of bad) {
        const error = await ctx.sessionQuery.read(id, options).then(
          () => undefined,
          (e: unknown) => e,
        )
        expect({ id, options, error }).toMatchObject({
          id,
          options,
          error: {
            name: 'SessionQueryError',
            code: 'BAD_QUERY',
            message: expect.stringMatching(/fromSeq|toSeq|limit/),
          },
        })
      }
    }
  })
})

describe('a search provider built on the seam', () => {
  it('finds text through eventText over sessions() and read(), and gets BAD_QUERY for empty text', async () => {
    const ctx = await tree()
    await stored(ctx, 'st', '/a', 1_000, 'look for the zebra')
    fill(live(ctx, 'lv', '/b', 2_000), 'nothing here', 'zebra in output')
    const hits = await ctx.sessionQuery.search({ text: 'ZEBRA' })
    expect(hits.map((h) => [h.sessionId, h.type, h.live])).toEqual([
      ['lv', 'tool/result', true],
      ['st', 'user/message', false],
    ])
    expect((await ctx.sessionQuery.search({ text: 'zebra', cwd: '/a' })).map((h) => h.sessionId)).toEqual(['st'])
    await expect(ctx.sessionQuery.search({ text: '   ' })).rejects.toMatchObject({ code: 'BAD_QUERY' })
  })
})

/** Two turns whose steps reuse the provider's call id `call_0`, one result an error, and a child. */
function twoTurns(session: Session): void {
  for (const turn of [0, 1]) {
    session.append('turn/start', { turn })
    session.append('step/start', { turn, step: 0 })
    session.append('user/message', { content: [{ type: 'text', text: `prompt ${turn}` }], source: { kind: 'human' } })
    session.append('assistant/message', {
      message: {
        role: 'assistant',
        content: [
          { type: 'text', text: `looking ${turn}` },
          { type: 'tool-call', callId: 'call_0', name: 'bash', arguments: `{"command":"echo ${turn}"}` },
        ],
      },
    })
    session.append('tool/call', { callId: 'call_0', name: 'bash', arguments: `{"command":"echo ${turn}"}` })
    session.append('tool/result', {
      message: {
        role: 'tool',
        callId: 'call_0',
        name: 'bash',
        content: [{ type: 'text', text: `out ${turn}` }],
        ...(turn === 1 ? { isError: true } : {}),
      },
    })
    session.append('step/start', { turn, step: 1 })
    session.append('assistant/message', {
      message: { role: 'assistant', content: [{ type: 'text', text: `answer ${turn}` }] },
    })
    session.append('turn/end', { turn, reason: 'completed' })
  }
}

describe('trace and eventTrace', () => {
  it('outline turns, steps and calls, pairing a repeated call id with its own result', async () => {
    const ctx = await tree()
    let t = 1_000
    const session = new Session({ cwd: '/w', id: 'parent', clock: () => t++ })
    twoTurns(session)
    await ctx.sessionPersistence.create({ id: 'parent', cwd: '/w', createdAt: 999 })
    await ctx.sessionPersistence.append('parent', session.events)
    await ctx.sessionPersistence.close('parent')
    await stored(ctx, 'child', '/w', 5_000, 'sub task', undefined, { sessionId: 'parent', boundary: 12 })
    await stored(ctx, 'other', '/w', 6_000, 'unrelated')

    const trace = await ctx.sessionQuery.trace('parent')
    expect(trace.session.id).toBe('parent')
    expect(trace.turns.map((turn) => [turn.turn, turn.prompt, turn.reason])).toEqual([
      [0, 'prompt 0', 'completed'],
      [1, 'prompt 1', 'completed'],
    ])
    // Each turn's call pairs with the result logged after it, not with the other turn's.
    expect(trace.turns.map((turn) => turn.steps[0].calls)).toEqual([
      [{ seq: 4, callId: 'call_0', name: 'bash', resultSeq: 5 }],
      [{ seq: 13, callId: 'call_0', name: 'bash', resultSeq: 14, isError: true }],
    ])
    expect(trace.turns[1].steps.map((step) => step.answer)).toEqual(['looking 1', 'answer 1'])
    expect(trace.children.map((c) => c.id)).toEqual(['child'])
    await expect(ctx.sessionQuery.trace('nope')).rejects.toMatchObject({ code: 'NOT_FOUND' })
  })

  it('eventTrace walks from a result back to its call, answer, step, prompt and turn', async () => {
    const ctx = await tree()
    let t = 1_000
    const session = new Session({ cwd: '/w', id: 'parent', clock: () => t++ })
    twoTurns(session)
    await ctx.sessionPersistence.create({ id: 'parent', cwd: '/w', createdAt: 999 })
    await ctx.sessionPersistence.append('parent', session.events)
    await ctx.sessionPersistence.close('parent')
    await stored(ctx, 'child', '/w', 5_000, 'sub task', undefined, { sessionId: 'parent', boundary: 12 })

    const fromResult = await ctx.sessionQuery.eventTrace('parent', 14)
    expect(fromResult.chain.map((c) => [c.event.seq, c.event.type, c.relation])).toEqual([
      [9, 'turn/start', 'turn'],
      [10, 'step/start', 'step'],
      [11, 'user/message', 'prompt'],
      [12, 'assistant/message', 'answer'],
      [13, 'tool/call', 'call'],
      [14, 'tool/result', 'target'],
    ])
    expect(fromResult.children.map((c) => c.id)).toEqual(['child'])
    // From the first turn's call: its own result (seq 5), never the second turn's.
    const fromCall = await ctx.sessionQuery.eventTrace('parent', 4)
    expect(fromCall.chain.map((c) => [c.event.seq, c.relation])).toEqual([
      [0, 'turn'],
      [1, 'step'],
      [2, 'prompt'],
      [3, 'answer'],
      [4, 'target'],
      [5, 'result'],
    ])
    expect(fromCall.children).toEqual([])
    await expect(ctx.sessionQuery.eventTrace('parent', 99)).rejects.toMatchObject({ code: 'NOT_FOUND' })
    await expect(ctx.sessionQuery.eventTrace('parent', -1)).rejects.toMatchObject({ code: 'BAD_QUERY' })
  })
})
