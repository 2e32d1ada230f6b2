// ralph on the real loop: fresh children with the same objective until one declares done, the
// round limit, a failing round, and the run logged as a workflow run.
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import type { LlmRequest } from '@dsh/llm'
import SubagentService from '@dsh/subagent'
import WorkerThreadWorkflowEngine from '@dsh/workflow-worker-thread'
import * as ToolWorkflow from '@dsh/tool-workflow'
import * as ToolRalph from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

const firstUser = (r: LlmRequest) => {
  const m = r.messages.find((x) => x.role === 'user')
  return m && m.role === 'user' ? m.content.map((b) => (b.type === 'text' ? b.text : '')).join('') : ''
}
const toolText = (r: LlmRequest, callId: string) => {
  const m = r.messages.find((x) => x.role === 'tool' && x.callId === callId)
  return m && m.role === 'tool' ? m.content.map((b) => (b.type === 'text' ? b.text : '')).join('') : undefined
}

/** The parent calls ralph once; child number N (1-based, in request order) answers `answers[N-1]`. */
async function boot(args: object, answers: Array<string | { fail: true }>, engine: object = {}) {
  let child = 0
  const script = Array.from({ length: 50 }, () => (request: LlmRequest) => {
    if (firstUser(request) === 'relay') {
      return request.messages.some((m) => m.role === 'tool')
        ? { text: 'parent done' }
        : { toolCalls: [{ name: 'ralph', arguments: args, callId: 'r1' }] }
    }
    const answer = answers[child++] ?? 'unexpected extra round'
    return typeof answer === 'string' ? { text: answer } : { error: { code: 'SERVER' as const, message: 'down' } }
  })
  harness = await createHarness({
    script,
    plugins: [
      [SubagentService, {}],
      [WorkerThreadWorkflowEngine, engine],
      [ToolWorkflow, {}],
      [ToolRalph, {}],
    ],
  })
  const result = await harness.prompt('relay')
  const parent = harness.model.requests.filter((r) => r.metadata?.agentId === harness!.agent.id)
  const children = harness.model.requests.filter((r) => r.metadata?.agentId !== harness!.agent.id)
  return { h: harness, result, text: toolText(parent.at(-1)!, 'r1')!, children }
}

describe('tool-ralph', () => {
  it('runs fresh children on the same objective until one declares done', async () => {
    const { h, text, children } = await boot({ objective: 'Make the tests pass.', rounds: 4 }, [
      'fixed one test; two left',
      'fixed the rest\nRALPH_DONE',
    ])
    expect(children).toHaveLength(2)
    // Same objective each round, fresh history (one user message, nothing else).
    for (const [i, r] of children.entries()) {
      expect(r.messages).toHaveLength(1)
      expect(firstUser(r)).toBe(ToolRalph.roundPrompt('Make the tests pass.', i + 1, 4, 'RALPH_DONE'))
    }
    expect(text).toBe(
      [
        'Objective declared done in round 2 of 4.',
        'Rounds:',
        '- round 1 (sub-1): completed',
        '- round 2 (sub-2): completed, declared done',
        '',
        'Last answer:',
        'fixed the rest',
      ].join('\n'),
    )
    const [run] = ToolWorkflow.workflowRuns(h.session.events)
    expect(run).toMatchObject({
      tool: 'ralph',
      status: 'completed',
      callId: 'r1',
      limits: { maxChildren: 4, maxConcurrent: 1 },
    })
    expect(run.children.map((c) => c.status)).toEqual(['completed', 'completed'])
  })

  it('stops after the rounds run out; a failed round counts and the relay goes on', async () => {
    const { text } = await boot({ objective: 'Port the module.', rounds: 2 }, [
      { fail: true },
      'half of it; RALPH_DONE is not on its own line',
    ])
    expect(text).toBe(
      [
        'Not done after 2 rounds: no child declared the objective done.',
        'Rounds:',
        '- round 1 (sub-1): failed',
        '- round 2 (sub-2): completed',
        '',
        'Last answer:',
        'half of it; RALPH_DONE is not on its own line',
      ].join('\n'),
    )
  })

  it('bad input: an empty objective and too many rounds are refused before anything starts', async () => {
    const empty = await boot({ objective: '   ' }, [])
    expect(empty.text).toBe(
      'Error [EMPTY_OBJECTIVE]: the objective is empty; describe the complete task and how to check that it is done.',
    )
    expect(empty.children).toHaveLength(0)
    await harness!.dispose()
    harness = undefined
    const many = await boot({ objective: 'x', rounds: 99 }, [])
    expect(many.text).toContain('Error [INVALID_ARGUMENTS]')
    expect(many.children).toHaveLength(0)
  })

  it('the engine child cap bounds the rounds: more rounds than children is refused by the schema', async () => {
    const { h, text, children } = await boot({ objective: 'x', rounds: 4 }, [], { maxChildren: 3 })
    expect(text).toContain('Error [INVALID_ARGUMENTS]')
    expect(children).toHaveLength(0)
    expect(h.ctx.tools.get('ralph')!.parameters).toMatchObject({
      properties: { rounds: { maximum: 3, description: 'Most rounds (default 3, at most 3).' } },
    })
  })
})
