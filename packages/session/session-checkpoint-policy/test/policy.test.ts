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
  it('without overlap: makes the log durable before each request, each top-level tool body and each pre-step', async () => {
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
        [Policy, { overlapRequest: false }],
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
    const out = await harness.ctx.tools.execute(
      { callId: 'nested-1', name: 'probe', arguments: '{}' },
      { sessionId: harness.session.id, cwd: root },
    )
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

  it('without overlap: rejects the step at pre-step, then recovers with a contiguous log', async () => {
    const { path, plugins } = mountSqlite({ overlapRequest: false })
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

  it('without overlap: fails the model request when the request checkpoint fails', async () => {
    const { path, plugins } = mountSqlite({ atPreStep: false, overlapRequest: false })
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
    // Without overlap the request checkpoint has passed when the model answers (held below).
    const { path, plugins } = mountSqlite({ overlapRequest: false })
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

describe('overlapped with the request (overlapRequest, the default)', () => {
  /** The jsonl backend on real files, each write held back a little and counted once durable. */
  function slowJsonl(durable: { records: number }) {
    return class SlowJsonl extends JsonlPersistence {
      protected override async backendWrite(
        id: Parameters<JsonlPersistence['backendWrite']>[0],
        records: Parameters<JsonlPersistence['backendWrite']>[1],
      ) {
        await new Promise((resolve) => setTimeout(resolve, 30))
        await super.backendWrite(id, records)
        durable.records += records.length
      }
    }
  }

  it('sends the request before the log is durable and logs none of the response before it is (prompt included)', async () => {
    const durable = { records: 0 }
    const atRequest: Array<{ durable: number; logged: number }> = []
    const atFirstChunk: Array<{ durable: number; seq: number }> = []
    const inTool: Array<{ pending: number; started: boolean }> = []
    let sessionId = ''
    const chunkProbe = {
      name: 'chunk-probe',
      apply(ctx: Context) {
        ctx.on('session/event', (session, event) => {
          if (session.id !== sessionId || event.type !== 'assistant/chunk') return
          const previous = session.events[event.seq - 1]
          if (previous?.type !== 'assistant/chunk') atFirstChunk.push({ durable: durable.records, seq: event.seq })
        })
      },
    }
    harness = await createHarness({
      script: [
        () => {
          atRequest.push({ durable: durable.records, logged: harness!.session.length })
          return { toolCalls: [{ name: 'probe', arguments: {} }] }
        },
        () => {
          atRequest.push({ durable: durable.records, logged: harness!.session.length })
          return { text: 'done' }
        },
      ],
      plugins: [
        [slowJsonl(durable) as never, { root, batchWindowMs: 10_000 }],
        [DurableSessions, {}],
        [Policy, {}],
        [chunkProbe],
        [probeTool(inTool)],
      ],
    })
    sessionId = harness.session.id
    const result = await harness.prompt('go')
    expect(result.reason).toBe('completed')
    // The requests left while their flushes were still running...
    expect(atRequest.length).toBe(2)
    for (const seen of atRequest) expect(seen.durable).toBeLessThan(seen.logged)
    // ...and the first chunk of each response was logged only once every earlier event (the
    // user's prompt and the request header among them) was durable.
    expect(atFirstChunk.length).toBe(2)
    for (const seen of atFirstChunk) expect(seen.durable).toBe(seen.seq)
    expect(inTool).toEqual([{ pending: 0, started: true }])
  })

  it('a failed flush lets the request go but drops its response: the turn ends CHECKPOINT_FAILED, then recovers', async () => {
    const path = join(root, 'sessions.sqlite')
    harness = await createHarness({
      script: [{ toolCalls: [{ name: 'probe', arguments: {} }] }, { text: 'after recovery' }],
      plugins: [
        [SqlitePersistence, { path, busyTimeoutMs: 20, batchWindowMs: 10_000 }],
        [DurableSessions, {}],
        [Policy, {}],
        [probeTool([])],
      ] as never,
    })
    await harness.ctx.sessionPersistence.flush()
    const other = new Database(path, { timeout: 0 })
    other.exec('BEGIN EXCLUSIVE')
    const failed = await harness.prompt('first')
    other.exec('ROLLBACK')
    other.close()
    expect(failed.reason).toBe('error')
    expect(failed.error?.code).toBe(Policy.CHECKPOINT_FAILED)
    expect(harness.model.requests.length).toBe(1)
    // Nothing of the response was logged or run.
    expect(
      harness.session.events.some(
        (e) => e.type === 'assistant/chunk' || e.type === 'tool/call' || e.type === 'tool/started',
      ),
    ).toBe(false)
    const ok = await harness.prompt('second')
    expect(ok.reason).toBe('completed')
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
