// ctx.subagents with a provider of the test's own (the seam other packages plug acp, claude-code,
// codex and sdk children into), so each end of a child's life can be driven exactly: a result that
// rejects, a dispose or abort that throws, a child without a session, messages to a provider that
// cannot take them, and the service's own unload with children running and requests waiting.
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, router, type AgentScript, type Harness } from '@dsh/agent-loop-testkit'
import { Session } from '@dsh/session'
import SubagentService, {
  SubagentError,
  type ChildOutcome,
  type ProviderChild,
  type SubagentServiceConfig,
} from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

async function boot(config: Partial<SubagentServiceConfig> = {}, scripts: Array<[string, AgentScript]> = []) {
  harness = await createHarness({ script: router(scripts), plugins: [[SubagentService, config]] })
  return harness
}

async function rejection(promise: Promise<unknown> | (() => unknown)): Promise<SubagentError> {
  try {
    await (typeof promise === 'function' ? promise() : promise)
  } catch (error) {
    expect(SubagentError.is(error)).toBe(true)
    return error as SubagentError
  }
  throw new Error('expected a rejection')
}

/** A child whose run the test ends; `calls` records what the seam asked of it. */
function controlled(
  options: {
    sessionId?: string
    agentId?: string
    send?: boolean
    abortThrows?: boolean
    disposeThrows?: boolean
  } = {},
) {
  let finish!: (outcome: ChildOutcome) => void
  let fail!: (error: unknown) => void
  const result = new Promise<ChildOutcome>((resolve, reject) => ((finish = resolve), (fail = reject)))
  const calls: string[] = []
  const child: ProviderChild = {
    ...(options.sessionId !== undefined ? { sessionId: options.sessionId } : {}),
    ...(options.agentId !== undefined ? { agentId: options.agentId } : {}),
    result,
    ...(options.send ? { send: (message: string) => void calls.push(`send ${message}`) } : {}),
    abort(reason) {
      calls.push(`abort ${reason}`)
      if (options.abortThrows) throw new Error('abort failed')
      finish({ status: 'cancelled', text: '' })
    },
    async dispose() {
      calls.push('dispose')
      if (options.disposeThrows) throw new Error('dispose failed')
    },
  }
  return { child, finish, fail, calls }
}

const usage34 = { input: 3, output: 4, cacheRead: 0, cacheWrite: 0, reasoning: 0 }

describe('ctx.subagents with a provider of its own', () => {
  it('a child without a session or agent: logged and recorded without them; text, usage and the finished event', async () => {
    const h = await boot()
    const c = controlled()
    h.ctx.subagents.registerProvider({ name: 'remote', start: () => c.child })
    const finishedEvents: unknown[] = []
    h.ctx.on('subagent/finished', (record) => void finishedEvents.push(record))
    const started = await h.ctx.subagents.start({
      parent: h.agent,
      provider: 'remote',
      description: '  look around  ',
      prompt: 'p',
    })
    expect(started.record).toMatchObject({
      id: 'sub-1',
      provider: 'remote',
      description: 'look around',
      status: 'running',
      background: false,
    })
    expect(started.record).not.toHaveProperty('sessionId')
    expect(started.record).not.toHaveProperty('agentId')
    expect(started.record).not.toHaveProperty('callId')
    const startedEvent = h.session.events.find((e) => e.type === 'subagent/started')!
    expect(startedEvent.data).toEqual({
      id: 'sub-1',
      provider: 'remote',
      description: 'look around',
      depth: 1,
      background: false,
    })
    c.finish({ status: 'completed', text: 'found it', usage: usage34 })
    const final = await started.finished
    expect(final).toMatchObject({ status: 'completed', text: 'found it', usage: usage34 })
    expect(final.finishedAt).toBeGreaterThanOrEqual(final.startedAt)
    expect(final).not.toHaveProperty('error')
    expect(c.calls).toEqual(['dispose'])
    expect(finishedEvents).toEqual([final])
    const finishedEvent = h.session.events.find((e) => e.type === 'subagent/finished')!
    expect(finishedEvent.data).toEqual({
      id: 'sub-1',
      status: 'completed',
      text: 'found it',
      usage: usage34,
    })
  })

  it('a result that rejects is a failed child with CHILD_ERROR; a text-less outcome records an empty text', async () => {
    const h = await boot()
    const c = controlled()
    h.ctx.subagents.registerProvider({ name: 'remote', start: () => c.child })
    const started = await h.ctx.subagents.start({
      parent: h.agent,
      provider: 'remote',
      description: 'd',
      prompt: 'p',
      background: true,
      callId: 'call_3',
    })
    expect(started.record).toMatchObject({ background: true, callId: 'call_3' })
    c.fail(new Error('the process died'))
    const final = await started.finished
    expect(final).toMatchObject({
      status: 'failed',
      text: '',
      error: { code: 'CHILD_ERROR', message: 'the process died' },
    })
    expect(final).not.toHaveProperty('usage')
    const logged = h.session.events.find((e) => e.type === 'subagent/finished')!.data
    expect(logged).toEqual({
      id: 'sub-1',
      status: 'failed',
      text: '',
      error: { code: 'CHILD_ERROR', message: 'the process died' },
    })
    expect(h.session.events.find((e) => e.type === 'subagent/started')!.data).toMatchObject({
      background: true,
      callId: 'call_3',
    })
    const c2 = controlled()
    h.ctx.subagents.registerProvider({ name: 'other', start: () => c2.child })
    const second = await h.ctx.subagents.start({ parent: h.agent, provider: 'other', description: 'd', prompt: 'p' })
    c2.finish({ status: 'failed', text: undefined as never, error: { code: 'X', message: 'own error' } })
    expect(await second.finished).toMatchObject({
      id: 'sub-2',
      status: 'failed',
      text: '',
      error: { code: 'X', message: 'own error' },
    })
  })

  it('a dispose or an abort that throws is logged; the child still finishes and frees its slot', async () => {
    const h = await boot({ maxConcurrent: 1, maxQueued: 0 })
    const c = controlled({ disposeThrows: true, abortThrows: true })
    h.ctx.subagents.registerProvider({ name: 'remote', start: () => c.child })
    const started = await h.ctx.subagents.start({ parent: h.agent, provider: 'remote', description: 'd', prompt: 'p' })
    // The abort throws: the child keeps running until its result settles.
    const record = h.ctx.subagents.interrupt(h.agent, 'sub-1')
    expect(record.status).toBe('running')
    expect(c.calls).toEqual(['abort interrupted by its parent'])
    // A second stop is not sent: the first one is what the record will say.
    expect(() => h.ctx.subagents.interrupt(h.agent, 'sub-1')).toThrow(
      expect.objectContaining({ code: 'AGENT_FINISHED' }),
    )
    c.finish({ status: 'completed', text: 'done anyway' })
    expect(await started.finished).toMatchObject({
      status: 'cancelled',
      error: { code: 'INTERRUPTED', message: 'interrupted by its parent' },
      text: 'done anyway',
    })
    expect(c.calls).toEqual(['abort interrupted by its parent', 'dispose'])
    // The slot is free again.
    const c2 = controlled()
    h.ctx.subagents.registerProvider({ name: 'next', start: () => c2.child })
    await h.ctx.subagents.start({ parent: h.agent, provider: 'next', description: 'd', prompt: 'p' })
    c2.finish({ status: 'completed', text: '' })
  })

  it('messages: refused for a provider that cannot take them, delivered to one that can', async () => {
    const h = await boot()
    const mute = controlled()
    const talker = controlled({ send: true })
    h.ctx.subagents.registerProvider({ name: 'mute', start: () => mute.child })
    h.ctx.subagents.registerProvider({ name: 'talker', start: () => talker.child })
    await h.ctx.subagents.start({ parent: h.agent, provider: 'mute', description: 'd', prompt: 'p' })
    await h.ctx.subagents.start({ parent: h.agent, provider: 'talker', description: 'd', prompt: 'p' })
    expect(() => h.ctx.subagents.send(h.agent, 'sub-1', 'hello')).toThrow(
      expect.objectContaining({
        code: 'NOT_SUPPORTED',
        message: 'subagent sub-1 (provider "mute") cannot receive messages while it runs',
      }),
    )
    expect(h.ctx.subagents.send(h.session.id, 'sub-2', 'hello').status).toBe('running')
    expect(talker.calls).toEqual(['send hello'])
    expect(() => h.ctx.subagents.send(h.agent, 'sub-9', 'x')).toThrow(
      expect.objectContaining({
        code: 'UNKNOWN_AGENT',
        message: 'no subagent "sub-9" was started by this agent (known: sub-1, sub-2)',
      }),
    )
    mute.finish({ status: 'completed', text: '' })
    talker.finish({ status: 'completed', text: '' })
    expect(await h.ctx.subagents.wait(h.agent, 'sub-1')).toMatchObject({ id: 'sub-1', status: 'completed' })
    expect(await h.ctx.subagents.wait(h.session, 'sub-2')).toMatchObject({ id: 'sub-2', status: 'completed' })
    expect(h.ctx.subagents.wait(h.agent, 'sub-9')).toBeUndefined()
    expect(h.ctx.subagents.wait('no-such-session', 'sub-1')).toBeUndefined()
  })

  it("a resumed parent's children from its log are finished, not unknown", async () => {
    const h = await boot()
    const c = controlled({ send: true })
    h.ctx.subagents.registerProvider({ name: 'remote', start: () => c.child })
    const started = await h.ctx.subagents.start({ parent: h.agent, provider: 'remote', description: 'd', prompt: 'p' })
    c.finish({ status: 'completed', text: 'done' })
    await started.finished
    const resumed = new Session({ id: 'resumed', cwd: h.session.cwd, events: h.session.events })
    for (const act of [
      () => h.ctx.subagents.send(resumed, 'sub-1', 'more'),
      () => h.ctx.subagents.interrupt(resumed, 'sub-1'),
    ])
      expect(act).toThrow(
        expect.objectContaining({
          code: 'AGENT_FINISHED',
          message: 'subagent sub-1 has already finished; start a new one instead',
        }),
      )
    expect(() => h.ctx.subagents.send(resumed, 'sub-2', 'more')).toThrow(
      expect.objectContaining({
        code: 'UNKNOWN_AGENT',
        message: 'no subagent "sub-2" was started by this agent (known: sub-1)',
      }),
    )
    expect(h.ctx.subagents.wait(resumed, 'sub-1')).toBeUndefined()
  })

  it('get and list by session id, agent or session; an unknown parent has no children', async () => {
    const h = await boot()
    const c = controlled({ sessionId: 'remote-session', agentId: 'remote-agent' })
    h.ctx.subagents.registerProvider({ name: 'remote', start: () => c.child })
    const started = await h.ctx.subagents.start({ parent: h.agent, provider: 'remote', description: 'd', prompt: 'p' })
    expect(started.record).toMatchObject({ sessionId: 'remote-session', agentId: 'remote-agent' })
    expect(h.ctx.subagents.depthOf('remote-agent')).toBe(1)
    expect(h.ctx.subagents.get(h.session.id, 'sub-1')?.status).toBe('running')
    expect(h.ctx.subagents.get(h.agent, 'sub-2')).toBeUndefined()
    expect(h.ctx.subagents.list('no-such-session')).toEqual([])
    c.finish({ status: 'completed', text: 'ok' })
    await started.finished
    expect(h.ctx.subagents.depthOf('remote-agent')).toBe(0)
    // Read back from the log alone: the ids of the child's own session and agent are kept.
    const [fromLog] = h.ctx.subagents.list(new Session({ id: 'copy', cwd: h.session.cwd, events: h.session.events }))
    expect(fromLog).toMatchObject({
      id: 'sub-1',
      status: 'completed',
      sessionId: 'remote-session',
      agentId: 'remote-agent',
      text: 'ok',
      parentAgentId: '',
    })
  })

  it('a log with a finish for a child it never started, and one with an error and usage, read back as written', async () => {
    const h = await boot()
    const events = [
      { type: 'subagent/finished', data: { id: 'sub-0', status: 'completed', text: 'orphan' } },
      {
        type: 'subagent/started',
        data: { id: 'sub-1', provider: 'spawn', description: 'a', depth: 1, background: true, callId: 'c1' },
      },
      { type: 'subagent/report', data: { id: 'sub-9', message: 'to nobody' } },
      {
        type: 'subagent/finished',
        data: {
          id: 'sub-1',
          status: 'failed',
          text: '',
          error: { code: 'TIMEOUT', message: 'slow' },
          usage: { input: 1, output: 2 },
        },
      },
    ]
    const session = new Session({ id: 'logged', cwd: h.session.cwd })
    for (const event of events) session.append(event.type as never, event.data as never)
    const records = h.ctx.subagents.list(session)
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({
      id: 'sub-1',
      background: true,
      callId: 'c1',
      status: 'failed',
      error: { code: 'TIMEOUT', message: 'slow' },
      usage: { input: 1, output: 2 },
    })
    expect(records[0]).not.toHaveProperty('reports')
  })

  it('a timeout names its limit in seconds', async () => {
    const h = await boot({ timeoutMs: 1_500 })
    const c = controlled()
    h.ctx.subagents.registerProvider({ name: 'remote', start: () => c.child })
    const final = await h.ctx.subagents.run({ parent: h.agent, provider: 'remote', description: 'd', prompt: 'p' })
    expect(final).toMatchObject({
      status: 'failed',
      error: { code: 'TIMEOUT', message: 'the subagent did not finish within 2 s and was stopped' },
    })
    expect(c.calls[0]).toBe('abort the subagent did not finish within 2 s and was stopped')
  })

  it('unloading the service stops its running children and fails the requests waiting for a slot', async () => {
    harness = await createHarness({ script: router([]), plugins: [] })
    const h = harness
    const fork = await h.mount(SubagentService, { maxConcurrent: 1, maxQueued: 4 })
    const service = h.ctx.subagents
    const c = controlled()
    service.registerProvider({ name: 'remote', start: () => c.child })
    const running = await service.start({ parent: h.agent, provider: 'remote', description: 'd', prompt: 'p' })
    const waiting = service.start({ parent: h.agent, provider: 'remote', description: 'd', prompt: 'p' })
    // The second request is queued: with the queue at one, a third is told so.
    const probe = new AbortController()
    const third = service.start({
      parent: h.agent,
      provider: 'remote',
      description: 'd',
      prompt: 'p',
      signal: probe.signal,
    })
    probe.abort()
    expect((await rejection(third)).message).toBe('the request was cancelled while it waited for a slot')
    await fork.dispose()
    expect(await rejection(waiting)).toMatchObject({
      code: 'CANCELLED',
      message: 'the subagent service was unloaded while the request waited for a slot',
    })
    expect(c.calls[0]).toBe('abort the subagent service was unloaded')
    expect(await running.finished).toMatchObject({
      status: 'cancelled',
      error: { code: 'PARENT_GONE', message: 'the subagent service was unloaded' },
    })
  })

  it('a request that waited for a slot while its parent was disposed is refused and hands the slot on', async () => {
    const h = await boot({ maxConcurrent: 1, maxQueued: 4 })
    const first = controlled()
    h.ctx.subagents.registerProvider({ name: 'remote', start: () => first.child })
    const running = await h.ctx.subagents.start({ parent: h.agent, provider: 'remote', description: 'd', prompt: 'p' })
    const other = h.ctx.agents.create({ cwd: h.session.cwd, model: h.agent.model })
    const doomed = h.ctx.subagents.start({ parent: other, provider: 'remote', description: 'd', prompt: 'p' })
    const next = controlled()
    h.ctx.subagents.registerProvider({ name: 'next', start: () => next.child })
    const after = h.ctx.subagents.start({ parent: h.agent, provider: 'next', description: 'd', prompt: 'p' })
    await other.dispose()
    first.finish({ status: 'completed', text: '' })
    await running.finished
    expect(await rejection(doomed)).toMatchObject({
      code: 'INVALID_REQUEST',
      message: `agent ${other.id} was disposed while its subagent request waited for a slot`,
    })
    // The slot went to the next request in line.
    expect((await after).record.provider).toBe('next')
    next.finish({ status: 'completed', text: '' })
  })

  it('refuses a parent that is not an agent or is disposed, and a provider that is not one', async () => {
    const h = await boot()
    expect(
      (await rejection(h.ctx.subagents.start({ parent: undefined as never, description: 'd', prompt: 'p' }))).message,
    ).toBe('a subagent needs a parent agent')
    expect(
      (await rejection(h.ctx.subagents.start({ parent: { id: 'x' } as never, description: 'd', prompt: 'p' }))).code,
    ).toBe('INVALID_REQUEST')
    expect(
      (await rejection(h.ctx.subagents.start({ parent: h.agent, description: 5 as never, prompt: 'p' }))).message,
    ).toBe('description must be a non-empty string (a few words naming the task)')
    expect(
      (await rejection(h.ctx.subagents.start({ parent: h.agent, description: 'd', prompt: 5 as never }))).message,
    ).toBe('prompt must be a non-empty string (the complete task for the child)')
    const other = h.ctx.agents.create({ cwd: h.session.cwd, model: h.agent.model })
    await other.dispose()
    expect((await rejection(h.ctx.subagents.start({ parent: other, description: 'd', prompt: 'p' }))).message).toBe(
      `agent ${other.id} is disposed and cannot start children`,
    )
    expect(() => h.ctx.subagents.registerProvider(undefined as never)).toThrow(
      'subagents.registerProvider: expected {name, start}',
    )
    expect(() => h.ctx.subagents.registerProvider({ name: 'x' } as never)).toThrow(
      'subagents.registerProvider: expected {name, start}',
    )
    expect(() => h.ctx.subagents.registerProvider({ name: 'a'.repeat(33), start: () => controlled().child })).toThrow(
      'invalid provider name',
    )
    // A disposed registration frees the name; a second disposer call does not remove a newer one.
    const off = h.ctx.subagents.registerProvider({ name: 'temp', start: () => controlled().child })
    expect(h.ctx.subagents.providers().map((p) => p.name)).toEqual(['spawn', 'fork', 'temp'])
    off()
    const newer = { name: 'temp', start: () => controlled().child }
    h.ctx.subagents.registerProvider(newer)
    off()
    expect(h.ctx.subagents.providers()).toContain(newer)
    expect(h.ctx.subagents.limits).toEqual({ maxDepth: 2, maxConcurrent: 4, timeoutMs: 600_000 })
    expect(h.ctx.subagents.defaultProvider).toBe('spawn')
    const deep = await rejection(
      h.ctx.subagents.start({ parent: h.agent, description: 'd', prompt: 'p', provider: 'nope' }),
    )
    expect(deep.message).toBe('unknown subagent provider "nope"; available: spawn, fork, temp')
  })

  it('a depth refusal in a root process says only the depth and the limit', async () => {
    const h = await boot({ maxDepth: 1 }, [['slow', () => ({ text: 'working', hang: true })]])
    const started = await h.ctx.subagents.start({ parent: h.agent, description: 'd', prompt: 'slow' })
    const child = h.ctx.agents.get(started.record.agentId!)!
    const refused = await rejection(h.ctx.subagents.start({ parent: child, description: 'd', prompt: 'p' }))
    expect(refused.message).toBe(
      'delegation depth limit reached: this agent is at depth 1 and the limit is 1; do the work yourself',
    )
    h.ctx.subagents.interrupt(h.agent, started.record.id)
    await started.finished
  })
})
