// The in-process providers on their own terms: how a child's turn result becomes its outcome for
// every way a turn ends, where a fork cuts the parent's log while the parent is mid-turn, what the
// two providers tell the model about themselves, the step limit, and the parent's permission
// preset carried to the child and cleared after it. Mutation testing (`pnpm mutation subagent`)
// showed these branches unpinned by the service-level tests.
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, router, type AgentScript, type Harness } from '@dsh/agent-loop-testkit'
import { Session } from '@dsh/session'
import PermissionPresets from '@dsh/permission-presets'
import SandboxPolicyService from '@dsh/sandbox-policy'
import SubagentService, { completedBoundary, outcomeOf, PARENT_MESSAGE_SOURCE } from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

const usage = { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, reasoning: 0 }

describe('outcomeOf', () => {
  it('maps each way a turn ends', () => {
    expect(outcomeOf({ turn: 0, reason: 'completed', text: 'done', usage, steps: 1 })).toEqual({
      status: 'completed',
      text: 'done',
      usage,
    })
    expect(outcomeOf({ turn: 0, reason: 'cancelled', text: 'part', usage, steps: 1 })).toEqual({
      status: 'cancelled',
      text: 'part',
      usage,
    })
    expect(
      outcomeOf({
        turn: 0,
        reason: 'interrupted',
        text: '',
        usage,
        steps: 1,
        error: { code: 'I', message: 'stopped' },
      }),
    ).toEqual({
      status: 'cancelled',
      text: '',
      error: { code: 'I', message: 'stopped' },
      usage,
    })
    expect(
      outcomeOf({ turn: 0, reason: 'error', text: '', usage, steps: 1, error: { code: 'SERVER', message: 'down' } }),
    ).toEqual({
      status: 'failed',
      text: '',
      error: { code: 'SERVER', message: 'down' },
      usage,
    })
    // No error from the loop: one is named after the reason.
    expect(outcomeOf({ turn: 0, reason: 'max-tokens', text: 'cut', usage, steps: 1 })).toEqual({
      status: 'failed',
      text: 'cut',
      error: { code: 'MAX_TOKENS', message: "the child's turn stopped at the output token limit" },
      usage,
    })
    expect(outcomeOf({ turn: 0, reason: 'blocked', text: '', usage, steps: 1 }).error).toEqual({
      code: 'BLOCKED',
      message: "the child's turn was blocked",
    })
  })
})

describe('completedBoundary', () => {
  const session = (types: string[]) => {
    const s = new Session({ id: 's', cwd: '/' })
    for (const type of types) s.append(type as never, {} as never)
    return s
  }

  it('cuts before the running turn, keeps every completed one', () => {
    expect(completedBoundary(session([]))).toBe(0)
    expect(completedBoundary(session(['turn/start', 'x', 'turn/end']))).toBe(3)
    expect(completedBoundary(session(['turn/start', 'x', 'turn/end', 'y']))).toBe(4)
    expect(completedBoundary(session(['turn/start', 'x', 'turn/end', 'turn/start', 'x', 'x']))).toBe(3)
    expect(completedBoundary(session(['turn/start', 'x']))).toBe(0)
    expect(completedBoundary(session(['x', 'y']))).toBe(2)
  })
})

describe('the in-process providers', () => {
  it('describe themselves to the model differently', async () => {
    harness = await createHarness({ script: router([]), plugins: [[SubagentService, {}]] })
    const [spawn, fork] = ['spawn', 'fork'].map(
      (name) => harness!.ctx.subagents.providers().find((p) => p.name === name)!,
    )
    expect(spawn.description).toMatch(/^a fresh agent in this process/)
    expect(fork.description).toMatch(/^an agent in this process that starts from a copy of your conversation/)
  })

  it('a fork from a tool call sees the completed turns, not the running one', async () => {
    // The router matches the first and the newest user text, so the most specific keys come first.
    let delegated = false
    const scripts: Array<[string, AgentScript]> = [
      ['what did I say', () => ({ text: 'you said remember 7' })],
      [
        'delegate',
        () =>
          delegated
            ? { text: 'delegated' }
            : ((delegated = true), { toolCalls: [{ name: 'delegate', arguments: {} }] }),
      ],
      ['remember 7', () => ({ text: 'ok' })],
    ]
    harness = await createHarness({ script: router(scripts), plugins: [[SubagentService, {}]] })
    const h = harness
    let childAgent: string | undefined
    h.ctx.tools.register({
      name: 'delegate',
      description: 'forks a child',
      parameters: { type: 'object', properties: {} },
      execute: async () => {
        const record = await h.ctx.subagents.run({
          parent: h.agent,
          provider: 'fork',
          description: 'recall',
          prompt: 'what did I say?',
        })
        childAgent = record.agentId
        return { content: record.text ?? '' }
      },
    })
    await h.prompt('remember 7')
    await h.prompt('delegate')
    const child = h.model.requests.find((r) => r.metadata?.agentId === childAgent)!
    expect(child.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user'])
    const text = JSON.stringify(child.messages)
    expect(text).toContain('remember 7')
    expect(text).not.toContain('delegate')
  })

  it('a child turn is held to the configured step limit', async () => {
    const loop: AgentScript = () => ({ toolCalls: [{ name: 'nothing', arguments: {} }] })
    harness = await createHarness({ script: router([['loop', loop]]), plugins: [[SubagentService, { maxSteps: 1 }]] })
    harness.ctx.tools.register({
      name: 'nothing',
      description: 'n',
      parameters: { type: 'object', properties: {} },
      execute: () => ({ content: '' }),
    })
    const record = await harness.ctx.subagents.run({ parent: harness.agent, description: 'd', prompt: 'loop' })
    expect(record.status).toBe('failed')
    expect(harness.model.requests.filter((r) => r.metadata?.agentId === record.agentId)).toHaveLength(1)
  })

  it("the child works under its parent's permission preset, which is cleared when it ends", async () => {
    harness = await createHarness({
      script: router([['wait', () => ({ text: 'working', hang: true })]]),
      plugins: [
        [PermissionPresets, { env: '' }],
        [SubagentService, {}],
      ],
    })
    const h = harness
    const presets = h.ctx.permissionPresets
    // With the default preset nothing is set on the child.
    const plain = await h.ctx.subagents.start({ parent: h.agent, description: 'd', prompt: 'wait' })
    expect(presets.current(plain.record.sessionId).name).toBe(presets.default.name)
    h.ctx.subagents.interrupt(h.agent, plain.record.id)
    await plain.finished
    presets.set(h.session.id, 'read-only')
    const started = await h.ctx.subagents.start({ parent: h.agent, description: 'd', prompt: 'wait' })
    const childId = started.record.sessionId!
    expect(presets.current(childId).name).toBe('read-only')
    h.ctx.subagents.interrupt(h.agent, started.record.id)
    await started.finished
    expect(presets.current(childId).name).toBe(presets.default.name)
  })

  it("the parent session's sandbox override holds for the child and is cleared when it ends; no override, none set", async () => {
    harness = await createHarness({
      script: router([['wait', () => ({ text: 'working', hang: true })]]),
      plugins: [
        [SandboxPolicyService, { defaultMode: 'workspace-write', announce: false }],
        [SubagentService, {}],
      ],
    })
    const h = harness
    const policy = h.ctx.sandboxPolicy
    const changed: Array<[string, string]> = []
    h.ctx.on('sandbox/mode-changed', (sessionId, mode) => void changed.push([sessionId, mode]))
    // The parent runs at the default mode: the child needs no override of its own.
    const plain = await h.ctx.subagents.start({ parent: h.agent, description: 'd', prompt: 'wait' })
    const plainSession = h.ctx.sessions.get(plain.record.sessionId!)!
    h.ctx.subagents.interrupt(h.agent, plain.record.id)
    await plain.finished
    expect(plainSession.events.filter((e) => e.type === 'sandbox/mode')).toEqual([])
    expect(changed).toEqual([])
    // A read-only override on the parent session is set on the child, then cleared.
    policy.setMode(h.session.id, 'read-only')
    changed.length = 0
    const started = await h.ctx.subagents.start({ parent: h.agent, description: 'd', prompt: 'wait' })
    const childId = started.record.sessionId!
    expect(policy.modeFor(childId)).toBe('read-only')
    h.ctx.subagents.interrupt(h.agent, started.record.id)
    await started.finished
    expect(policy.modeFor(childId)).toBe('workspace-write')
    expect(changed).toEqual([
      [childId, 'read-only'],
      [childId, 'workspace-write'],
    ])
  })

  it("a spawned child's session names its parent (boundary 0); a message from the parent is marked as such", async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let inTool!: () => void
    const entered = new Promise<void>((resolve) => (inTool = resolve))
    let step = 0
    harness = await createHarness({
      script: router([
        ['step twice', () => (step++ === 0 ? { toolCalls: [{ name: 'wait_here', arguments: {} }] } : { text: 'done' })],
      ]),
      plugins: [[SubagentService, {}]],
    })
    const h = harness
    h.ctx.tools.register({
      name: 'wait_here',
      description: 'waits',
      parameters: { type: 'object', properties: {} },
      execute: async () => {
        inTool()
        await gate
        return { content: 'waited' }
      },
    })
    const started = await h.ctx.subagents.start({ parent: h.agent, description: 'd', prompt: 'step twice' })
    const child = h.ctx.sessions.get(started.record.sessionId!)!
    expect(child.parent).toEqual({ sessionId: h.session.id, boundary: 0 })
    await entered
    h.ctx.subagents.send(h.agent, started.record.id, 'one more thing')
    release()
    await started.finished
    const steered = child.events.find(
      (e) => e.type === 'user/message' && JSON.stringify(e.data).includes('one more thing'),
    )
    expect(steered?.data).toMatchObject({ source: PARENT_MESSAGE_SOURCE })
  })
})
