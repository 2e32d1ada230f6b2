import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import type { AssistantMessage } from '@dsh/llm'
import SessionStore, {
  OMITTED_ARGUMENTS_KEY,
  PluginError,
  SessionForkError,
  deriveMessagesFromEvents,
  type AnySessionEvent,
  type Session,
} from '../src/index.ts'

const text = (t: string) => [{ type: 'text' as const, text: t }]
const human = { kind: 'human' as const }

async function boot() {
  const root = new Context()
  const fiber = root.plugin(SessionStore)
  await fiber
  return { root, fiber, sessions: root.sessions }
}

function turn(s: Session, n: number) {
  s.append('turn/start', { turn: n })
  s.append('user/message', { content: text(`q${n}`), source: human })
  s.append('assistant/message', { message: { role: 'assistant', content: text(`a${n}`) } })
  s.append('turn/end', { turn: n, reason: 'completed' })
}

describe('ctx.sessions', () => {
  it('creates, gets, lists and deletes sessions', async () => {
    const { sessions } = await boot()
    const a = sessions.create({ cwd: '/a' })
    const b = sessions.create({ cwd: '/b', id: 'b-id' })
    expect(sessions.get(a.id)).toBe(a)
    expect(sessions.get('b-id')).toBe(b)
    expect(sessions.list()).toEqual([a, b])
    expect(() => sessions.create({ cwd: '/b', id: 'b-id' })).toThrow('session "b-id" already exists')
    expect(sessions.delete(a.id)).toBe(true)
    expect(sessions.delete(a.id)).toBe(false)
    expect(sessions.get(a.id)).toBeUndefined()
    expect(sessions.list()).toEqual([b])
  })

  it('broadcasts every append as session/event, in seq order, also for appends made by listeners', async () => {
    const { root, sessions } = await boot()
    const seen: [string, number, string][] = []
    root.on('session/event', (session, event) => {
      seen.push([session.id, event.seq, event.type])
      if (event.type === 'turn/start') session.append('step/start', { turn: 0, step: 0 })
    })
    const direct: number[] = []
    const s = sessions.create({ cwd: '/', id: 's' })
    s.subscribe((e) => direct.push(e.seq))
    s.append('turn/start', { turn: 0 })
    s.append('step/end', { turn: 0, step: 0 })
    expect(seen).toEqual([
      ['s', 0, 'turn/start'],
      ['s', 1, 'step/start'],
      ['s', 2, 'step/end'],
    ])
    expect(direct).toEqual([0, 1, 2])
    // A deleted session no longer broadcasts.
    sessions.delete('s')
    s.append('step/end', { turn: 0, step: 1 })
    expect(seen).toHaveLength(3)
  })

  it('announces created and deleted sessions', async () => {
    const { root, sessions } = await boot()
    const log: string[] = []
    root.on('session/created', (s) => log.push(`+${s.id}`))
    root.on('session/deleted', (s) => log.push(`-${s.id}`))
    sessions.create({ cwd: '/', id: 'x' })
    sessions.delete('x')
    expect(log).toEqual(['+x', '-x'])
  })

  it('forks the whole log by default, sharing frozen events and appending seed/end', async () => {
    const { sessions } = await boot()
    const src = sessions.create({ cwd: '/repo' })
    turn(src, 0)
    turn(src, 1)
    const fork = sessions.fork(src)
    expect(fork.id).not.toBe(src.id)
    expect(fork.cwd).toBe('/repo')
    expect(fork.parent).toEqual({ sessionId: src.id, boundary: 8 })
    expect(fork.slice(0, 8)).toEqual(src.events)
    expect(fork.last()).toMatchObject({ seq: 8, type: 'seed/end', data: { fromSession: src.id, boundary: 8 } })
    expect(fork.deriveMessages()).toEqual(src.deriveMessages())
    expect(sessions.get(fork.id)).toBe(fork)
    // The fork evolves independently.
    turn(fork, 2)
    expect(src.length).toBe(8)
    expect(fork.deriveMessages()).toHaveLength(6)
  })

  it('forks at a turn boundary given by seq or by id', async () => {
    const { sessions } = await boot()
    const src = sessions.create({ cwd: '/' })
    src.append('session/title', { title: 't', source: 'test' })
    turn(src, 0) // seq 1..4
    turn(src, 1) // seq 5..8
    expect(sessions.fork(src, 0).length).toBe(1)
    expect(sessions.fork(src, 1).slice(0, 1)).toEqual(src.slice(0, 1)) // before the first turn/start
    const mid = sessions.fork(src.id, 5)
    expect(mid.deriveMessages().map((m) => (m.content[0] as { text: string }).text)).toEqual(['q0', 'a0'])
    expect(mid.at(5)?.type).toBe('seed/end')
  })

  it('refuses a boundary inside a turn or out of range, with a clear message', async () => {
    const { sessions } = await boot()
    const src = sessions.create({ cwd: '/', id: 'src' })
    turn(src, 0)
    src.append('turn/start', { turn: 1 })
    src.append('user/message', { content: text('open'), source: human })
    expect(() => sessions.fork(src, 2)).toThrow(SessionForkError)
    expect(() => sessions.fork(src, 2)).toThrow('cannot fork session "src" at 2: a turn is open there')
    expect(() => sessions.fork(src)).toThrow('a turn is open there') // the whole log ends mid-turn
    expect(() => sessions.fork(src, 99)).toThrow('boundary must be an integer in [0, 6]')
    expect(() => sessions.fork(src, 1.5)).toThrow('boundary must be an integer')
    expect(() => sessions.fork('missing' as never)).toThrow('no session "missing"')
    expect(sessions.fork(src, 4).length).toBe(5) // right after turn/end is fine
  })

  it('restores a persisted log through create({events})', async () => {
    const { sessions } = await boot()
    const src = sessions.create({ cwd: '/' })
    turn(src, 0)
    const copy = sessions.create({
      cwd: '/',
      id: 'restored',
      events: JSON.parse(JSON.stringify(src.events)) as AnySessionEvent[],
    })
    expect(copy.events).toEqual(src.events)
    expect(copy.deriveMessages()).toEqual(src.deriveMessages())
  })

  it('removes sessions from the store when the creating plugin or the store unloads', async () => {
    const { root, fiber, sessions } = await boot()
    let made: Session | undefined
    const user = root.plugin({
      name: 'session-user',
      inject: ['sessions'],
      apply(ctx: Context) {
        made = ctx.sessions.create({ cwd: '/', id: 'by-plugin' })
      },
    })
    await user
    const rootMade = sessions.create({ cwd: '/', id: 'by-root' })
    expect(sessions.get('by-plugin')).toBe(made)
    const deleted: string[] = []
    root.on('session/deleted', (s) => deleted.push(s.id))
    await user.dispose()
    expect(sessions.get('by-plugin')).toBeUndefined()
    expect(sessions.get('by-root')).toBe(rootMade)

    const events: number[] = []
    root.on('session/event', (_s, e) => events.push(e.seq))
    await fiber.dispose()
    expect(deleted).toEqual(['by-plugin', 'by-root'])
    expect(root.get('sessions')).toBeUndefined()
    // The session object survives for whoever holds it, but no longer broadcasts.
    rootMade.append('turn/start', { turn: 0 })
    expect(events).toEqual([])
    expect(rootMade.length).toBe(1)
  })
})

describe('plugin failures and oversized tool arguments', () => {
  it('reports a throwing session/event listener as PLUGIN_ERROR naming its plugin; the event stays and others still run', async () => {
    const { root, sessions } = await boot()
    const seen: string[] = []
    await root.plugin({
      name: 'chunk-bomb',
      apply(ctx: Context) {
        ctx.on('session/event', (_s, event) => {
          if (event.type === 'assistant/chunk') throw new Error('boom on chunk')
        })
      },
    })
    await root.plugin({
      name: 'watcher',
      apply(ctx: Context) {
        ctx.on('session/event', (_s, event) => void seen.push(event.type))
      },
    })
    const s = sessions.create({ cwd: '/w' })
    s.append('turn/start', { turn: 0 })
    let thrown: unknown
    try {
      s.append('assistant/chunk', { chunk: { kind: 'text-delta', text: 'x' } })
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(PluginError)
    expect(thrown).toMatchObject({ code: 'PLUGIN_ERROR', plugin: 'chunk-bomb' })
    expect((thrown as Error).message).toBe(
      'plugin "chunk-bomb" failed in session/event listener on "assistant/chunk": boom on chunk',
    )
    expect(s.last()?.type).toBe('assistant/chunk')
    expect(seen).toEqual(['turn/start', 'assistant/chunk'])
  })

  it('replays an oversized tool-call argument as a bounded excerpt plus a marker; the log keeps it whole (limit is config)', async () => {
    const root = new Context()
    await root.plugin(SessionStore, { maxToolArgumentChars: 50 })
    const s = root.sessions.create({ cwd: '/w' })
    const big = JSON.stringify({ content: 'y'.repeat(200) })
    const small = JSON.stringify({ content: 'short' })
    s.append('assistant/message', {
      message: {
        role: 'assistant',
        content: [
          { type: 'tool-call', callId: 'c1', name: 'write', arguments: big },
          { type: 'tool-call', callId: 'c2', name: 'write', arguments: small },
        ],
      },
    })
    const replayed = s.deriveMessages()[0] as AssistantMessage
    const [first, second] = replayed.content as Array<{ arguments: string }>
    expect(second.arguments).toBe(small)
    const marker = JSON.parse(first.arguments)
    expect(marker[OMITTED_ARGUMENTS_KEY]).toMatch(
      /^These arguments were 214 characters long, over the 50-character replay limit/,
    )
    expect(marker.excerpt).toBe(big.slice(0, 50))
    // The log is untouched, and the reference derivation agrees given the same limit.
    expect((s.last('assistant/message')!.data.message.content[0] as { arguments: string }).arguments).toBe(big)
    expect(deriveMessagesFromEvents(s.events, 50)).toEqual(s.deriveMessages())
    // Forks and restores use the store's limit too.
    const fork = root.sessions.fork(s)
    expect(fork.deriveMessages()).toEqual(s.deriveMessages())
    await expect(root.plugin(SessionStore, { maxToolArgumentChars: -1 } as never)).rejects.toThrow()
  })
})
