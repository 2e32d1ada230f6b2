// The four tools through the real loop: parallel foreground children, a background child's notice,
// bad arguments, depth refusal, cancellation cascading from the parent's turn, and the controls.
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, lastUserText, router, type AgentScript, type Harness } from '@dsh/agent-loop-testkit'
import type { LlmRequest } from '@dsh/llm'
import SubagentService, { type SubagentServiceConfig } from '@dsh/subagent'
import * as ToolSubagent from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

async function boot(
  scripts: Array<[string, AgentScript]>,
  config: Partial<SubagentServiceConfig> = {},
  toolConfig: Partial<ToolSubagent.ToolSubagentConfig> = {},
) {
  harness = await createHarness({
    script: router(scripts),
    plugins: [
      [SubagentService, config],
      [ToolSubagent, toolConfig],
    ],
  })
  return harness
}

const call = (name: string, args: object, callId?: string) => ({ name, arguments: args, ...(callId ? { callId } : {}) })

/** The tool messages of a request, by call id. */
function toolResults(request: LlmRequest): Record<string, string> {
  const out: Record<string, string> = {}
  for (const m of request.messages) {
    if (m.role !== 'tool') continue
    out[m.callId] = m.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
  }
  return out
}

const parentRequests = (h: Harness) => h.model.requests.filter((r) => r.metadata?.agentId === h.agent.id)

describe('tool-subagent', () => {
  it('three subagent calls in one step run as parallel children that each run a tool; answers come back as results', async () => {
    let running = 0
    let peak = 0
    const child =
      (name: string): AgentScript =>
      (step) =>
        step === 0 ? { toolCalls: [call('list_agents', {})] } : { text: `${name} finished` }
    const h = await boot([
      ['job A', child('A')],
      ['job B', child('B')],
      ['job C', child('C')],
      [
        'delegate',
        (step) =>
          step === 0
            ? {
                toolCalls: [
                  call('subagent', { description: 'a', prompt: 'job A' }, 'c_a'),
                  call('subagent', { description: 'b', prompt: 'job B' }, 'c_b'),
                  call('subagent', { description: 'c', prompt: 'job C' }, 'c_c'),
                ],
              }
            : { text: 'all done' },
      ],
    ])
    h.ctx.on('subagent/started', () => {
      running++
      peak = Math.max(peak, running)
    })
    h.ctx.on('subagent/finished', () => running--)
    const result = await h.prompt('delegate')
    expect(result).toMatchObject({ reason: 'completed', text: 'all done' })
    expect(peak).toBe(3)
    const last = parentRequests(h).at(-1)!
    expect(toolResults(last)).toEqual({ c_a: 'A finished', c_b: 'B finished', c_c: 'C finished' })
    // Each child ran its own tool call (list_agents: a child has no children of its own).
    const childTool = h.model.requests.filter(
      (r) => r.metadata?.agentId !== h.agent.id && Object.keys(toolResults(r)).length > 0,
    )
    expect(childTool).toHaveLength(3)
    for (const r of childTool)
      expect(Object.values(toolResults(r))[0]).toBe('You have started no subagents in this session.')
    const listed = h.ctx.subagents.list(h.agent)
    expect(listed.map((r) => [r.id, r.status, r.callId])).toEqual([
      ['sub-1', 'completed', 'c_a'],
      ['sub-2', 'completed', 'c_b'],
      ['sub-3', 'completed', 'c_c'],
    ])
  })

  it("a background child returns at once; its completion notice is logged and seen at the parent's next step", async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const h = await boot([
      [
        'start in background',
        (step) => {
          if (step === 0)
            return {
              toolCalls: [call('subagent', { description: 'research', prompt: 'research', background: true }, 'c_bg')],
            }
          if (step === 1) return { toolCalls: [call('wait_a_bit', {}, 'c_wait')] }
          return { text: 'thanks' }
        },
      ],
      // After the parent's (its notice quotes the child's task).
      ['research', () => ({ text: 'the answer is 7' })],
    ])
    h.ctx.tools.register({
      name: 'wait_a_bit',
      description: 'waits for the background child',
      parameters: { type: 'object', properties: {} },
      execute: async () => {
        await gate
        return { content: 'waited' }
      },
    })
    // The gate opens when the child finished, so the notice exists before the parent's next step.
    h.ctx.on('subagent/finished', () => setTimeout(release, 0))
    const result = await h.prompt('start in background')
    expect(result.text).toBe('thanks')
    const requests = parentRequests(h)
    expect(toolResults(requests[1]).c_bg).toMatch(/^Started subagent sub-1 \(spawn\) in the background\./)
    const notice = lastUserText(requests[2])
    expect(notice).toBe('[Background subagent sub-1 ("research") completed.]\nIts final answer:\nthe answer is 7')
    const logged = h.session.events.filter((e) => e.type === 'user/message' && e.data.source.kind === 'plugin')
    expect(logged.map((e) => (e.type === 'user/message' ? e.data.source : undefined))).toEqual([
      ToolSubagent.NOTICE_SOURCE,
    ])
  })

  it('bad arguments, unknown providers and ids are one clear error result each; the turn goes on', async () => {
    const h = await boot([
      [
        'try bad calls',
        (step) =>
          step === 0
            ? {
                toolCalls: [
                  call('subagent', { description: 'no prompt' }, 'c_args'),
                  call('subagent', { description: 'x', prompt: 'y', provider: 'nope' }, 'c_prov'),
                  call('send_message', { id: 'sub-9', message: 'hi' }, 'c_send'),
                  call('interrupt_agent', { id: 'sub-9' }, 'c_int'),
                  call('subagent', { description: 'x', prompt: 'y', background: 'yes' }, 'c_type'),
                ],
              }
            : { text: 'ok' },
      ],
    ])
    const result = await h.prompt('try bad calls')
    expect(result.text).toBe('ok')
    const seen = toolResults(parentRequests(h)[1])
    expect(seen.c_args).toMatch(/^Error \[INVALID_ARGUMENTS\].*prompt/s)
    expect(seen.c_prov).toBe(
      'Error [UNKNOWN_PROVIDER]: unknown subagent provider "nope"; available: spawn, fork. Providers: "spawn": a fresh agent in this process: same tools and model, no view of your conversation (give it the whole task); "fork": an agent in this process that starts from a copy of your conversation so far (your current turn excluded)',
    )
    expect(seen.c_send).toBe('Error [UNKNOWN_AGENT]: no subagent "sub-9" was started by this agent')
    expect(seen.c_int).toBe('Error [UNKNOWN_AGENT]: no subagent "sub-9" was started by this agent')
    expect(seen.c_type).toMatch(/^Error \[INVALID_ARGUMENTS\].*background/s)
    expect(h.session.events.filter((e) => e.type === 'subagent/started')).toHaveLength(0)
  })

  it('a child over the depth limit gets DEPTH_LIMIT as its tool result', async () => {
    const h = await boot(
      [
        ['grandchild', () => ({ text: 'should not run' })],
        [
          'child task',
          (step) =>
            step === 0
              ? { toolCalls: [call('subagent', { description: 'g', prompt: 'grandchild' }, 'c_g')] }
              : { text: 'child done' },
        ],
        [
          'parent task',
          (step) =>
            step === 0
              ? { toolCalls: [call('subagent', { description: 'c', prompt: 'child task' }, 'c_c')] }
              : { text: 'parent done' },
        ],
      ],
      { maxDepth: 1 },
    )
    await h.prompt('parent task')
    const childSecond = h.model.requests.find(
      (r) => r.metadata?.agentId !== h.agent.id && toolResults(r).c_g !== undefined,
    )!
    expect(toolResults(childSecond).c_g).toMatch(
      /^Error \[DEPTH_LIMIT\]: delegation depth limit reached: this agent is at depth 1 and the limit is 1/,
    )
    expect(h.model.requests.some((r) => lastUserText(r) === 'grandchild')).toBe(false)
  })

  it("cancelling the parent's turn cancels its foreground child", async () => {
    const h = await boot([
      ['endless', () => ({ text: 'thinking', hang: true })],
      [
        'parent',
        (step) =>
          step === 0
            ? { toolCalls: [call('subagent', { description: 'e', prompt: 'endless' }, 'c_e')] }
            : { text: 'unreachable' },
      ],
    ])
    h.ctx.on('subagent/started', () => setTimeout(() => h.agent.abort(), 10))
    const finished = new Promise((resolve) => h.ctx.on('subagent/finished', resolve))
    const result = await h.prompt('parent')
    expect(result.reason).toBe('cancelled')
    expect(await finished).toMatchObject({ id: 'sub-1', status: 'cancelled', error: { code: 'CANCELLED' } })
    expect(h.ctx.agents.list().map((a) => a.id)).toEqual([h.agent.id])
  })

  it('list_agents, send_message and interrupt_agent drive a running background child', async () => {
    let told = ''
    const h = await boot([
      [
        'manage',
        (step) => {
          if (step === 0)
            return {
              toolCalls: [call('subagent', { description: 'long job', prompt: 'long job', background: true }, 'c_bg')],
            }
          if (step === 1)
            return {
              toolCalls: [
                call('send_message', { id: 'sub-1', message: 'focus on tests' }, 'c_send'),
                call('list_agents', {}, 'c_list'),
              ],
            }
          if (step === 2) return { toolCalls: [call('interrupt_agent', { id: 'sub-1' }, 'c_int')] }
          if (step === 3) return { toolCalls: [call('send_message', { id: 'sub-1', message: 'again' }, 'c_late')] }
          return { text: 'managed' }
        },
      ],
      [
        'long job',
        (step, request) => {
          if (step === 0) return { toolCalls: [call('hold', {}, 'c_hold')] }
          told = lastUserText(request)
          return { text: 'never', hang: true }
        },
      ],
    ])
    let release!: () => void
    const hold = new Promise<void>((resolve) => (release = resolve))
    h.ctx.tools.register({
      name: 'hold',
      description: 'holds the child in a tool call until the parent has messaged it',
      parameters: { type: 'object', properties: {} },
      execute: async () => {
        await hold
        return { content: 'held' }
      },
    })
    h.ctx.on(
      'tools/result' as never,
      ((result: { message: { callId: string } }) => {
        if (result.message.callId === 'c_send') release()
      }) as never,
    )
    const result = await h.prompt('manage')
    expect(result.text).toBe('managed')
    const requests = parentRequests(h)
    expect(toolResults(requests[2]).c_send).toBe(
      'Message delivered to subagent sub-1; it will read it at its next step.',
    )
    expect(toolResults(requests[2]).c_list).toMatch(
      /^1 subagent:\nsub-1 {2}running {2}spawn \(background\) {2}"long job"/,
    )
    expect(toolResults(requests[3]).c_int).toBe('Subagent sub-1 was interrupted (status: cancelled).')
    expect(toolResults(requests[4]).c_late).toBe(
      'Error [AGENT_FINISHED]: subagent sub-1 has already finished; start a new one instead',
    )
    expect(told).toBe('focus on tests')
  })

  it('subagent_fork (when configured) starts a fork child that sees the conversation so far', async () => {
    const h = await boot(
      [
        ['what is the code', () => ({ text: 'the code is 7' })],
        // The parent's second turn (its step 1 overall: the router counts per agent).
        [
          'ask a fork',
          (step) =>
            step === 1
              ? { toolCalls: [call('subagent_fork', { description: 'recall', prompt: 'what is the code?' }, 'c_f')] }
              : { text: 'forked' },
        ],
        ['remember code 7', () => ({ text: 'ok' })],
      ],
      {},
      { forkTool: true },
    )
    await h.prompt('remember code 7')
    await h.prompt('ask a fork')
    const last = parentRequests(h).at(-1)!
    expect(toolResults(last).c_f).toBe('the code is 7')
    expect(h.ctx.subagents.list(h.agent)[0]).toMatchObject({ provider: 'fork', status: 'completed' })
    const child = h.model.requests.find((r) => r.metadata?.agentId !== h.agent.id)!
    expect(JSON.stringify(child.messages)).toContain('remember code 7')
    expect(JSON.stringify(child.messages)).not.toContain('ask a fork')
  })

  it("report: offered to children only; a foreground child's reports precede its answer, a background child's reach the parent as a notice", async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const h = await boot([
      [
        'delegate',
        (step) => {
          if (step === 0) return { toolCalls: [call('subagent', { description: 'scan', prompt: 'scan task' }, 'c_fg')] }
          if (step === 1)
            return {
              toolCalls: [call('subagent', { description: 'watch', prompt: 'watch task', background: true }, 'c_bg')],
            }
          if (step === 2) return { toolCalls: [call('wait_a_bit', {}, 'c_wait')] }
          return { text: 'all done' }
        },
      ],
      [
        'scan task',
        (step) =>
          step === 0
            ? { toolCalls: [call('report', { message: 'found 2 so far' })] }
            : step === 1
              ? { toolCalls: [call('report', { message: 'found 3' })] }
              : { text: 'three in total' },
      ],
      [
        'watch task',
        (step) => (step === 0 ? { toolCalls: [call('report', { message: 'the build is red' })] } : { text: 'watched' }),
      ],
    ])
    h.ctx.tools.register({
      name: 'wait_a_bit',
      description: 'waits for the background child',
      parameters: { type: 'object', properties: {} },
      execute: async () => {
        await gate
        return { content: 'waited' }
      },
    })
    h.ctx.on('subagent/finished', (record) => {
      if (record.background) setTimeout(release, 0)
    })
    const result = await h.prompt('delegate')
    expect(result.text).toBe('all done')
    const requests = parentRequests(h)
    expect(toolResults(requests[1]).c_fg).toBe(
      'Reports it sent while working:\n[report 1] found 2 so far\n[report 2] found 3\n\nFinal answer:\nthree in total',
    )
    const notices = requests[3].messages
      .filter((m) => m.role === 'user')
      .map((m) =>
        typeof m.content === 'string' ? m.content : m.content.map((b) => (b.type === 'text' ? b.text : '')).join(''),
      )
    expect(notices).toContain('[Background subagent sub-2 ("watch") reports, still running:]\nthe build is red')
    expect(h.session.events.filter((e) => e.type === 'subagent/report').map((e) => e.data)).toEqual([
      { id: 'sub-1', message: 'found 2 so far' },
      { id: 'sub-1', message: 'found 3' },
      { id: 'sub-2', message: 'the build is red' },
    ])
    // Offered to the children, not to the root.
    const offered = (r: LlmRequest) => (r.tools ?? []).map((t) => t.name)
    expect(offered(requests[0])).not.toContain('report')
    const childRequest = h.model.requests.find((r) => r.metadata?.agentId !== h.agent.id)!
    expect(offered(childRequest)).toContain('report')
  })

  it('subagent_fork is not offered by default', async () => {
    const h = await boot([])
    expect(
      h.ctx.tools
        .schemas(h.agent.scope)
        .map((t) => t.name)
        .filter((n) => n.includes('agent') || n === 'send_message')
        .sort(),
    ).toEqual(['interrupt_agent', 'list_agents', 'send_message', 'subagent'])
  })
})
