// In-process: the real spine (agent-loop testkit with a scripted model), the ACP server plugin,
// and the SDK client connected over an in-memory stream pair.
import { realpathSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import * as acp from '@agentclientprotocol/sdk'
import { createHarness, SCRIPTED_MODEL, SCRIPTED_PROVIDER, type Harness } from '@dsh/agent-loop-testkit'
import AgentDefaultModel from '@dsh/agent-default-model'
import ApprovalService from '@dsh/user-approval'
import AcpServer from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

function pipe() {
  const a = new TransformStream<Uint8Array, Uint8Array>()
  const b = new TransformStream<Uint8Array, Uint8Array>()
  return { agentSide: acp.ndJsonStream(a.writable, b.readable), clientSide: acp.ndJsonStream(b.writable, a.readable) }
}

async function setup(
  script: NonNullable<Parameters<typeof createHarness>[0]>['script'],
  config: Record<string, unknown> = {},
) {
  harness = await createHarness({
    script,
    plugins: [
      [AgentDefaultModel, { provider: SCRIPTED_PROVIDER, model: SCRIPTED_MODEL }],
      [ApprovalService, {}],
    ],
  })
  const server = await harness.mount(AcpServer, { stdio: false, ...config })
  const { agentSide, clientSide } = pipe()
  harness.ctx.acp.connect(agentSide)
  const updates: acp.SessionNotification[] = []
  const client = acp.client({ name: 't' }).onNotification('session/update', ({ params }) => void updates.push(params))
  const conn = client.connect(clientSide)
  await conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
  return { server, agent: conn.agent, updates, conn }
}

describe('@dsh/acp in process', () => {
  it('serves a prompt and advertises no load without persistence', async () => {
    const { agent, updates } = await setup([{ text: 'hello there' }])
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-acp-unit-')))
    const { sessionId } = await agent.request('session/new', { cwd, mcpServers: [] })
    expect(
      (await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hi' }] })).stopReason,
    ).toBe('end_turn')
    expect(updates.map((u) => u.update.sessionUpdate)).toContain('agent_message_chunk')
    await expect(agent.request('session/load', { sessionId, cwd, mcpServers: [] })).rejects.toMatchObject({
      code: -32601,
    })
  })

  it('maps max steps to max_turn_requests and a model error to an error response', async () => {
    const { agent } = await setup(
      [{ toolCalls: [{ name: 'nope', arguments: {} }] }, { error: { code: 'SERVER', message: 'upstream down' } }],
      { maxSteps: 1 },
    )
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-acp-unit-')))
    const a = await agent.request('session/new', { cwd, mcpServers: [] })
    const b = await agent.request('session/new', { cwd, mcpServers: [] })
    // One step allowed: the tool call leaves the turn owing another request.
    expect(
      (await agent.request('session/prompt', { sessionId: a.sessionId, prompt: [{ type: 'text', text: 'go' }] }))
        .stopReason,
    ).toBe('max_turn_requests')
    await expect(
      agent.request('session/prompt', { sessionId: b.sessionId, prompt: [{ type: 'text', text: 'go' }] }),
    ).rejects.toMatchObject({
      code: -32603,
      // A sentence for the editor's user, not the raw reason glued in (`the turn ended error`).
      message: 'Internal error: the turn failed: SERVER: upstream down',
    })
  })

  it('unloading the plugin unwinds its answerer and listeners and closes its sessions', async () => {
    const { server, agent } = await setup([])
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-acp-unit-')))
    await agent.request('session/new', { cwd, mcpServers: [] })
    const ctx = harness!.ctx
    expect(ctx.approval.answerers()).toContain('acp')
    const agentsBefore = ctx.agents.list().length
    await server.dispose()
    expect(ctx.approval.answerers()).not.toContain('acp')
    expect(ctx.get('acp')).toBeUndefined()
    await vi.waitFor(() => expect(ctx.agents.list().length).toBe(agentsBefore - 1), { timeout: 10_000, interval: 5 })
  })
})

describe('@dsh/acp commands', () => {
  it('advertises the commands and runs a /command prompt without a model turn', async () => {
    const Commands = (await import('@dsh/commands')).default
    harness = await createHarness({
      script: [{ text: 'model answer' }],
      plugins: [
        [AgentDefaultModel, { provider: SCRIPTED_PROVIDER, model: SCRIPTED_MODEL }],
        [ApprovalService, {}],
        [Commands, {}],
      ],
    })
    await harness.mount({
      name: 'echo-command',
      inject: ['commands'],
      apply(ctx: import('cordis').Context) {
        ctx.commands.register({
          name: 'echo',
          description: 'Echo the arguments',
          usage: '<text>',
          run: (args: string) => ({ output: `echo: ${args}` }),
        } as never)
      },
    })
    await harness.mount(AcpServer, { stdio: false })
    const { agentSide, clientSide } = pipe()
    harness.ctx.acp.connect(agentSide)
    const updates: acp.SessionNotification[] = []
    const conn = acp
      .client({ name: 't' })
      .onNotification('session/update', ({ params }) => void updates.push(params))
      .connect(clientSide)
    await conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-acp-unit-')))
    const { sessionId } = await conn.agent.request('session/new', { cwd, mcpServers: [] })
    const result = await conn.agent.request('session/prompt', {
      sessionId,
      prompt: [{ type: 'text', text: '/echo hi there' }],
    })
    expect(result.stopReason).toBe('end_turn')
    // The announcement follows the session/new response on a later tick.
    await vi.waitFor(
      () => expect(updates.some((u) => u.update.sessionUpdate === 'available_commands_update')).toBe(true),
      { timeout: 10_000, interval: 5 },
    )
    const announced = updates.find((u) => u.update.sessionUpdate === 'available_commands_update')?.update as {
      availableCommands: { name: string; input?: { hint: string } }[]
    }
    expect(announced.availableCommands.map((c) => c.name)).toEqual(expect.arrayContaining(['echo', 'help']))
    expect(announced.availableCommands.find((c) => c.name === 'echo')?.input).toEqual({ hint: '<text>' })
    const texts = updates
      .filter((u) => u.update.sessionUpdate === 'agent_message_chunk')
      .map((u) => (u.update as { content: { text: string } }).content.text)
    expect(texts.join('')).toContain('echo: hi there')
    expect(harness.model.requests).toHaveLength(0)
    const unknown = await conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: '/nope' }] })
    expect(unknown.stopReason).toBe('end_turn')
    expect(harness.model.requests).toHaveLength(0)
  })
})

describe('@dsh/acp plan mode', () => {
  it('offers plan as a session mode, enters and leaves it through set_mode, and reports the approved plan', async () => {
    const PlanMode = (await import('@dsh/plan-mode')).default
    const PermissionPresets = (await import('@dsh/permission-presets')).default
    harness = await createHarness({
      script: [
        { toolCalls: [{ name: 'exit_plan_mode', arguments: { plan: '1. Read the parser\n2. Fix the off-by-one' } }] },
        { text: 'done' },
      ],
      plugins: [
        [AgentDefaultModel, { provider: SCRIPTED_PROVIDER, model: SCRIPTED_MODEL }],
        [ApprovalService, {}],
        [PermissionPresets, { env: '' }],
        [PlanMode, {}],
      ],
    })
    await harness.mount(AcpServer, { stdio: false })
    const { agentSide, clientSide } = pipe()
    harness.ctx.acp.connect(agentSide)
    const updates: acp.SessionNotification[] = []
    const asked: acp.RequestPermissionRequest[] = []
    const conn = acp
      .client({ name: 't' })
      .onNotification('session/update', ({ params }) => void updates.push(params))
      .onRequest('session/request_permission', ({ params }) => {
        asked.push(params)
        const allow = params.options.find((o) => o.kind === 'allow_once')!
        return { outcome: { outcome: 'selected', optionId: allow.optionId } }
      })
      .connect(clientSide)
    await conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-acp-plan-')))
    const created = await conn.agent.request('session/new', { cwd, mcpServers: [] })
    expect(created.modes?.currentModeId).toBe('workspace-write')
    expect(created.modes?.availableModes.map((m) => m.id)).toEqual([
      'danger-full-access',
      'read-only',
      'workspace-write',
      'plan',
    ])
    await conn.agent.request('session/set_mode', { sessionId: created.sessionId, modeId: 'plan' })
    expect(harness.ctx.planMode.isActive(created.sessionId)).toBe(true)
    await conn.agent.request('session/prompt', {
      sessionId: created.sessionId,
      prompt: [{ type: 'text', text: 'fix it' }],
    })
    // ACP has no questions: the plan was reviewed as a permission request, which the client allowed.
    expect(asked).toHaveLength(1)
    expect(JSON.stringify(asked[0])).toContain('Fix the off-by-one')
    expect(harness.ctx.planMode.isActive(created.sessionId)).toBe(false)
    const modeUpdates = updates
      .filter((u) => u.update.sessionUpdate === 'current_mode_update')
      .map((u) => (u.update as { currentModeId: string }).currentModeId)
    expect(modeUpdates).toEqual(['plan', 'workspace-write'])
    const plan = updates.find((u) => u.update.sessionUpdate === 'plan')?.update as {
      entries: { content: string; status: string }[]
    }
    expect(plan.entries.map((e) => [e.content, e.status])).toEqual([
      ['Read the parser', 'pending'],
      ['Fix the off-by-one', 'pending'],
    ])
    // Choosing a permission mode leaves plan mode.
    await conn.agent.request('session/set_mode', { sessionId: created.sessionId, modeId: 'plan' })
    await conn.agent.request('session/set_mode', { sessionId: created.sessionId, modeId: 'read-only' })
    expect(harness.ctx.planMode.isActive(created.sessionId)).toBe(false)
  })
})

describe('@dsh/acp permission requests fail closed', () => {
  /** A `touch` tool gated by an approval request; `ran` counts its executions. */
  async function gated(
    permissionTimeoutMs: number,
    answer: (
      params: acp.RequestPermissionRequest,
    ) => acp.RequestPermissionResponse | Promise<acp.RequestPermissionResponse>,
  ) {
    harness = await createHarness({
      script: [{ toolCalls: [{ name: 'touch', arguments: {} }] }, { text: 'after' }],
      plugins: [
        [AgentDefaultModel, { provider: SCRIPTED_PROVIDER, model: SCRIPTED_MODEL }],
        [ApprovalService, {}],
      ],
    })
    const state = { ran: 0, outcomes: [] as string[] }
    await harness.mount({
      name: 'touch-gate',
      inject: ['tools', 'approval'],
      apply(ctx: import('cordis').Context) {
        ctx.tools.register({
          name: 'touch',
          description: 'Touch',
          parameters: { type: 'object', properties: {} },
          execute: () => (state.ran++, { content: 'touched' }),
        } as never)
        ctx.on('tools/pre-execute', async (payload, next) => {
          if (payload.tool.name !== 'touch') return next()
          const outcome = await ctx.approval.request(
            { sessionId: payload.context.sessionId, kind: 'command', title: 'Touch', action: {} },
            { signal: payload.context.signal },
          )
          state.outcomes.push(`${outcome.decision}: ${outcome.reason ?? ''}`)
          if (outcome.decision === 'allowed-once' || outcome.decision === 'allowed-always') return next()
          payload.decision = { deny: `not approved: ${outcome.reason ?? outcome.decision}`, code: 'NOT_APPROVED' }
        })
      },
    })
    await harness.mount(AcpServer, { stdio: false, permissionTimeoutMs })
    const { agentSide, clientSide } = pipe()
    harness.ctx.acp.connect(agentSide)
    const conn = acp
      .client({ name: 't' })
      .onRequest('session/request_permission', ({ params }) => answer(params))
      .connect(clientSide)
    await conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-acp-perm-')))
    const { sessionId } = await conn.agent.request('session/new', { cwd, mcpServers: [] })
    const stop = await conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'touch it' }] })
    return { ...state, stop: stop.stopReason }
  }

  it('an allow runs the tool (positive control)', async () => {
    const r = await gated(0, () => ({ outcome: { outcome: 'selected', optionId: 'allow_once' } }))
    expect(r).toMatchObject({ ran: 1, stop: 'end_turn', outcomes: ['allowed-once: '] })
  })

  it('a JSON-RPC error answer is a rejection', async () => {
    const r = await gated(0, () => {
      throw new acp.RequestError(-32000, 'editor exploded')
    })
    expect(r.ran).toBe(0)
    expect(r.outcomes).toEqual([
      expect.stringMatching(/^rejected: the client did not answer the permission request \(.*editor exploded.*\)$/),
    ])
  })

  it('no answer within permissionTimeoutMs is a rejection', async () => {
    let release!: () => void
    const r = await gated(
      50,
      () =>
        new Promise(
          (resolve) => (release = () => resolve({ outcome: { outcome: 'selected', optionId: 'allow_once' } })),
        ),
    )
    release()
    expect(r.ran).toBe(0)
    expect(r.outcomes).toEqual(['rejected: the client did not answer the permission request (no answer within 50 ms)'])
  })

  it('an unknown option or a cancelled outcome is a rejection', async () => {
    const unknown = await gated(0, () => ({ outcome: { outcome: 'selected', optionId: 'allow_everything_forever' } }))
    expect(unknown.ran).toBe(0)
    expect(unknown.outcomes[0]).toMatch(/^rejected: the client chose an unknown option/)
    await harness!.dispose()
    harness = undefined
    const cancelled = await gated(0, () => ({ outcome: { outcome: 'cancelled' } }))
    expect(cancelled.ran).toBe(0)
    expect(cancelled.outcomes).toEqual(['rejected: the client cancelled the permission request'])
  })
})
