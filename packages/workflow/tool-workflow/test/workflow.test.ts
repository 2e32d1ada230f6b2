// The workflow tool on the real loop, with the real subagent service and the worker-thread engine:
// parallel children (one failing), caps, the time limit, cancellation cascading to children,
// depth refusal, bad scripts, and the logged run folded back into a record.
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import SubagentService from '@dsh/subagent'
import WorkerThreadWorkflowEngine, { type WorkerThreadWorkflowEngineConfig } from '@dsh/workflow-worker-thread'
import { Session } from '@dsh/session'
import * as ToolWorkflow from '../src/index.ts'
import { byTask, toolText, type Script } from './router.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

async function boot(routes: Array<[string, Script]>, engine: Partial<WorkerThreadWorkflowEngineConfig> = {}) {
  harness = await createHarness({
    script: byTask(routes),
    plugins: [
      [SubagentService, { maxConcurrent: 8 }],
      [WorkerThreadWorkflowEngine, engine],
      [ToolWorkflow, {}],
    ],
  })
  return harness
}

/**
 * A tool children call to overlap: each call waits until `size` calls are waiting (then all go on)
 * or `patienceMs` passed, so children that may run in parallel really do.
 */
function rendezvous(h: Harness, size: number, patienceMs = 300) {
  let waiting: Array<() => void> = []
  h.ctx.tools.register({
    name: 'rendezvous',
    description: 'wait for the others',
    parameters: { type: 'object', properties: {} },
    concurrencySafe: true,
    execute: () =>
      new Promise((resolve) => {
        const go = () => resolve({ content: 'met' })
        waiting.push(go)
        if (waiting.length >= size) {
          for (const wake of waiting) wake()
          waiting = []
        } else setTimeout(go, patienceMs)
      }),
  })
}
const meetThen =
  (text: string): Script =>
  (step) =>
    step === 0 ? { toolCalls: [{ name: 'rendezvous', arguments: {} }] } : { text }

const workflowCall = (script: string, extra: object = {}) => ({
  toolCalls: [{ name: 'workflow', arguments: { script, ...extra }, callId: 'w1' }],
})
const parentRequests = (h: Harness) => h.model.requests.filter((r) => r.metadata?.agentId === h.agent.id)

const THREE = [
  'const tasks = ["alpha", "beta", "gamma"]',
  'const results = await Promise.all(tasks.map((t) => agents.spawn({ prompt: `job ${t}`, description: t })))',
  'console.log(results.map((r) => r.status).join(","))',
  'return results.map((r) => ({ id: r.id, status: r.status, text: r.text }))',
].join('\n')

describe('tool-workflow', () => {
  it('a workflow spawns three children in parallel, one failing; the parent sees each outcome and the run is logged', async () => {
    let running = 0
    let peak = 0
    const h = await boot([
      ['job alpha', meetThen('alpha done')],
      [
        'job beta',
        (step) =>
          step === 0
            ? { toolCalls: [{ name: 'rendezvous', arguments: {} }] }
            : { error: { code: 'SERVER', message: 'model overloaded' } },
      ],
      ['job gamma', meetThen('gamma done')],
      [
        'orchestrate',
        (step) => (step === 0 ? workflowCall(THREE, { description: 'three jobs' }) : { text: 'all reported' }),
      ],
    ])
    rendezvous(h, 3)
    h.ctx.on('subagent/started', () => (peak = Math.max(peak, ++running)))
    h.ctx.on('subagent/finished', () => running--)
    const result = await h.prompt('orchestrate')
    expect(result).toMatchObject({ reason: 'completed', text: 'all reported' })
    expect(peak).toBe(3)
    const text = toolText(parentRequests(h).at(-1)!, 'w1')!
    expect(text).toMatch(/^Workflow wf-1 completed after [\d.]+ s; 3 children \(2 completed, 1 failed\)\./)
    expect(text).toContain('- sub-1 "alpha": completed\n  alpha done')
    expect(text).toMatch(/- sub-2 "beta": failed \[SERVER\]/)
    expect(text).toContain('Console output:\ncompleted,failed,completed')
    expect(text).toContain('"text": "gamma done"')

    const types = h.session.events.filter((e) => e.type.startsWith('tool-workflow/')).map((e) => e.type)
    expect(types[0]).toBe('tool-workflow/started')
    expect(types.at(-1)).toBe('tool-workflow/finished')
    expect(types.filter((t) => t === 'tool-workflow/child-started')).toHaveLength(3)
    expect(types.filter((t) => t === 'tool-workflow/child-finished')).toHaveLength(3)

    // The log alone rebuilds the run, also in a copy of the session (a reload).
    const copy = new Session({ id: 'reloaded', cwd: h.session.cwd, events: h.session.events })
    const [run] = ToolWorkflow.workflowRuns(copy.events)
    expect(run).toMatchObject({
      runId: 'wf-1',
      callId: 'w1',
      tool: 'workflow',
      description: 'three jobs',
      status: 'completed',
      script: THREE,
    })
    expect(run.children.map((c) => [c.id, c.description, c.status])).toEqual([
      ['sub-1', 'alpha', 'completed'],
      ['sub-2', 'beta', 'failed'],
      ['sub-3', 'gamma', 'completed'],
    ])
    expect(run.value).toEqual([
      { id: 'sub-1', status: 'completed', text: 'alpha done' },
      { id: 'sub-2', status: 'failed', text: '' },
      { id: 'sub-3', status: 'completed', text: 'gamma done' },
    ])
  })

  it('a run with no end in the log reads interrupted (the process stopped mid-run)', async () => {
    const h = await boot([['x', () => ({ text: 'x' })]])
    h.session.append('tool-workflow/started', {
      runId: 'wf-1',
      tool: 'workflow',
      description: 'd',
      script: 's',
      limits: { maxChildren: 1, maxConcurrent: 1, timeoutMs: 1, maxDepth: 1 },
    })
    h.session.append('tool-workflow/child-started', {
      runId: 'wf-1',
      index: 0,
      id: 'sub-1',
      description: 'c',
      provider: 'spawn',
    })
    const [run] = ToolWorkflow.workflowRuns(h.session.events)
    expect(run.status).toBe('interrupted')
    expect(run.children[0].status).toBe('interrupted')
    expect(ToolWorkflow.workflowRuns(h.session.events, new Set(['wf-1']))[0].status).toBe('running')
    expect(ToolWorkflow.nextRunId(h.session)).toBe('wf-2')
  })

  it('maxConcurrent queues spawns; maxChildren refuses the extra spawn inside the script', async () => {
    let running = 0
    let peak = 0
    const script = [
      'const jobs = [1, 2, 3].map((n) => agents.spawn({ prompt: `job ${n}` }))',
      'const done = await Promise.all(jobs)',
      'try { await agents.spawn({ prompt: "job 4" }) } catch (e) { return { refused: e.code, message: e.message, done: done.length } }',
    ].join('\n')
    const h = await boot(
      [
        ['job', meetThen('ok')],
        ['orchestrate', (step) => (step === 0 ? workflowCall(script) : { text: 'end' })],
      ],
      { maxConcurrent: 2, maxChildren: 3 },
    )
    rendezvous(h, 3)
    h.ctx.on('subagent/started', () => (peak = Math.max(peak, ++running)))
    h.ctx.on('subagent/finished', () => running--)
    await h.prompt('orchestrate')
    expect(peak).toBe(2)
    const text = toolText(parentRequests(h).at(-1)!, 'w1')!
    expect(text).toContain('"refused": "CHILD_LIMIT"')
    expect(text).toContain('this run already started 3 children')
  })

  it('the time limit ends the run and cancels the children still running', async () => {
    const h = await boot(
      [
        ['job slow', () => ({ hang: true })],
        [
          'orchestrate',
          (step) =>
            step === 0
              ? workflowCall(
                  'await Promise.all([agents.spawn({ prompt: "job slow 1" }), agents.spawn({ prompt: "job slow 2" })])',
                )
              : { text: 'end' },
        ],
      ],
      // Long enough for a loaded machine to start the worker and both children first.
      { timeoutMs: 4_000 },
    )
    const result = await h.prompt('orchestrate')
    expect(result.reason).toBe('completed')
    const text = toolText(parentRequests(h).at(-1)!, 'w1')!
    expect(text).toMatch(/^Error \[WORKFLOW_TIMEOUT\]: the workflow did not complete\./)
    expect(text).toContain('2 children (2 cancelled)')
    expect(h.ctx.subagents.list(h.agent).map((r) => r.status)).toEqual(['cancelled', 'cancelled'])
    const [run] = ToolWorkflow.workflowRuns(h.session.events)
    expect(run.status).toBe('failed')
    expect(run.error?.code).toBe('TIMEOUT')
  })

  it('cancelling the parent turn cascades to the run and its children', async () => {
    const h = await boot([
      ['job slow', () => ({ hang: true })],
      [
        'orchestrate',
        (step) =>
          step === 0
            ? workflowCall(
                'await Promise.all([agents.spawn({ prompt: "job slow a" }), agents.spawn({ prompt: "job slow b" })])',
              )
            : { text: 'end' },
      ],
    ])
    let started = 0
    h.ctx.on('subagent/started', () => {
      if (++started === 2) setTimeout(() => h.agent.abort(), 20)
    })
    const result = await h.prompt('orchestrate')
    expect(result.reason).toBe('cancelled')
    await vi.waitFor(
      () => expect(h.ctx.subagents.list(h.agent).map((r) => r.status)).toEqual(['cancelled', 'cancelled']),
      { timeout: 10_000, interval: 5 },
    )
    const [run] = ToolWorkflow.workflowRuns(h.session.events)
    expect(run.status).toBe('cancelled')
  })

  it('a script that throws shows its own stack; an empty script and bad spawn arguments are clear errors', async () => {
    const script = [
      'const r = await agents.spawn({ prompt: "job one" })',
      'if (r.status === "completed") {',
      '  throw new Error("planned failure after " + r.id)',
      '}',
    ].join('\n')
    const h = await boot([
      ['job one', () => ({ text: 'one' })],
      [
        'orchestrate',
        (step) =>
          step === 0
            ? workflowCall(script)
            : step === 1
              ? { toolCalls: [{ name: 'workflow', arguments: { script: '  ' }, callId: 'w2' }] }
              : step === 2
                ? {
                    toolCalls: [
                      {
                        name: 'workflow',
                        arguments: {
                          script: 'try { await agents.spawn({ task: "x" }) } catch (e) { return e.message }',
                        },
                        callId: 'w3',
                      },
                    ],
                  }
                : { text: 'end' },
      ],
    ])
    await h.prompt('orchestrate')
    const requests = parentRequests(h)
    const thrown = toolText(requests[1], 'w1')!
    expect(thrown).toMatch(/^Error \[WORKFLOW_THROWN\]/)
    expect(thrown).toContain('Script failed (THROWN): Error: planned failure after sub-1\n    at workflow.js:3:9')
    expect(toolText(requests[2], 'w2')).toBe(
      'Error [EMPTY_SCRIPT]: the script is empty; pass the orchestration code in `script`.',
    )
    expect(toolText(requests[3], 'w3')).toContain('agents.spawn: prompt must be a non-empty string')
  })

  it('a child cannot start a workflow of its own (depth limit); nothing is spawned', async () => {
    const h = await boot([
      [
        'job nested',
        (step) =>
          step === 0
            ? {
                toolCalls: [
                  {
                    name: 'workflow',
                    arguments: { script: 'await agents.spawn({ prompt: "job deeper" })' },
                    callId: 'inner',
                  },
                ],
              }
            : { text: 'could not nest' },
      ],
      [
        'orchestrate',
        (step) =>
          step === 0 ? workflowCall('return (await agents.spawn({ prompt: "job nested" })).text') : { text: 'end' },
      ],
    ])
    await h.prompt('orchestrate')
    const childRequest = h.model.requests.find(
      (r) => r.metadata?.agentId !== h.agent.id && toolText(r, 'inner') !== undefined,
    )!
    expect(toolText(childRequest, 'inner')).toContain('Error [WORKFLOW_DEPTH_LIMIT]')
    expect(toolText(parentRequests(h).at(-1)!, 'w1')).toContain('Return value:\ncould not nest')
    expect(h.ctx.subagents.list(h.agent)).toHaveLength(1)
  })
})

describe('tool-workflow description', () => {
  it('names the limits of one run from the engine configuration', async () => {
    const h = await boot([['x', () => ({ text: 'x' })]], { maxChildren: 6, maxConcurrent: 3, timeoutMs: 90_000 })
    const description = h.ctx.tools.get('workflow')!.description
    expect(description).toMatch(/Limits of one run: 6 children, 3 at once, 90 s\.$/)
  })
})
