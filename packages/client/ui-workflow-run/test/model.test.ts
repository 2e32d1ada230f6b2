import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { Connection, Locale, Remote, SlotRegistry } from '@dsh/client-runtime'
import { foldRuns, runOfCall } from '../src/model.ts'
import plugin from '../src/client/index.tsx'

const ev = (type: string, data: unknown) => ({ type, data })

describe('workflow run fold', () => {
  it('folds started, child and finished events into the run of a call; children keep start order', () => {
    const events = [
      ev('tool/call', { callId: 'w1' }),
      ev('tool-workflow/started', {
        runId: 'wf-1',
        callId: 'w1',
        tool: 'workflow',
        description: 'three',
        script: 's',
        limits: {},
      }),
      ev('tool-workflow/child-started', { runId: 'wf-1', index: 1, id: 'sub-2', description: 'b', provider: 'spawn' }),
      ev('tool-workflow/child-started', { runId: 'wf-1', index: 0, id: 'sub-1', description: 'a', provider: 'spawn' }),
      ev('tool-workflow/child-finished', {
        runId: 'wf-1',
        child: {
          id: 'sub-2',
          index: 1,
          description: 'b',
          status: 'failed',
          text: '',
          error: { code: 'SERVER', message: 'down' },
        },
      }),
    ]
    const running = runOfCall(events, 'w1')!
    expect(running.status).toBe('running')
    expect(running.children.map((c) => [c.id, c.status])).toEqual([
      ['sub-1', 'running'],
      ['sub-2', 'failed'],
    ])
    events.push(
      ev('tool-workflow/finished', {
        runId: 'wf-1',
        status: 'completed',
        logs: [{ level: 'log', text: 'x' }],
        durationMs: 5,
      }),
    )
    expect(runOfCall(events, 'w1')).toMatchObject({
      status: 'completed',
      durationMs: 5,
      logs: [{ level: 'log', text: 'x' }],
    })
    expect(runOfCall(events, 'other')).toBeUndefined()
  })

  it('skips malformed events and events of unknown runs', () => {
    const runs = foldRuns([
      ev('tool-workflow/started', null),
      ev('tool-workflow/child-started', { runId: 'nope', id: 'x' }),
      ev('tool-workflow/finished', { runId: 'wf-9', status: 'weird' }),
    ])
    expect(runs.size).toBe(0)
  })

  it('the browser half registers a card for workflow and ralph ahead of the built-in order; unloading removes them', async () => {
    const ctx = new Context()
    await ctx.plugin(SlotRegistry)
    await ctx.plugin(Locale, { lang: 'zh' })
    // A real connection to a closed port: the card needs the service, this test needs no host.
    await ctx.plugin(Remote, { baseUrl: 'http://127.0.0.1:9' })
    const connection = ctx.plugin(Connection, { retryMs: 60_000, maxRetryMs: 60_000 })
    await connection
    const fiber = ctx.plugin(plugin, {} as never)
    await fiber
    for (const tool of ['workflow', 'ralph'])
      expect(ctx.slots.entries('tool.call.toolview', tool).map((e) => [e.id, e.order])).toEqual([
        ['ui-workflow-run', 50],
      ])
    expect(ctx.locale.t('workflowRun', 'status.failed')).toBe('失败')
    await fiber.dispose()
    expect(ctx.slots.entries('tool.call.toolview', 'workflow')).toEqual([])
    await connection.dispose()
  })
})
