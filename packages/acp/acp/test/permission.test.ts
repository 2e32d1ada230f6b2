// The ACP server's permission path, in process with the SDK client as the peer: what a
// `session/request_permission` carries (the running call, the offered choices, the detail), how
// each answer maps to a decision, and that a cancelled prompt or a request from outside the
// client's sessions never turns into an allow. server.test.ts covers the fail-closed errors.
import { mkdtempSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import * as acp from '@agentclientprotocol/sdk'
import { createHarness, SCRIPTED_MODEL, SCRIPTED_PROVIDER, type Harness } from '@dsh/agent-loop-testkit'
import AgentDefaultModel from '@dsh/agent-default-model'
import ApprovalService, { type ApprovalChoice } from '@dsh/user-approval'
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

interface Gate {
  options?: ApprovalChoice[]
  detail?: string
  /** The ACP server's `permissionTimeoutMs` (default 0). */
  permissionTimeoutMs?: number
  /** The approval seam's own `timeoutMs` (default 0). */
  approvalTimeoutMs?: number
}

/**
 * A harness whose `touch` tool asks for approval in `tools/pre-execute` (as the gates do), an ACP
 * server and an SDK client answering with `answer`. Returns the client, the updates it received,
 * the permission requests it was sent and what the gate decided.
 */
async function setup(
  answer: (
    params: acp.RequestPermissionRequest,
    signal: AbortSignal,
  ) => acp.RequestPermissionResponse | Promise<acp.RequestPermissionResponse>,
  gate: Gate = {},
  script: NonNullable<Parameters<typeof createHarness>[0]>['script'] = [
    { toolCalls: [{ name: 'touch', arguments: {} }] },
    { text: 'after' },
  ],
) {
  harness = await createHarness({
    script,
    plugins: [
      [AgentDefaultModel, { provider: SCRIPTED_PROVIDER, model: SCRIPTED_MODEL }],
      [ApprovalService, { timeoutMs: gate.approvalTimeoutMs ?? 0 }],
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
          {
            sessionId: payload.context.sessionId,
            kind: 'command',
            title: 'Touch the file',
            action: { argv: ['touch', 'f'] },
            ...(gate.detail !== undefined ? { detail: gate.detail } : {}),
            ...(gate.options ? { options: gate.options } : {}),
          },
          { signal: payload.context.signal },
        )
        state.outcomes.push(`${outcome.decision}: ${outcome.reason ?? ''}`)
        if (outcome.decision === 'allowed-once' || outcome.decision === 'allowed-always') return next()
        payload.decision = { deny: `not approved: ${outcome.reason ?? outcome.decision}`, code: 'NOT_APPROVED' }
      })
    },
  })
  await harness.mount(AcpServer, { stdio: false, permissionTimeoutMs: gate.permissionTimeoutMs ?? 0 })
  const { agentSide, clientSide } = pipe()
  harness.ctx.acp.connect(agentSide)
  const updates: acp.SessionNotification[] = []
  const asked: acp.RequestPermissionRequest[] = []
  const conn = acp
    .client({ name: 't' })
    .onNotification('session/update', ({ params }) => void updates.push(params))
    .onRequest('session/request_permission', ({ params, signal }) => (asked.push(params), answer(params, signal)))
    .connect(clientSide)
  await conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-acp-permission-')))
  const { sessionId } = await conn.agent.request('session/new', { cwd, mcpServers: [] })
  return { agent: conn.agent, sessionId, updates, asked, state }
}

type Setup = Awaited<ReturnType<typeof setup>>
const prompt = (agent: Setup['agent'], sessionId: string) =>
  agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'touch it' }] })

const pick = (optionId: string) => (): acp.RequestPermissionResponse => ({ outcome: { outcome: 'selected', optionId } })

describe('@dsh/acp session/request_permission', () => {
  it('names the running tool call, offers the three choices and carries the title, action and detail', async () => {
    const { agent, sessionId, updates, asked, state } = await setup(pick('allow_once'), {
      detail: 'touch writes outside the workspace',
    })
    expect((await prompt(agent, sessionId)).stopReason).toBe('end_turn')
    expect(state).toEqual({ ran: 1, outcomes: ['allowed-once: '] })
    expect(asked).toHaveLength(1)
    const call = updates.find((u) => u.update.sessionUpdate === 'tool_call')!.update as { toolCallId: string }
    expect(asked[0]).toEqual({
      sessionId,
      toolCall: {
        toolCallId: call.toolCallId,
        title: 'Touch the file',
        status: 'pending',
        rawInput: { argv: ['touch', 'f'] },
        content: [{ type: 'content', content: { type: 'text', text: 'touch writes outside the workspace' } }],
      },
      options: [
        { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once' },
        { optionId: 'allow_always', name: 'Allow for this session', kind: 'allow_always' },
        { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
      ],
    })
  })

  it('offers only the choices the request allows, and no content without a detail', async () => {
    const { agent, sessionId, asked, state } = await setup(pick('allow_once'), {
      options: ['allowed-once', 'rejected'],
    })
    await prompt(agent, sessionId)
    expect(asked[0].options.map((o) => o.optionId)).toEqual(['allow_once', 'reject_once'])
    expect(asked[0].toolCall).not.toHaveProperty('content')
    expect(state.ran).toBe(1)
  })

  it('an option the request did not offer is a rejection, even a known one', async () => {
    const { agent, sessionId, state } = await setup(pick('allow_always'), { options: ['allowed-once', 'rejected'] })
    await prompt(agent, sessionId)
    expect(state).toEqual({ ran: 0, outcomes: ['rejected: the client chose an unknown option "allow_always"'] })
  })

  it('allow_always is allowed-always, reject_once is a rejection', async () => {
    const always = await setup(pick('allow_always'))
    await prompt(always.agent, always.sessionId)
    expect(always.state).toEqual({ ran: 1, outcomes: ['allowed-always: '] })
    await harness!.dispose()
    const rejected = await setup(pick('reject_once'))
    await prompt(rejected.agent, rejected.sessionId)
    expect(rejected.state).toEqual({ ran: 0, outcomes: ['rejected: '] })
  })

  it('session/cancel while the client has not answered rejects the pending request', async () => {
    let asked!: () => void
    const askedOnce = new Promise<void>((resolve) => (asked = resolve))
    const { agent, sessionId, state } = await setup(() => {
      asked()
      return new Promise<acp.RequestPermissionResponse>(() => {})
    })
    const turn = prompt(agent, sessionId)
    await askedOnce
    await agent.notify('session/cancel', { sessionId })
    expect((await turn).stopReason).toBe('cancelled')
    expect(state.ran).toBe(0)
    // The gate saw a refusal (the approval seam may report the turn's own cancellation first).
    expect(state.outcomes).toHaveLength(1)
    expect(state.outcomes[0]).toMatch(
      /^(rejected: the client did not answer the permission request \(the prompt was cancelled\)|cancelled: .*)$/,
    )
  })

  it("a request outside a tool call is attributed to the approval itself; one for another session is not the client's to answer", async () => {
    const { sessionId, asked } = await setup(pick('allow_once'), {}, [])
    const ctx = harness!.ctx
    const outside = await ctx.approval.request({
      sessionId,
      kind: 'network',
      title: 'Reach the registry',
      action: { host: 'registry.npmjs.org' },
    })
    expect(outside.decision).toBe('allowed-once')
    expect(outside.answeredBy).toBe('acp')
    expect(asked).toHaveLength(1)
    expect(asked[0].toolCall.toolCallId).toMatch(/^approval-/)
    // No ACP session: the ACP answerer does not take it (here nobody else does either), and the
    // client is never asked.
    for (const other of [{ sessionId: 'not-an-acp-session' }, {}]) {
      const outcome = await ctx.approval.request({ ...other, kind: 'network', title: 'x', action: {} })
      expect(outcome).toMatchObject({
        decision: 'unavailable',
        reason: expect.stringMatching(/^no approval answerer is registered/),
      })
      expect(outcome.answeredBy).toBeUndefined()
    }
    expect(asked).toHaveLength(1)
  })

  describe('a request the server stops waiting for is withdrawn from the client', () => {
    /**
     * A client that leaves the dialog open until the server withdraws the request
     * (`$/cancel_request` aborts the handler's signal), then answers `cancelled` as the protocol
     * asks (or, for a careless client, `late`). `asked` resolves once the request arrived.
     */
    function openDialog(late: acp.RequestPermissionResponse = { outcome: { outcome: 'cancelled' } }) {
      const seen: { signal?: AbortSignal } = {}
      let arrived!: () => void
      const asked = new Promise<void>((resolve) => (arrived = resolve))
      const answer = (_params: acp.RequestPermissionRequest, signal: AbortSignal) => {
        seen.signal = signal
        arrived()
        return new Promise<acp.RequestPermissionResponse>((resolve) =>
          signal.addEventListener('abort', () => resolve(late), { once: true }),
        )
      }
      return { answer, asked, seen }
    }

    // The withdrawal leaves before the server's prompt response on the same stream, so the client
    // has applied it by the time the turn's response arrives.
    it('when permissionTimeoutMs passes; an allow sent after the withdrawal is dropped', async () => {
      const dialog = openDialog({ outcome: { outcome: 'selected', optionId: 'allow_once' } })
      const { agent, sessionId, state } = await setup(dialog.answer, { permissionTimeoutMs: 50 })
      expect((await prompt(agent, sessionId)).stopReason).toBe('end_turn')
      expect(state).toEqual({
        ran: 0,
        outcomes: ['rejected: the client did not answer the permission request (no answer within 50 ms)'],
      })
      expect(dialog.seen.signal?.aborted).toBe(true)
    })

    it("when the approval seam's own timeout passes", async () => {
      const dialog = openDialog()
      const { agent, sessionId, state } = await setup(dialog.answer, { approvalTimeoutMs: 50 })
      expect((await prompt(agent, sessionId)).stopReason).toBe('end_turn')
      expect(state).toEqual({ ran: 0, outcomes: ['unavailable: no answer within 50 ms'] })
      expect(dialog.seen.signal?.aborted).toBe(true)
    })

    it('when the turn is aborted by the host, not by the client', async () => {
      const dialog = openDialog()
      const { agent, sessionId, state } = await setup(dialog.answer)
      const turn = prompt(agent, sessionId)
      await dialog.asked
      harness!.ctx.acp.live.get(sessionId)!.agent.abort('stopped by the host')
      expect((await turn).stopReason).toBe('cancelled')
      expect(state.ran).toBe(0)
      expect(state.outcomes).toEqual([expect.stringMatching(/^cancelled: /)])
      expect(dialog.seen.signal?.aborted).toBe(true)
    })

    it('when the client sends session/cancel', async () => {
      const dialog = openDialog()
      const { agent, sessionId, state } = await setup(dialog.answer)
      const turn = prompt(agent, sessionId)
      await dialog.asked
      await agent.notify('session/cancel', { sessionId })
      expect((await turn).stopReason).toBe('cancelled')
      expect(state.ran).toBe(0)
      expect(dialog.seen.signal?.aborted).toBe(true)
    })
  })

  it('once a tool call is over, a later request outside a tool call is not attributed to it', async () => {
    const { agent, sessionId, asked } = await setup(pick('allow_once'))
    await prompt(agent, sessionId)
    const outcome = await harness!.ctx.approval.request({
      sessionId,
      kind: 'network',
      title: 'Reach the registry',
      action: { host: 'registry.npmjs.org' },
    })
    expect(outcome.decision).toBe('allowed-once')
    expect(asked).toHaveLength(2)
    expect(asked[0].toolCall.toolCallId).not.toMatch(/^approval-/)
    expect(asked[1].toolCall.toolCallId).toMatch(/^approval-/)
  })

  it('a tool call in a session the client does not hold runs as if no ACP server were mounted', async () => {
    await setup(pick('allow_once'), {}, [{ toolCalls: [{ name: 'plain', arguments: {} }] }, { text: 'done' }])
    const h = harness!
    let ran = 0
    h.ctx.tools.register({
      name: 'plain',
      description: 'Plain',
      parameters: { type: 'object', properties: {} },
      execute: () => (ran++, { content: 'plain ran' }),
    } as never)
    expect((await h.prompt('run plain')).reason).toBe('completed')
    expect(ran).toBe(1)
    const result = h.session.events.find((e) => e.type === 'tool/result')!
    expect(JSON.stringify(result.data)).toContain('plain ran')
  })

  it('without a permission timeout a client that answers late is still heard', async () => {
    // The answer leaves the client only after a few turns of the event loop (a person deciding).
    const late = () =>
      new Promise<acp.RequestPermissionResponse>((resolve) =>
        setTimeout(() => resolve({ outcome: { outcome: 'selected', optionId: 'allow_once' } }), 30),
      )
    const { agent, sessionId, state } = await setup(late)
    await prompt(agent, sessionId)
    expect(state).toEqual({ ran: 1, outcomes: ['allowed-once: '] })
  })
})
