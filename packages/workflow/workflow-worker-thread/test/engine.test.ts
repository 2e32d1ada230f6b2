// The engine directly: limits resolution, run events (children and console) and a script error,
// with the real subagent service on the testkit loop.
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import SubagentService from '@dsh/subagent'
import type { WorkflowRunEvent } from '@dsh/workflow'
import WorkerThreadWorkflowEngine from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

async function boot(config: object = {}) {
  harness = await createHarness({
    script: Array.from({ length: 20 }, () => ({ text: 'child answer' })),
    plugins: [
      [SubagentService, {}],
      [WorkerThreadWorkflowEngine, config],
    ],
  })
  return harness
}

describe('workflow-worker-thread engine', () => {
  it('resolveLimits lets a request tighten, never loosen, the configuration', async () => {
    const h = await boot({ maxChildren: 5, maxConcurrent: 2, timeoutMs: 10_000, maxDepth: 1 })
    expect(h.ctx.workflowEngine.resolveLimits()).toEqual({
      maxChildren: 5,
      maxConcurrent: 2,
      timeoutMs: 10_000,
      maxDepth: 1,
    })
    expect(h.ctx.workflowEngine.resolveLimits({ maxChildren: 99, maxConcurrent: 1, timeoutMs: -3 })).toEqual({
      maxChildren: 5,
      maxConcurrent: 1,
      timeoutMs: 10_000,
      maxDepth: 1,
    })
  })

  it('reports children and console lines as events, returns the value and every child outcome', async () => {
    const h = await boot()
    const events: WorkflowRunEvent[] = []
    const result = await h.ctx.workflowEngine.run({
      parent: h.agent,
      script:
        'console.log("start", input.n)\nconst r = await agents.spawn({ prompt: "do the thing\\nwith detail" })\nreturn r.text + "!"',
      input: { n: 7 },
      callId: 'call-9',
      onEvent: (e) => events.push(e),
    })
    expect(result).toMatchObject({
      status: 'completed',
      value: 'child answer!',
      logs: [{ level: 'log', text: 'start 7' }],
    })
    expect(result.children).toEqual([
      expect.objectContaining({
        id: 'sub-1',
        index: 0,
        description: 'do the thing',
        status: 'completed',
        text: 'child answer',
      }),
    ])
    expect(events.map((e) => e.type)).toEqual(['log', 'child-started', 'child-finished'])
    expect(h.ctx.subagents.list(h.agent)[0]).toMatchObject({ callId: 'call-9', description: 'do the thing' })
  })

  it('a syntax error fails the run before any child starts', async () => {
    const h = await boot()
    const result = await h.ctx.workflowEngine.run({ parent: h.agent, script: 'await agents.spawn({ prompt: "x" }' })
    expect(result.status).toBe('failed')
    expect(result.error?.code).toBe('SYNTAX')
    expect(result.children).toEqual([])
    expect(h.ctx.subagents.list(h.agent)).toEqual([])
  })
})
