import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import { DurableSessions } from '@dsh/session-persistence'
import JsonlPersistence from '@dsh/session-persistence-jsonl'
import SqlitePersistence from '@dsh/session-persistence-sqlite'
import * as Policy from '../src/index.ts'

let root: string
let harness: Harness | undefined
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-checkpoint-'))
})
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
  await rm(root, { recursive: true, force: true })
})

/** A tool that records, while its body runs, how many events were still waiting to be durable. */
function probeTool(seen: Array<{ pending: number; started: boolean }>) {
  return {
    name: 'probe-tool',
    inject: ['tools', 'sessionPersistence', 'sessions'],
    apply(ctx: Context) {
      ctx.tools.register({
        name: 'probe',
        description: 'records durability',
        parameters: { type: 'object', properties: {} },
        execute: (_args: unknown, call) => {
          const session = ctx.sessions.get(call.sessionId!)!
          seen.push({
            pending: ctx.sessionPersistence.pendingCount(call.sessionId!),
            started: session.events.some((e) => e.type === 'tool/started' && e.data.callId === call.callId),
          })
          return { content: 'probed' }
        },
      })
    },
  }
}

describe('checkpoints (jsonl)', () => {
  it('makes the log durable before each request, each top-level tool body and each pre-step', async () => {
    const atRequest: number[] = []
    const atPreStep: number[] = []
    const inTool: Array<{ pending: number; started: boolean }> = []
    let persistence: { pendingCount(id: string): number } | undefined
    let sessionId = ''
    const preStepProbe = {
      name: 'pre-step-probe',
      apply(ctx: Context) {
        ctx.on('agent/pre-step', async (payload, next) => {
          atPreStep.push(persistence!.pendingCount(payload.agent.session.id))
          return next()
        })
      },
    }
    harness = await createHarness({
      script: [
        () => {
          atRequest.push(persistence!.pendingCount(sessionId))
          return { text: 'probing', toolCalls: [{ name: 'probe', arguments: {} }] }
        },
        () => {
          atRequest.push(persistence!.pendingCount(sessionId))
          return { text: 'done' }
        },
      ],
      plugins: [
        [JsonlPersistence, { root, batchWindowMs: 10_000 }],
        [DurableSessions, {}],
        [Policy, {}],
        [preStepProbe],
        [probeTool(inTool)],
      ],
    })
    persistence = harness.ctx.sessionPersistence
    sessionId = harness.session.id
    const result = await harness.prompt('go')
    expect(result.reason).toBe('completed')
    // With a 10 s batch window nothing would be durable without the policy's flushes.
    expect(atRequest).toEqual([0, 0])
    expect(atPreStep).toEqual([0, 0])
    expect(inTool).toEqual([{ pending: 0, started: true }])
    const stored = await harness.ctx.sessionPersistence.readFrom(sessionId, 0)
    expect(stored.map((e) => e.type)).toContain('tool/started')
  })

  it('does not mark nested calls (no tool/call of this step) as started', async () => {
    harness = await createHarness({
      plugins: [[JsonlPersistence, { root }], [DurableSessions, {}], [Policy, {}], [probeTool([])]],
    })
    const out = await harness.ctx.tools.execute({ callId: 'nested-1', name: 'probe', arguments: '{}' }, { sessionId: harness.session.id, cwd: root })
    expect(out.message.content).toEqual([{ type: 'text', text: 'probed' }])
    expect(harness.session.events.some((e) => e.type === 'tool/started')).toBe(false)
  })
})

describe('a failed flush stops the call (sqlite held by another connection)', () => {
  const mountSqlite = (config: Policy.Config = {}) => {
    const path = join(root, 'sessions.sqlite')
    return {
      path,
      plugins: [
        [SqlitePersistence, { path, busyTimeoutMs: 20, batchWindowMs: 10_000 }],
        [DurableSessions, {}],
        [Policy, config],
      ] as unknown as Array<[never, unknown?]>,
    }
  }
  const hold = (path: string) => {
    const other = new Database(path, { timeout: 0 })
    other.exec('BEGIN EXCLUSIVE')
    return () => {
      other.exec('ROLLBACK')
      other.close()
    }
  }

  it('rejects the step at pre-step, then recovers with a contiguous log', async () => {
    const { path, plugins } = mountSqlite()
    harness = await createHarness({ script: [{ text: 'hi' }], plugins })
    await harness.ctx.sessionPersistence.flush()
    const release = hold(path)
    const blocked = await harness.prompt('first')
    release()
    expect(blocked.reason).toBe('blocked')
    expect(blocked.error?.code).toBe(Policy.CHECKPOINT_FAILED)
    expect(blocked.error?.message).toMatch(/checkpoint before the next step failed/)
    expect(harness.model.requests.length).toBe(0)
    const ok = await harness.prompt('second')
    expect(ok.reason).toBe('completed')
    await harness.ctx.sessionPersistence.flush()
    const stored = await harness.ctx.sessionPersistence.readFrom(harness.session.id, 0)
    expect(stored.length).toBe(harness.session.length)
  })

  it('fails the model request when the request checkpoint fails', async () => {
    const { path, plugins } = mountSqlite({ atPreStep: false })
    harness = await createHarness({ script: [{ text: 'hi' }], plugins })
    await harness.ctx.sessionPersistence.flush()
    const release = hold(path)
    const result = await harness.prompt('go')
    release()
    expect(result.reason).toBe('error')
    expect(result.error?.message).toMatch(/checkpoint before the model request failed/)
    expect(harness.model.requests.length).toBe(0)
  })

  it('answers the tool call with an error result and does not run the body', async () => {
    const { path, plugins } = mountSqlite()
    const ran: Array<{ pending: number; started: boolean }> = []
    let release: (() => void) | undefined
    harness = await createHarness({
      script: [
        () => {
          // The request checkpoint has passed; the store becomes unwritable before the tool runs.
          release = hold(path)
          return { toolCalls: [{ name: 'probe', arguments: {} }] }
        },
      ],
      plugins: [...plugins, [probeTool(ran) as never]],
    })
    await harness.ctx.sessionPersistence.flush()
    const result = await harness.prompt('go')
    release?.()
    expect(ran).toEqual([])
    const toolResult = harness.session.events.find((e) => e.type === 'tool/result')
    expect(toolResult?.data).toMatchObject({ error: { code: Policy.CHECKPOINT_FAILED }, message: { isError: true } })
    expect(JSON.stringify(toolResult?.data)).toMatch(/not run/)
    // The next pre-step could not checkpoint either, so the turn stopped there.
    expect(result.reason).toBe('blocked')
    await harness.ctx.sessionPersistence.flush()
    expect((await harness.ctx.sessionPersistence.readFrom(harness.session.id, 0)).length).toBe(harness.session.length)
  })
})

describe('service references', () => {
  it('reads durableSessions and sessions once, not at each checkpoint', async () => {
    const reads: string[] = []
    const counter = {
      name: 'read-counter',
      apply(ctx: Context) {
        ctx.on('internal/get', (from, name, _error, next) => {
          if (from.fiber?.runtime?.name === Policy.name) reads.push(name)
          return next()
        })
      },
    }
    harness = await createHarness({
      script: [{ toolCalls: [{ name: 'probe', arguments: {} }] }, { text: 'done' }],
      plugins: [[counter], [JsonlPersistence, { root }], [DurableSessions, {}], [Policy, {}], [probeTool([])]],
    })
    const result = await harness.prompt('go')
    expect(result.reason).toBe('completed')
    expect(harness.session.events.some((e) => e.type === 'tool/started')).toBe(true)
    // Once each, when the policy loads; nothing per checkpoint.
    expect(reads).toEqual(['durableSessions', 'sessions'])
  })
})
