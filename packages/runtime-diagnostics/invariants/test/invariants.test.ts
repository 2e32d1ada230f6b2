import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import type { LlmRequest, Message, ToolSchema } from '@dsh/llm'
import SessionStore, { type Session } from '@dsh/session'
import Invariants, {
  InvariantError,
  MODEL_VISIBLE_MEANS_LOGGED,
  checkRequestReconstructable,
  registerModelVisibleMeansLogged,
} from '../src/index.ts'

const text = (t: string) => [{ type: 'text' as const, text: t }]
const echo: ToolSchema = {
  name: 'echo',
  description: 'echoes',
  parameters: { type: 'object', properties: { value: { type: 'string' } } },
}

async function boot(config?: { enabled?: boolean; failFast?: boolean }) {
  const root = new Context()
  await root.plugin(SessionStore)
  await root.plugin(Invariants, config)
  return root
}

/** What a loop does before a request: log the header and the input, then derive the request. */
function prepareStep(session: Session, system = 'You are dsh.'): { request: LlmRequest; atSeq: number } {
  session.append('request/header', { provider: 'mock', model: 'm1', system, tools: [echo] })
  session.append('user/message', { content: text('hello'), source: { kind: 'human' } })
  const request: LlmRequest = {
    provider: 'mock',
    model: 'm1',
    system,
    tools: [echo],
    messages: session.deriveMessages(),
    metadata: { step: 0 },
  }
  return { request, atSeq: session.length }
}

describe('ctx.invariants registry', () => {
  it('registers, lists, runs in order, and refuses a duplicate id', async () => {
    const root = await boot()
    const session = root.sessions.create({ cwd: '/' })
    const calls: string[] = []
    root.invariants.register({ id: 'a', description: 'first', check: () => void calls.push('a') })
    const offB = root.invariants.register({
      id: 'b',
      description: 'second',
      check: (s, context) => {
        calls.push('b')
        return [{ invariant: 'b', message: `bad ${String(context.tag)}`, sessionId: s.id }]
      },
    })
    expect(root.invariants.list()).toEqual([
      { id: 'a', description: 'first' },
      { id: 'b', description: 'second' },
    ])
    expect(() => root.invariants.register({ id: 'a', description: 'again', check: () => {} })).toThrow(
      'invariant "a" is already registered',
    )
    expect(root.invariants.run(session, { tag: 'x' })).toEqual([
      { invariant: 'b', message: 'bad x', sessionId: session.id },
    ])
    expect(calls).toEqual(['a', 'b'])
    offB()
    expect(root.invariants.list().map((d) => d.id)).toEqual(['a'])
    expect(root.invariants.run(session)).toEqual([])
  })

  it('reports a throwing check as a violation', async () => {
    const root = await boot()
    const session = root.sessions.create({ cwd: '/' })
    root.invariants.register({
      id: 'boom',
      description: 'throws',
      check: () => {
        throw new Error('kaput')
      },
    })
    expect(root.invariants.run(session)).toMatchObject([{ invariant: 'boom', message: 'check threw: kaput' }])
  })

  it('unwinds registrations of a plugin when it unloads', async () => {
    const root = await boot()
    const fiber = root.plugin({
      name: 'checks',
      inject: ['invariants'],
      apply(ctx: Context) {
        ctx.invariants.register({ id: 'plugin-check', description: 'from a plugin', check: () => {} })
      },
    })
    await fiber
    expect(root.invariants.list().map((d) => d.id)).toEqual(['plugin-check'])
    await fiber.dispose()
    expect(root.invariants.list()).toEqual([])
  })

  it('honours enabled: false and failFast: true', async () => {
    const failing = {
      id: 'f',
      description: 'always fails',
      check: () => [
        { invariant: 'f', message: 'no' },
        { invariant: 'f', message: 'no again' },
      ],
    }
    const off = await boot({ enabled: false })
    off.invariants.register(failing)
    expect(off.invariants.run(off.sessions.create({ cwd: '/' }))).toEqual([])

    const fast = await boot({ failFast: true })
    let laterChecks = 0
    fast.invariants.register(failing)
    fast.invariants.register({ id: 'later', description: 'after the failing one', check: () => void laterChecks++ })
    const session = fast.sessions.create({ cwd: '/' })
    let thrown: unknown
    try {
      fast.invariants.run(session)
    } catch (error) {
      thrown = error
    }
    // Asserted outside the catch: a run() that stops throwing fails here instead of passing silently.
    expect(thrown).toBeInstanceOf(InvariantError)
    expect((thrown as InvariantError).violations).toEqual([{ invariant: 'f', message: 'no' }])
    expect((thrown as InvariantError).message).toBe('[f] no')
    expect(laterChecks).toBe(0)

    // Without failFast the same checks are all collected.
    const all = await boot()
    all.invariants.register(failing)
    expect(all.invariants.run(all.sessions.create({ cwd: '/' }))).toEqual([
      { invariant: 'f', message: 'no' },
      { invariant: 'f', message: 'no again' },
    ])
  })

  it('rejects a bad config at load', async () => {
    const root = new Context()
    const fiber = root.plugin(Invariants, { enabled: 'yes' } as never)
    await expect(fiber).rejects.toThrow()
    expect(root.get('invariants')).toBeUndefined()
  })
})

describe('model-visible means logged', () => {
  it('accepts a request built from the log, including after a surface replacement', async () => {
    const root = await boot()
    const session = root.sessions.create({ cwd: '/' })
    const first = prepareStep(session)
    expect(checkRequestReconstructable(session, first.request, first.atSeq)).toEqual([])
    session.append('assistant/message', { message: { role: 'assistant', content: text('hi') } })
    // Later appends do not matter for an earlier request.
    expect(checkRequestReconstructable(session, first.request, first.atSeq)).toEqual([])
    session.surface.replaceRange(0, 3, [{ role: 'user', content: text('summary') }])
    session.append('user/message', { content: text('next'), source: { kind: 'human' } })
    const second: LlmRequest = { ...first.request, messages: session.deriveMessages() }
    expect(checkRequestReconstructable(session, second, session.length)).toEqual([])
  })

  it('detects a message that reached the request without being logged', async () => {
    const root = await boot()
    const session = root.sessions.create({ cwd: '/' })
    const { request, atSeq } = prepareStep(session)
    const injected: Message = { role: 'user', content: text('secret context') }
    const tampered = { ...request, messages: [...request.messages, injected] }
    const violations = checkRequestReconstructable(session, tampered, atSeq)
    expect(violations).toHaveLength(1)
    expect(violations[0]).toMatchObject({
      invariant: MODEL_VISIBLE_MEANS_LOGGED,
      path: 'request.messages[1]',
      seq: atSeq,
    })
    expect(violations[0].message).toContain('at request.messages[1]')
  })

  it('detects an edited message, naming the first differing path', async () => {
    const root = await boot()
    const session = root.sessions.create({ cwd: '/' })
    const { request, atSeq } = prepareStep(session)
    const edited = { ...request, messages: [{ role: 'user', content: text('hellO') }] as Message[] }
    const [violation] = checkRequestReconstructable(session, edited, atSeq)
    expect(violation.path).toBe('request.messages[0].content[0].text')
    expect(violation.details).toEqual({ expected: 'hello', actual: 'hellO' })
  })

  it('detects a system prompt or tool list that differs from the logged header', async () => {
    const root = await boot()
    const session = root.sessions.create({ cwd: '/' })
    const { request, atSeq } = prepareStep(session)
    expect(checkRequestReconstructable(session, { ...request, system: 'You are evil.' }, atSeq)[0].path).toBe(
      'request.system',
    )
    const moreTools = { ...request, tools: [echo, { ...echo, name: 'extra' }] }
    expect(checkRequestReconstructable(session, moreTools, atSeq)[0].path).toBe('request.tools[1]')
    expect(checkRequestReconstructable(session, { ...request, model: 'm2' }, atSeq)[0].path).toBe('request.model')
  })

  it('uses the header in force at the request, not a later one', async () => {
    const root = await boot()
    const session = root.sessions.create({ cwd: '/' })
    const { request, atSeq } = prepareStep(session, 'v1')
    session.append('request/header', { provider: 'mock', model: 'm1', system: 'v2', tools: [echo] })
    expect(checkRequestReconstructable(session, request, atSeq)).toEqual([])
    expect(checkRequestReconstructable(session, request, session.length)[0].path).toBe('request.system')
  })

  it('reports a request with no header logged before it', async () => {
    const root = await boot()
    const session = root.sessions.create({ cwd: '/' })
    session.append('user/message', { content: text('hi'), source: { kind: 'human' } })
    const request: LlmRequest = { provider: 'mock', model: 'm1', messages: session.deriveMessages() }
    const [violation] = checkRequestReconstructable(session, request, session.length)
    expect(violation.message).toContain('no request/header event is logged before seq 1')
  })

  it('rejects an atSeq outside the log', async () => {
    const root = await boot()
    const session = root.sessions.create({ cwd: '/' })
    expect(() => checkRequestReconstructable(session, { provider: 'p', model: 'm', messages: [] }, 5)).toThrow(
      RangeError,
    )
  })

  it('runs through ctx.invariants with {request, atSeq} once registered', async () => {
    const root = await boot()
    const session = root.sessions.create({ cwd: '/' })
    const dispose = registerModelVisibleMeansLogged(root.invariants)
    const { request, atSeq } = prepareStep(session)
    expect(root.invariants.run(session, { request, atSeq })).toEqual([])
    expect(root.invariants.run(session)).toEqual([]) // not applicable without a request
    const tampered = { ...request, messages: [] }
    expect(root.invariants.run(session, { request: tampered, atSeq }).map((v) => v.path)).toEqual([
      'request.messages[0]',
    ])
    dispose()
    expect(root.invariants.list()).toEqual([])
  })
})
