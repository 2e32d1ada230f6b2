// ctx.subagents with the real agent loop (agent-loop-testkit): spawn and fork children, their links
// in both logs, the limits, cancellation from every direction, messages, and records read back
// from a reloaded parent log.
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, lastUserText, router, type AgentScript, type Harness } from '@dsh/agent-loop-testkit'
import { Session } from '@dsh/session'
import SandboxPolicyService from '@dsh/sandbox-policy'
import SubagentService, {
  inheritedDepth,
  inheritedModeFloor,
  SubagentError,
  type ChildInheritance,
  type SubagentServiceConfig,
} from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

const text =
  (t: string): AgentScript =>
  () => ({ text: t, usage: { input: 10, output: 5 } })
const hang: AgentScript = () => ({ text: 'working', hang: true })

async function boot(scripts: Array<[string, AgentScript]>, config: Partial<SubagentServiceConfig> = {}) {
  harness = await createHarness({ script: router(scripts), plugins: [[SubagentService, config]] })
  return harness
}

async function rejection(promise: Promise<unknown>): Promise<SubagentError> {
  try {
    await promise
  } catch (error) {
    expect(SubagentError.is(error)).toBe(true)
    return error as SubagentError
  }
  throw new Error('expected a rejection')
}

describe('ctx.subagents', () => {
  it('spawn: a fresh child with its own linked session answers; both logs record the link', async () => {
    const h = await boot([['count the files', text('there are 3 files')]])
    const record = await h.ctx.subagents.run({ parent: h.agent, description: 'count files', prompt: 'count the files' })
    expect(record).toMatchObject({
      id: 'sub-1',
      provider: 'spawn',
      status: 'completed',
      text: 'there are 3 files',
      depth: 1,
      background: false,
    })
    expect(record.usage).toMatchObject({ input: 10, output: 5 })
    const started = h.session.events.filter((e) => e.type === 'subagent/started')
    const finished = h.session.events.filter((e) => e.type === 'subagent/finished')
    expect(started.map((e) => e.data)).toEqual([
      expect.objectContaining({ id: 'sub-1', provider: 'spawn', sessionId: record.sessionId, depth: 1 }),
    ])
    expect(finished.map((e) => e.data)).toEqual([
      expect.objectContaining({ id: 'sub-1', status: 'completed', text: 'there are 3 files' }),
    ])
    // The child saw only its task, not the parent's (empty) history; its session starts with the link.
    const childRequest = h.model.requests.find((r) => r.metadata?.agentId === record.agentId)!
    expect(childRequest.messages).toHaveLength(1)
    expect(lastUserText(childRequest)).toBe('count the files')
    // Finished children are disposed and leave the live store (their log stays with persistence).
    expect(h.ctx.agents.get(record.agentId!)).toBeUndefined()
    expect(h.ctx.sessions.get(record.sessionId!)).toBeUndefined()
    expect(h.ctx.subagents.depthOf(record.agentId!)).toBe(0)
  })

  it('the child session opens with subagent/link naming parent, depth and call', async () => {
    const h = await boot([['task', text('done')]])
    let first: unknown
    h.ctx.on('session/created', (session) => {
      session.subscribe((event) => {
        if (first === undefined) first = event
      })
    })
    await h.ctx.subagents.run({ parent: h.agent, description: 'd', prompt: 'task', callId: 'call_9' })
    expect(first).toMatchObject({
      type: 'subagent/link',
      seq: 0,
      data: {
        id: 'sub-1',
        provider: 'spawn',
        parentSessionId: h.session.id,
        parentAgentId: h.agent.id,
        depth: 1,
        callId: 'call_9',
      },
    })
  })

  it("fork: the child starts from the parent's completed turns", async () => {
    const h = await boot([
      ['what was the number', text('the number was 42')],
      ['remember 42', text('noted')],
    ])
    await h.prompt('remember 42')
    const record = await h.ctx.subagents.run({
      parent: h.agent,
      provider: 'fork',
      description: 'recall',
      prompt: 'what was the number?',
    })
    expect(record).toMatchObject({ status: 'completed', text: 'the number was 42', provider: 'fork' })
    const childRequest = h.model.requests.find((r) => r.metadata?.agentId === record.agentId)!
    expect(childRequest.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user'])
    expect(JSON.stringify(childRequest.messages[0])).toContain('remember 42')
  })

  it('refuses bad requests, unknown providers and exceeded limits with one clear error each', async () => {
    const h = await boot([['slow', hang]], { maxConcurrent: 1, maxDepth: 1, maxQueued: 0 })
    expect((await rejection(h.ctx.subagents.start({ parent: h.agent, description: 'x', prompt: '  ' }))).code).toBe(
      'INVALID_REQUEST',
    )
    expect((await rejection(h.ctx.subagents.start({ parent: h.agent, description: '', prompt: 'p' }))).code).toBe(
      'INVALID_REQUEST',
    )
    const unknown = await rejection(
      h.ctx.subagents.start({ parent: h.agent, provider: 'nope', description: 'x', prompt: 'p' }),
    )
    expect(unknown.code).toBe('UNKNOWN_PROVIDER')
    expect(unknown.message).toBe('unknown subagent provider "nope"; available: spawn, fork')
    const started = await h.ctx.subagents.start({ parent: h.agent, description: 'slow one', prompt: 'slow' })
    const busy = await rejection(h.ctx.subagents.start({ parent: h.agent, description: 'x', prompt: 'slow' }))
    expect(busy.code).toBe('CONCURRENCY_LIMIT')
    expect(busy.message).toContain('limit is 1')
    const child = h.ctx.agents.get(started.record.agentId!)!
    expect(h.ctx.subagents.depthOf(child)).toBe(1)
    const deep = await rejection(h.ctx.subagents.start({ parent: child, description: 'x', prompt: 'slow' }))
    expect(deep.code).toBe('DEPTH_LIMIT')
    // Refusals logged nothing: only the one real child is in the parent's log.
    expect(h.session.events.filter((e) => e.type === 'subagent/started')).toHaveLength(1)
    h.ctx.subagents.interrupt(h.agent, started.record.id)
    expect(await started.finished).toMatchObject({ status: 'cancelled', error: { code: 'INTERRUPTED' } })
  })

  it("at the concurrency limit a root agent's request waits its turn (first come, first served) and can be withdrawn", async () => {
    const h = await boot(
      [
        ['slow', hang],
        ['quick', text('quick done')],
      ],
      { maxConcurrent: 1, maxQueued: 2 },
    )
    const first = await h.ctx.subagents.start({ parent: h.agent, description: 'slow one', prompt: 'slow' })
    let secondStarted = false
    const second = h.ctx.subagents
      .start({ parent: h.agent, description: 'waits', prompt: 'quick' })
      .then((s) => ((secondStarted = true), s))
    const withdrawn = new AbortController()
    const third = h.ctx.subagents.start({
      parent: h.agent,
      description: 'gives up',
      prompt: 'quick',
      signal: withdrawn.signal,
    })
    // The queue is full (2 waiting): a fourth request is refused at once.
    const overflow = await rejection(h.ctx.subagents.start({ parent: h.agent, description: 'x', prompt: 'quick' }))
    expect(overflow).toMatchObject({
      code: 'CONCURRENCY_LIMIT',
      message: expect.stringContaining('2 more are waiting'),
    })
    withdrawn.abort()
    expect((await rejection(third)).code).toBe('CANCELLED')
    // Withdrawing a waiter frees no slot: the queue still holds `second`. Shown through the queue
    // itself rather than by waiting: one more request waits, and the next is refused naming two.
    const probe = new AbortController()
    const fourth = h.ctx.subagents.start({
      parent: h.agent,
      description: 'probe',
      prompt: 'quick',
      signal: probe.signal,
    })
    const full = await rejection(h.ctx.subagents.start({ parent: h.agent, description: 'x', prompt: 'quick' }))
    expect(full).toMatchObject({ code: 'CONCURRENCY_LIMIT', message: expect.stringContaining('2 more are waiting') })
    probe.abort()
    expect((await rejection(fourth)).code).toBe('CANCELLED')
    expect(secondStarted).toBe(false)
    // A nested child never waits (its parent holds a slot): refused with a reason.
    const child = h.ctx.agents.get(first.record.agentId!)!
    const nested = await rejection(h.ctx.subagents.start({ parent: child, description: 'x', prompt: 'quick' }))
    expect(nested).toMatchObject({
      code: 'CONCURRENCY_LIMIT',
      message: expect.stringContaining('do this part yourself'),
    })
    h.ctx.subagents.interrupt(h.agent, first.record.id)
    const next = await second
    expect(next.record.id).toBe('sub-2')
    expect(await next.finished).toMatchObject({ status: 'completed', text: 'quick done' })
    // Only the two that ran were logged.
    expect(h.session.events.filter((e) => e.type === 'subagent/started').map((e) => e.data.id)).toEqual([
      'sub-1',
      'sub-2',
    ])
  })

  it('a running child reports to its parent: logged, kept on the record, announced; others are refused', async () => {
    const h = await boot([['slow', hang]])
    const started = await h.ctx.subagents.start({ parent: h.agent, description: 'slow one', prompt: 'slow' })
    const child = h.ctx.agents.get(started.record.agentId!)!
    const heard: Array<[string, string]> = []
    h.ctx.on('subagent/report', (record, message) => void heard.push([record.id, message]))
    expect(h.ctx.subagents.report(child, 'halfway there').reports).toEqual(['halfway there'])
    expect(heard).toEqual([['sub-1', 'halfway there']])
    expect(h.session.events.filter((e) => e.type === 'subagent/report').map((e) => e.data)).toEqual([
      { id: 'sub-1', message: 'halfway there' },
    ])
    expect((await rejection(Promise.resolve().then(() => h.ctx.subagents.report(h.agent, 'hi')))).code).toBe(
      'NOT_A_SUBAGENT',
    )
    expect((await rejection(Promise.resolve().then(() => h.ctx.subagents.report(child, ' ')))).code).toBe(
      'INVALID_REQUEST',
    )
    expect(
      (await rejection(Promise.resolve().then(() => h.ctx.subagents.report(child, 'x'.repeat(20_001))))).code,
    ).toBe('INVALID_REQUEST')
    // Exactly the limit is accepted.
    expect(h.ctx.subagents.report(child, 'x'.repeat(20_000)).reports).toEqual(['halfway there', 'x'.repeat(20_000)])
    h.ctx.subagents.interrupt(h.agent, started.record.id)
    await started.finished
    // Read back from the log alone, the record still carries the reports; a finished child cannot report.
    const fromLog = h.ctx.subagents.list(new Session({ id: 'reloaded', cwd: h.session.cwd, events: h.session.events }))
    expect(fromLog[0].reports).toEqual(['halfway there', 'x'.repeat(20_000)])
    expect((await rejection(Promise.resolve().then(() => h.ctx.subagents.report(child.id, 'late')))).code).toBe(
      'NOT_A_SUBAGENT',
    )
  })

  it('a grandchild is allowed within maxDepth and carries depth 2', async () => {
    const h = await boot(
      [
        ['outer', hang],
        ['inner', text('inner done')],
      ],
      { maxDepth: 2 },
    )
    const outer = await h.ctx.subagents.start({ parent: h.agent, description: 'outer', prompt: 'outer' })
    const child = h.ctx.agents.get(outer.record.agentId!)!
    const inner = await h.ctx.subagents.run({ parent: child, description: 'inner', prompt: 'inner' })
    expect(inner).toMatchObject({ depth: 2, status: 'completed', parentAgentId: child.id })
    h.ctx.subagents.interrupt(h.agent, outer.record.id)
    await outer.finished
  })

  it("cancellation: the caller's signal, the timeout and the parent's disposal each stop a hanging child", async () => {
    const h = await boot([['slow', hang]], { timeoutMs: 50 })
    // Timeout (the only deadline here is the service's own).
    const timed = await h.ctx.subagents.run({ parent: h.agent, description: 'slow', prompt: 'slow' })
    expect(timed).toMatchObject({ status: 'failed', error: { code: 'TIMEOUT' } })
    await h.dispose()
    const h2 = await boot([['slow', hang]], { timeoutMs: 0 })
    const controller = new AbortController()
    const started = await h2.ctx.subagents.start({
      parent: h2.agent,
      description: 'slow',
      prompt: 'slow',
      signal: controller.signal,
    })
    controller.abort()
    expect(await started.finished).toMatchObject({ status: 'cancelled', error: { code: 'CANCELLED' } })
    // An already-aborted signal cancels at once.
    const early = await h2.ctx.subagents.run({
      parent: h2.agent,
      description: 'slow',
      prompt: 'slow',
      signal: AbortSignal.abort(),
    })
    expect(early.status).toBe('cancelled')
    // The parent going away takes a background child with it.
    const bg = await h2.ctx.subagents.start({ parent: h2.agent, description: 'bg', prompt: 'slow', background: true })
    await h2.agent.dispose()
    expect(await bg.finished).toMatchObject({ status: 'cancelled', error: { code: 'PARENT_GONE' } })
    expect(h2.ctx.agents.list()).toHaveLength(0)
  })

  it('send reaches a running child at its next step; finished and unknown ids are refused', async () => {
    let seen = ''
    const h = await boot([
      [
        'step twice',
        (step, request) => {
          if (step === 0) return { toolCalls: [{ name: 'wait_for_message', arguments: {} }] }
          seen = lastUserText(request)
          return { text: `got: ${seen}` }
        },
      ],
    ])
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    h.ctx.tools.register({
      name: 'wait_for_message',
      description: 'waits',
      parameters: { type: 'object', properties: {} },
      execute: async () => {
        await gate
        return { content: 'waited' }
      },
    })
    const started = await h.ctx.subagents.start({ parent: h.agent, description: 'd', prompt: 'step twice' })
    // Wait until the child is inside its tool call, then message it.
    while (!h.model.requests.some((r) => r.metadata?.agentId === started.record.agentId))
      await new Promise((r) => setTimeout(r, 5))
    h.ctx.subagents.send(h.agent, 'sub-1', 'also check the README')
    release()
    const final = await started.finished
    expect(final.text).toBe('got: also check the README')
    expect(() => h.ctx.subagents.send(h.agent, 'sub-1', 'more')).toThrow(
      expect.objectContaining({ code: 'AGENT_FINISHED' }),
    )
    expect(() => h.ctx.subagents.interrupt(h.agent, 'sub-1')).toThrow(
      expect.objectContaining({ code: 'AGENT_FINISHED' }),
    )
    expect(() => h.ctx.subagents.interrupt(h.agent, 'sub-7')).toThrow(
      expect.objectContaining({
        code: 'UNKNOWN_AGENT',
        message: 'no subagent "sub-7" was started by this agent (known: sub-1)',
      }),
    )
    expect(() => h.ctx.subagents.send(h.agent, 'sub-1', ' ')).toThrow(
      expect.objectContaining({ code: 'INVALID_REQUEST' }),
    )
  })

  it('list: a reloaded parent log gives back its children; one never finished reads interrupted; ids continue', async () => {
    const h = await boot([
      ['quick', text('quick answer')],
      ['slow', hang],
    ])
    await h.ctx.subagents.run({ parent: h.agent, description: 'quick one', prompt: 'quick' })
    const slow = await h.ctx.subagents.start({ parent: h.agent, description: 'slow one', prompt: 'slow' })
    // What a crash leaves: the log as it is now (sub-2 started, not finished).
    const copy = new Session({ id: 'reloaded', cwd: h.session.cwd, events: h.session.events })
    const records = h.ctx.subagents.list(copy)
    expect(records.map((r) => [r.id, r.status, r.description])).toEqual([
      ['sub-1', 'completed', 'quick one'],
      ['sub-2', 'interrupted', 'slow one'],
    ])
    expect(records[0].text).toBe('quick answer')
    expect(records[0].sessionId).toBeTypeOf('string')
    // The live parent sees the live state of the same children.
    expect(h.ctx.subagents.list(h.agent).map((r) => r.status)).toEqual(['completed', 'running'])
    h.ctx.subagents.interrupt(h.agent, slow.record.id)
    await slow.finished
    // A resumed parent continues numbering after the children in its log.
    const resumed = h.ctx.agents.create({
      cwd: h.session.cwd,
      model: h.agent.model,
      session: h.ctx.sessions.create({ cwd: h.session.cwd, events: h.session.events }),
    })
    const next = await h.ctx.subagents.run({ parent: resumed, description: 'again', prompt: 'quick' })
    expect(next.id).toBe('sub-3')
  })

  it('a provider that cannot start is a START_FAILED refusal that frees its slot', async () => {
    const h = await boot([], { maxConcurrent: 1 })
    h.ctx.subagents.registerProvider({ name: 'broken', start: () => Promise.reject(new Error('no binary')) })
    const error = await rejection(
      h.ctx.subagents.start({ parent: h.agent, provider: 'broken', description: 'x', prompt: 'p' }),
    )
    expect(error).toMatchObject({
      code: 'START_FAILED',
      message: 'provider "broken" could not start the child: no binary',
    })
    const again = await rejection(
      h.ctx.subagents.start({ parent: h.agent, provider: 'broken', description: 'x', prompt: 'p' }),
    )
    expect(again.code).toBe('START_FAILED')
    expect(() =>
      h.ctx.subagents.registerProvider({ name: 'broken', start: () => Promise.reject(new Error('x')) }),
    ).toThrow('already registered')
    expect(() =>
      h.ctx.subagents.registerProvider({ name: 'Bad Name', start: () => Promise.reject(new Error('x')) }),
    ).toThrow('invalid provider name')
  })
})

describe('what a child inherits from its parent', () => {
  it("a child in another process is handed the parent session's mode and the depth variables; an in-process child gets a session override too", async () => {
    harness = await createHarness({
      script: router([['wait', hang]]),
      plugins: [
        [SandboxPolicyService, { defaultMode: 'workspace-write', announce: false }],
        [SubagentService, {}],
      ],
    })
    const h = harness
    h.ctx.sandboxPolicy.setMode(h.session.id, 'read-only')
    let seen: ChildInheritance | undefined
    h.ctx.subagents.registerProvider({
      name: 'probe',
      start: ({ inherit }) => {
        seen = inherit
        return { result: Promise.resolve({ status: 'completed', text: 'ok' }), abort() {}, async dispose() {} }
      },
    })
    await h.ctx.subagents.run({ parent: h.agent, provider: 'probe', description: 'probe', prompt: 'p' })
    expect(seen).toMatchObject({
      mode: 'read-only',
      depth: 1,
      maxDepth: 2,
      patchFiles: [],
      policy: { mode: 'read-only', writableRoots: [] },
    })
    expect(seen!.env).toEqual({
      DSH_PERMISSION_MODE: 'read-only',
      DSH_SUBAGENT_DEPTH: '1',
      DSH_SUBAGENT_MAX_DEPTH: '2',
    })
    // The in-process child's own session is read-only as well, although the preset default is not.
    const started = await h.ctx.subagents.start({ parent: h.agent, description: 'wait', prompt: 'wait' })
    expect(h.ctx.sandboxPolicy.modeFor(started.record.sessionId)).toBe('read-only')
    h.ctx.subagents.interrupt(h.agent, started.record.id)
    await started.finished
  })

  it("a process started as a subagent keeps its parent's depth and limit", async () => {
    process.env.DSH_SUBAGENT_DEPTH = '2'
    process.env.DSH_SUBAGENT_MAX_DEPTH = '2'
    try {
      const h = await boot([], { maxDepth: 5 })
      expect(h.ctx.subagents.baseDepth).toBe(2)
      expect(h.ctx.subagents.depthOf(h.agent)).toBe(2)
      const refused = await rejection(h.ctx.subagents.start({ parent: h.agent, description: 'd', prompt: 'p' }))
      expect(refused.code).toBe('DEPTH_LIMIT')
      expect(refused.message).toBe(
        'delegation depth limit reached: this agent is at depth 2 (it is itself a subagent in a process its parent started, DSH_SUBAGENT_DEPTH=2) and the limit is 2; do the work yourself',
      )
    } finally {
      delete process.env.DSH_SUBAGENT_DEPTH
      delete process.env.DSH_SUBAGENT_MAX_DEPTH
    }
  })

  it('the inherited variables: bad values are one-line errors; the mode floor holds only in a subagent process', () => {
    expect(() => inheritedDepth({ DSH_SUBAGENT_DEPTH: '-1' })).toThrow(
      'DSH_SUBAGENT_DEPTH must be a whole number from 0 to 999 (got "-1"); it is set by a parent dsh for its subagent process',
    )
    expect(() => inheritedDepth({ DSH_SUBAGENT_MAX_DEPTH: '1e3' })).toThrow(
      'DSH_SUBAGENT_MAX_DEPTH must be a whole number from 0 to 999 (got "1e3")',
    )
    expect(inheritedDepth({})).toEqual({ depth: 0 })
    expect(() => inheritedModeFloor({ DSH_SUBAGENT_DEPTH: '1', DSH_PERMISSION_MODE: 'sideways' })).toThrow(
      'DSH_PERMISSION_MODE must be one of read-only, workspace-write, danger-full-access in a subagent process (got "sideways"); it is set by the parent dsh',
    )
    expect(inheritedModeFloor({ DSH_SUBAGENT_DEPTH: '1', DSH_PERMISSION_MODE: 'read-only' })).toBe('read-only')
    // A user's own DSH_PERMISSION_MODE (a preset name) in a root process is the presets' business.
    expect(inheritedModeFloor({ DSH_PERMISSION_MODE: 'my-preset' })).toBeUndefined()
  })
})
