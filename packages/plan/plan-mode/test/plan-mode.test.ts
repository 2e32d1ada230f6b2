import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import CommandRegistry from '@dsh/commands'
import UserQuestionsService from '@dsh/user-questions'
import PermissionPresetService from '@dsh/permission-presets'
import PlanMode, { PLAN_SECTION_TEXT, planModeActive } from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

type Result = {
  message: { content: { text: string }[]; isError?: boolean }
  error?: { code: string }
  meta?: Record<string, unknown>
}

/** Two fake workspace tools: `read` (allowed while planning) and `write` (refused). */
const Workspace = {
  name: 'workspace-tools',
  inject: ['tools'],
  apply(ctx: Context) {
    ctx.tools.register({
      name: 'read',
      description: 'read',
      parameters: { type: 'object' },
      execute: () => ({ content: 'file text' }),
    })
    ctx.tools.register({
      name: 'write',
      description: 'write',
      parameters: { type: 'object' },
      execute: () => ({ content: 'written' }),
    })
  },
}

async function boot(script: NonNullable<Parameters<typeof createHarness>[0]>['script'], config: object = {}) {
  harness = await createHarness({
    script,
    plugins: [
      [CommandRegistry, {}],
      [UserQuestionsService, {}],
      [PermissionPresetService, { env: '' }],
      [Workspace],
      [PlanMode, config],
    ],
  })
  return harness
}

const results = (h: Harness) => h.session.events.filter((e) => e.type === 'tool/result').map((e) => e.data as Result)
const text = (r: Result) => r.message.content[0].text
const toolNames = (request: { tools?: { name: string }[] }) => (request.tools ?? []).map((t) => t.name)

describe('@dsh/plan-mode', () => {
  it('/plan refuses changing tools, the approved exit_plan_mode (no human: policy) lets the change run', async () => {
    const h = await boot([
      {
        toolCalls: [
          { name: 'read', arguments: {} },
          { name: 'write', arguments: {} },
        ],
      },
      { toolCalls: [{ name: 'exit_plan_mode', arguments: { plan: '1. write the file' } }] },
      { toolCalls: [{ name: 'write', arguments: {} }] },
      { text: 'done' },
    ])
    const done = await h.ctx.commands.dispatch(h.agent, '/plan')
    expect(done).toMatchObject({ handled: true, ok: true, output: expect.stringContaining('Plan mode is on') })
    expect(h.session.last('plan/mode')?.data).toEqual({ active: true, by: 'command' })
    await h.prompt('change the file')
    const [read, write, exit, write2] = results(h)
    expect(text(read)).toBe('file text')
    expect(write.error?.code).toBe('PLAN_MODE')
    expect(text(write)).toMatch(/plan mode is on, and "write" can change things.*exit_plan_mode/)
    expect(text(exit)).toMatch(/approved by this deployment's policy \(plan-mode noHuman: approve\)/)
    expect(exit.meta).toMatchObject({ decision: 'approved', by: 'policy' })
    expect(text(write2)).toBe('written')
    expect(h.session.last('plan/mode')?.data).toEqual({ active: false, by: 'policy', plan: '1. write the file' })
    // The model saw the plan section and the exit tool only while planning.
    const [first, , third] = h.model.requests
    expect(first.system).toContain(PLAN_SECTION_TEXT)
    expect(toolNames(first)).toEqual(['exit_plan_mode', 'read', 'write'])
    expect(third.system).not.toContain('Plan mode is on')
    expect(toolNames(third)).toEqual(['read', 'write'])
  })

  it('load_tools runs while planning (it only adds schemas; each loaded tool is gated itself)', async () => {
    const h = await boot([{ toolCalls: [{ name: 'load_tools', arguments: {} }] }, { text: 'ok' }])
    h.ctx.tools.register({
      name: 'load_tools',
      description: 'stands in for @dsh/tool-deferral',
      parameters: { type: 'object' },
      execute: () => ({ content: 'loaded' }),
    })
    await h.ctx.commands.dispatch(h.agent, '/plan')
    await h.prompt('look around')
    const [load] = results(h)
    expect(load.error).toBeUndefined()
    expect(text(load)).toBe('loaded')
  })

  it('a human keeps it planning with feedback, then approves and switches the permission mode', async () => {
    const h = await boot([
      { toolCalls: [{ name: 'exit_plan_mode', arguments: { plan: 'v1' } }] },
      { toolCalls: [{ name: 'exit_plan_mode', arguments: { plan: 'v2' } }] },
      { text: 'ok' },
    ])
    const asked: string[] = []
    const answers = [
      { plan: { selected: ['Keep planning'], text: 'also update the docs' } },
      { plan: { selected: ['Approve and switch to danger-full-access'] } },
    ]
    h.ctx.userQuestions.registerAnswerer({
      name: 'human',
      answer: (req) => {
        asked.push(req.questions[0].question)
        return answers.shift()!
      },
    })
    h.ctx.planMode.enter(h.session)
    await h.prompt('plan it')
    const [first, second] = results(h)
    expect(asked[0]).toContain('v1')
    expect(text(first)).toMatch(
      /did not approve the plan yet; you are still in plan mode\. Their feedback: also update the docs/,
    )
    expect(text(second)).toMatch(/approved your plan and switched the permission mode to danger-full-access/)
    expect(h.ctx.permissionPresets.current(h.session.id).name).toBe('danger-full-access')
    expect(h.session.last('plan/mode')?.data).toEqual({
      active: false,
      by: 'review',
      plan: 'v2',
      permission: 'danger-full-access',
    })
    expect(planModeActive(h.session)).toBe(false)
  })

  it('a second exit_plan_mode while a review is pending is a tool error', async () => {
    const h = await boot([])
    let release!: (answer: Record<string, { selected: string[] }>) => void
    h.ctx.userQuestions.registerAnswerer({ name: 'slow', answer: () => new Promise((resolve) => (release = resolve)) })
    h.ctx.planMode.enter(h.session)
    const context = { cwd: '/', sessionId: h.session.id, agentId: h.agent.id, scope: h.agent.scope }
    const first = h.ctx.tools.execute({ callId: 'a', name: 'exit_plan_mode', arguments: '{"plan":"one"}' }, context)
    await vi.waitFor(() => expect(h.ctx.planMode.reviewPending(h.session.id)).toBe(true), {
      timeout: 10_000,
      interval: 5,
    })
    const second = await h.ctx.tools.execute(
      { callId: 'b', name: 'exit_plan_mode', arguments: '{"plan":"two"}' },
      context,
    )
    expect(second.error?.code).toBe('REVIEW_PENDING')
    release({ plan: { selected: ['Approve'] } })
    expect((await first).meta).toMatchObject({ decision: 'approved' })
    const empty = await h.ctx.tools.execute({ callId: 'c', name: 'exit_plan_mode', arguments: '{"plan":" "}' }, context)
    expect(empty.error?.code).toBe('UNKNOWN_TOOL') // plan mode is off: the tool is gone
  })

  it('an empty plan is refused and keep-planning policy keeps the mode when nobody can review', async () => {
    const h = await boot(
      [
        { toolCalls: [{ name: 'exit_plan_mode', arguments: { plan: '' } }] },
        { toolCalls: [{ name: 'exit_plan_mode', arguments: { plan: 'x' } }] },
        { text: 'plan: x' },
      ],
      { noHuman: 'keep-planning' },
    )
    h.ctx.planMode.enter(h.session)
    await h.prompt('plan')
    const [empty, kept] = results(h)
    expect(empty.error?.code).toBe('EMPTY_PLAN')
    expect(text(kept)).toMatch(/policy \(plan-mode noHuman: keep-planning\).*You stay in plan mode/)
    expect(planModeActive(h.session)).toBe(true)
  })

  it('/plan off leaves; /plan message enters and sends the message', async () => {
    const h = await boot([{ text: 'planning' }])
    expect((await h.ctx.commands.dispatch(h.agent, '/plan off')) as { output?: string }).toMatchObject({
      output: 'Plan mode is not on.',
    })
    await h.ctx.commands.dispatch(h.agent, '/plan look at the parser')
    await h.agent.idle()
    expect(h.model.requests[0].messages.at(-1)).toMatchObject({
      role: 'user',
      content: [{ type: 'text', text: 'look at the parser' }],
    })
    expect(h.model.requests[0].system).toContain('Plan mode is on')
    expect((await h.ctx.commands.dispatch(h.agent, '/plan off')) as { output?: string }).toMatchObject({
      output: 'Plan mode is off.',
    })
    expect(
      h.session.events.filter((e) => e.type === 'plan/mode').map((e) => (e.data as { active: boolean }).active),
    ).toEqual([true, false])
  })

  it('a resumed session is still in plan mode', async () => {
    const h = await boot([{ text: 'one' }])
    h.ctx.planMode.enter(h.session)
    await h.prompt('x')
    const session = h.session
    await h.dispose()
    harness = await createHarness({
      session,
      script: [{ toolCalls: [{ name: 'write', arguments: {} }] }, { text: 'two' }],
      plugins: [[Workspace], [PlanMode, {}]],
    })
    await harness.prompt('y')
    expect(toolNames(harness.model.requests[0])).toContain('exit_plan_mode')
    expect(results(harness).at(-1)?.error?.code).toBe('PLAN_MODE')
  })

  it('unloading removes the gate, the command and the tool', async () => {
    harness = await createHarness({
      script: [{ toolCalls: [{ name: 'write', arguments: {} }] }, { text: 'ok' }],
      plugins: [[CommandRegistry, {}], [Workspace]],
    })
    const h = harness
    let plan = await h.mount(PlanMode, {})
    h.ctx.planMode.enter(h.session)
    // Reloading the row finds the running agent's session planning and offers the exit tool again.
    await plan.dispose()
    plan = await h.mount(PlanMode, {})
    expect(h.ctx.tools.get('exit_plan_mode', h.agent.scope)).toBeDefined()
    expect(h.ctx.commands.get('plan')).toBeDefined()
    await plan.dispose()
    expect(h.ctx.tools.get('exit_plan_mode', h.agent.scope)).toBeUndefined()
    expect(h.ctx.commands.get('plan')).toBeUndefined()
    await h.prompt('write')
    expect(text(results(h)[0])).toBe('written')
  })
})

describe('review through approvals (a surface without questions, e.g. ACP)', () => {
  async function withApproval(script: NonNullable<Parameters<typeof createHarness>[0]>['script']) {
    const ApprovalService = (await import('@dsh/user-approval')).default
    harness = await createHarness({ script, plugins: [[ApprovalService, {}], [Workspace], [PlanMode, {}]] })
    harness.ctx.planMode.enter(harness.session)
    return harness
  }

  it('a human rejection keeps planning with the message; an approval ends plan mode', async () => {
    const h = await withApproval([
      { toolCalls: [{ name: 'exit_plan_mode', arguments: { plan: 'v1' } }] },
      { toolCalls: [{ name: 'exit_plan_mode', arguments: { plan: 'v2' } }] },
      { text: 'ok' },
    ])
    const answers = [{ decision: 'rejected' as const, message: 'smaller steps' }, { decision: 'allowed-once' as const }]
    const seen: string[] = []
    h.ctx.approval.registerAnswerer({
      name: 'acp',
      answer: (req) => (seen.push(`${req.kind}:${req.detail}:${req.callId !== undefined}`), answers.shift()!),
    })
    await h.prompt('go')
    const [first, second] = results(h)
    // Each request names the exit_plan_mode call it was asked inside.
    expect(seen).toEqual(['plan:v1:true', 'plan:v2:true'])
    expect(text(first)).toMatch(/you are still in plan mode\. Their feedback: smaller steps/)
    expect(text(second)).toBe('The human approved your plan. Plan mode is off: carry out the plan now.')
    expect(h.session.last('plan/mode')?.data).toEqual({ active: false, by: 'review', plan: 'v2' })
  })

  it('the headless permission-policy answerer is not taken for a human: the plan-mode policy decides', async () => {
    const h = await withApproval([
      { toolCalls: [{ name: 'exit_plan_mode', arguments: { plan: 'p' } }] },
      { text: 'ok' },
    ])
    h.ctx.approval.registerAnswerer({
      name: 'permission-preset-policy',
      answer: () => ({ decision: 'rejected', reason: 'policy ask needs a human' }),
    })
    await h.prompt('go')
    expect(text(results(h)[0])).toMatch(/approved by this deployment's policy/)
    expect(planModeActive(h.session)).toBe(false)
  })
})
