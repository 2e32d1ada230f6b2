// runTurn on its own: a real Session as the log, a scripted stream, a small tool runner and plain
// hooks. No plugin tree is booted; each test builds its dependencies in microseconds.
import { describe, expect, it } from 'vitest'
import { LlmError, emptyUsage, type LlmRequest, type StreamChunk } from '@dsh/llm'
import { CallIdentities, Session, type SessionEvent } from '@dsh/session'
import type { TurnResult } from '@dsh/agent'
import type { ToolCallRequest, ToolResultPayload } from '@dsh/tools'
import { runTurn, type TurnDeps } from '../src/turn.ts'
import { Inbox, toBlocks } from '../src/inbox.ts'

/** One model answer: text, then tool calls, then an error, a stall until aborted, or the finish. */
type Answer = { text?: string; calls?: Array<[string, object]>; error?: LlmError; hang?: boolean }

/** The scripted stream: answers requests in order, records them, counts streams closed early. */
function scripted(answers: Answer[], seen: { requests: LlmRequest[]; closed: number }) {
  return async function* stream(request: LlmRequest): AsyncGenerator<StreamChunk> {
    const n = seen.requests.push(request) - 1
    const a = answers[n] ?? { text: `unscripted request ${n}` }
    let done = false // a stream the loop stops early never gets past its last yield
    try {
      if (a.text) yield { kind: 'text-delta', text: a.text }
      for (const [i, [name, args]] of (a.calls ?? []).entries()) {
        yield { kind: 'tool-call-start', index: i, callId: `call_${n}_${i}`, name }
        yield { kind: 'tool-call-delta', index: i, argumentsDelta: JSON.stringify(args) }
        yield { kind: 'tool-call-end', index: i }
      }
      if (a.error) {
        done = true
        throw a.error
      }
      if (a.hang && !request.signal?.aborted) await new Promise((go) => request.signal?.addEventListener('abort', go))
      yield { kind: 'usage', usage: { ...emptyUsage(), input: 10, output: 5 } }
      yield { kind: 'finish', reason: a.calls?.length ? 'tool-calls' : 'stop' }
      done = true
    } finally {
      if (!done) seen.closed++
    }
  }
}

type Run = (call: ToolCallRequest, signal: AbortSignal | undefined) => Promise<string>

/** A tool runner shaped like the registry's `executeAll`: every call at once, results in call order. */
function toolRunner(run: Run, batches: number[]): TurnDeps['tools'] {
  return {
    schemas: () => [{ name: 'echo', description: 'echo', parameters: { type: 'object' } }],
    async executeAll(calls, context, onResult) {
      batches.push(calls.length)
      const pending = calls.map((call) => run(call, context.signal))
      for (const [i, call] of calls.entries()) {
        const text = await pending[i]
        const result: ToolResultPayload = {
          message: { role: 'tool', callId: call.callId, name: call.name, content: [{ type: 'text', text }] },
        }
        onResult?.(result, i)
      }
    },
  }
}

function setup(answers: Answer[], run: Run = async (call) => `ran ${call.arguments}`) {
  const seen = { requests: [] as LlmRequest[], closed: 0 }
  const batches: number[] = []
  const warnings: string[] = []
  const log = new Session({ cwd: '/work' })
  const queue = new Inbox()
  const deps: TurnDeps = {
    log,
    stream: scripted(answers, seen),
    tools: toolRunner(run, batches),
    prompt: { assemble: ({ tools }) => ({ system: 'you are a test', tools: tools ?? [] }) },
    queue,
    warn: (message) => warnings.push(message),
    agentId: 'agent-1',
    scope: 'agent:agent-1',
    cwd: '/work',
    maxSteps: 10,
    model: () => ({ provider: 'scripted', model: 'one' }),
    state: { callIds: new CallIdentities(), lastHeader: undefined },
    hooks: {
      preStep: async (payload) => ({ action: 'enter', messages: payload.messages }),
      request: async () => {},
      requestError: async () => ({ action: 'fail' }),
      turnStopping: async () => {},
      turnEnd: () => {},
    },
  }
  /** Queues human input as `send()` does; resolves with the turn that claimed it. */
  const send = (text: string) =>
    new Promise<TurnResult>((resolve, reject) =>
      queue.pushHuman({ content: toBlocks(text), source: { kind: 'human' }, human: true, settle: { resolve, reject } }),
    )
  const types = () => log.events.map((e) => e.type).filter((t) => t !== 'assistant/chunk')
  const results = () =>
    (log.events.filter((e) => e.type === 'tool/result') as SessionEvent<'tool/result'>[]).map((e) => e.data)
  const once = (type: string) =>
    new Promise<void>((resolve) => {
      const off = log.subscribe((e) => {
        if (e.type === type) {
          off()
          resolve()
        }
      })
    })
  return { deps, log, queue, seen, batches, warnings, send, types, results, once }
}

const never = new AbortController().signal
const user = (text: string) => ({ role: 'user', content: [{ type: 'text', text }] })

describe('runTurn', () => {
  it('steps: a tool call, then the answer; each request is rebuilt from the log', async () => {
    const t = setup([{ text: 'looking', calls: [['echo', { value: 'hi' }]] }, { text: 'done: hi' }])
    const sent = t.send('say hi')
    const result = await runTurn(t.deps, 0, never)
    expect(result).toMatchObject({ turn: 0, reason: 'completed', text: 'done: hi', steps: 2 })
    expect(result.usage.input).toBe(20)
    expect(await sent).toBe(result)
    expect(t.types()).toEqual([
      'turn/start',
      ...['step/start', 'user/message', 'request/header', 'assistant/message', 'tool/call', 'tool/result', 'step/end'],
      ...['step/start', 'assistant/message', 'step/end'],
      'turn/end',
    ])
    expect(t.seen.requests[1].messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool'])
    expect(t.seen.requests[1].metadata).toMatchObject({ agentId: 'agent-1', turn: 0, step: 1 })
  })

  it('parallel tool calls: one batch to the tools, each result logged once it and the earlier ones are done', async () => {
    let firstLogged!: () => void
    const logged = new Promise<void>((resolve) => (firstLogged = resolve))
    const t = setup(
      [
        {
          calls: [
            ['echo', { v: 'a' }],
            ['echo', { v: 'b' }],
          ],
        },
        { text: 'ok' },
      ],
      // The second call finishes only after the first result is in the log.
      async (call) => (call.callId.endsWith('_1') ? logged.then(() => 'b') : 'a'),
    )
    void t.once('tool/result').then(firstLogged)
    void t.send('go')
    const result = await runTurn(t.deps, 0, never)
    expect(result.reason).toBe('completed')
    expect(t.batches).toEqual([2])
    expect(t.results().map((r) => r.message.content)).toEqual([
      [{ type: 'text', text: 'a' }],
      [{ type: 'text', text: 'b' }],
    ])
  })

  it('cancellation mid-stream: the prefix is logged interrupted, its complete call answered, the stream closed', async () => {
    const t = setup([{ text: 'partial', calls: [['echo', {}]], hang: true }])
    void t.send('long task')
    const controller = new AbortController()
    t.log.subscribe((e) => {
      if (e.type === 'assistant/chunk' && e.data.chunk.kind === 'tool-call-end') controller.abort()
    })
    const result = await runTurn(t.deps, 0, controller.signal)
    expect(result.reason).toBe('cancelled')
    expect(t.log.last('assistant/message')!.data.interrupted).toBe(true)
    expect(t.results().map((r) => r.error?.code)).toEqual(['CANCELLED'])
    expect(t.batches).toEqual([]) // the call never ran
    expect(t.log.last('step/end')!.data.finish).toBe('error')
    expect(t.log.last('turn/end')!.data.reason).toBe('cancelled')
    expect(t.seen.closed).toBe(1)
  })

  it('cancellation while tools run: they see the signal, no further request, the turn ends cancelled', async () => {
    const controller = new AbortController()
    const t = setup([{ calls: [['echo', {}]] }, { text: 'never' }], async (_call, signal) => {
      controller.abort()
      return signal?.aborted ? 'saw abort' : 'no abort'
    })
    void t.send('go')
    const result = await runTurn(t.deps, 0, controller.signal)
    expect(result.reason).toBe('cancelled')
    expect(t.results()[0].message.content).toEqual([{ type: 'text', text: 'saw abort' }])
    expect(t.seen.requests).toHaveLength(1)
  })

  it('a provider error asks requestError; "fail" ends the turn error with its code', async () => {
    const t = setup([{ error: new LlmError('RATE_LIMIT', 'slow down') }])
    const asked: Array<{ code: string; attempt: number }> = []
    t.deps.hooks.requestError = async ({ error, attempt }) => {
      asked.push({ code: error.code, attempt })
      return { action: 'fail' }
    }
    void t.send('hi')
    const result = await runTurn(t.deps, 0, never)
    expect(result).toMatchObject({ reason: 'error', error: { code: 'RATE_LIMIT', message: 'slow down' } })
    expect(asked).toEqual([{ code: 'RATE_LIMIT', attempt: 1 }])
    expect(t.log.last('step/end')!.data.finish).toBe('error')
  })

  it('a provider error with a "retry" decision runs a new step with the same history', async () => {
    const t = setup([{ error: new LlmError('SERVER', 'busy') }, { text: 'second try' }])
    t.deps.hooks.requestError = async () => ({ action: 'retry', delayMs: 0 })
    void t.send('hi')
    const result = await runTurn(t.deps, 0, never)
    expect(result).toMatchObject({ reason: 'completed', text: 'second try', steps: 2 })
    expect(t.seen.requests[1].messages).toEqual(t.seen.requests[0].messages)
  })

  it('a session listener throwing on a chunk is a plugin error: one request, no requestError, the step closed', async () => {
    const t = setup([{ text: 'hello' }, { text: 'must not be requested' }])
    let asked = 0
    t.deps.hooks.requestError = async () => {
      asked++
      return { action: 'retry', delayMs: 0 }
    }
    t.log.subscribe(
      (e) => {
        if (e.type === 'assistant/chunk') throw new Error('listener broke')
      },
      { owner: 'broken-plugin' },
    )
    void t.send('hi')
    const result = await runTurn(t.deps, 0, never)
    expect(result.reason).toBe('error')
    expect(result.error?.code).toBe('PLUGIN_ERROR')
    expect(asked).toBe(0)
    expect(t.seen.requests).toHaveLength(1)
    expect(t.seen.closed).toBe(1)
    expect(t.types().slice(-2)).toEqual(['step/end', 'turn/end'])
  })

  it('a listener throwing on the answer with calls: no tool runs, every call answered PLUGIN_ERROR', async () => {
    const t = setup([
      {
        calls: [
          ['echo', {}],
          ['echo', {}],
        ],
      },
    ])
    t.log.subscribe((e) => {
      if (e.type === 'assistant/message') throw new Error('listener broke')
    })
    void t.send('hi')
    const result = await runTurn(t.deps, 0, never)
    expect(result.error?.code).toBe('PLUGIN_ERROR')
    expect(t.batches).toEqual([])
    expect(t.results().map((r) => r.error?.code)).toEqual(['PLUGIN_ERROR', 'PLUGIN_ERROR'])
    expect(t.seen.requests).toHaveLength(1)
  })

  it('a throwing request hook or deferred work ends the turn with its own code, never as a provider error', async () => {
    for (const way of ['throw', 'defer'] as const) {
      const t = setup([{ error: new LlmError('TRANSPORT', 'the stream broke too') }])
      let asked = 0
      t.deps.hooks.requestError = async () => {
        asked++
        return { action: 'fail' }
      }
      const failure = Object.assign(new Error('checkpoint failed'), { code: 'CHECKPOINT_FAILED' })
      t.deps.hooks.request = async ({ defer }) => {
        if (way === 'throw') throw failure
        defer?.(Promise.reject(failure))
      }
      void t.send('hi')
      const result = await runTurn(t.deps, 0, never)
      expect(result.error, way).toEqual({ code: 'CHECKPOINT_FAILED', message: 'checkpoint failed' })
      expect(asked, way).toBe(0)
      expect(t.types().slice(-2), way).toEqual(['step/end', 'turn/end'])
    }
  })

  it("a tool error is the model's to read; a failing tool runner ends the turn INTERNAL, never as a provider error", async () => {
    const t = setup([{ calls: [['echo', {}]] }, { text: 'read the error' }])
    t.deps.tools = {
      schemas: () => [],
      async executeAll(calls, _context, onResult) {
        onResult?.(
          {
            message: {
              role: 'tool',
              callId: calls[0].callId,
              name: 'echo',
              content: [{ type: 'text', text: 'boom' }],
              isError: true,
            },
            error: { code: 'TOOL_ERROR', message: 'boom' },
          },
          0,
        )
      },
    }
    void t.send('hi')
    expect(await runTurn(t.deps, 0, never)).toMatchObject({ reason: 'completed', text: 'read the error' })
    expect(t.seen.requests[1].messages.at(-1)).toMatchObject({ role: 'tool', isError: true })

    const u = setup([{ calls: [['echo', {}]] }, { text: 'must not be requested' }])
    let asked = 0
    u.deps.hooks.requestError = async () => {
      asked++
      return { action: 'retry', delayMs: 0 }
    }
    u.deps.tools = { schemas: () => [], executeAll: async () => Promise.reject(new Error('pipeline bug')) }
    void u.send('hi')
    const result = await runTurn(u.deps, 0, never)
    expect(result).toMatchObject({ reason: 'error', error: { code: 'INTERNAL', message: 'pipeline bug' } })
    expect(asked).toBe(0)
    expect(u.seen.requests).toHaveLength(1)
    expect(u.types().slice(-2)).toEqual(['step/end', 'turn/end'])
  })

  it('queued input: injected context rides ahead of the human message it was computed for', async () => {
    const t = setup([{ text: 'ok' }])
    t.queue.pushContext({ content: 'pane: editor', source: { kind: 'plugin', plugin: 'tmux' } })
    void t.send('question')
    await runTurn(t.deps, 0, never)
    expect(t.seen.requests[0].messages).toEqual([user('pane: editor'), user('question')])
    const sources = (t.log.events.filter((e) => e.type === 'user/message') as SessionEvent<'user/message'>[]).map(
      (e) => e.data.source.kind,
    )
    expect(sources).toEqual(['plugin', 'human'])
  })

  it('a throwing turnStopping hook still ends and settles the turn, as an error', async () => {
    const t = setup([{ text: 'fine' }])
    t.deps.hooks.turnStopping = async () => {
      throw Object.assign(new Error('stopper broke'), { code: 'PLUGIN_ERROR' })
    }
    const sent = t.send('hi')
    const result = await runTurn(t.deps, 0, never)
    expect(await sent).toMatchObject({ reason: 'error', error: { code: 'PLUGIN_ERROR' } })
    expect(t.log.last('turn/end')!.data.reason).toBe('error')
    expect(result.reason).toBe('error')
    expect(t.warnings).toEqual(['stopper broke'])
  })

  it('queued input: input sent during a tool call steers the next step and settles with the same turn', async () => {
    let steer!: Promise<TurnResult>
    const t = setup([{ calls: [['echo', {}]] }, { text: 'steered' }], async () => {
      steer = t.send('also this')
      return 'tool done'
    })
    const first = t.send('start')
    const result = await runTurn(t.deps, 0, never)
    expect(await first).toBe(result)
    expect(await steer).toBe(result)
    expect(t.seen.requests[1].messages.at(-1)).toEqual(user('also this'))
    expect(result).toMatchObject({ steps: 2, text: 'steered' })
  })

  it('queued input: input that arrives while the model answers adds one more step', async () => {
    const t = setup([{ text: 'first answer' }, { text: 'second answer' }])
    const off = t.log.subscribe((e) => {
      if (e.type !== 'assistant/chunk') return
      off()
      void t.send('and then?')
    })
    void t.send('question')
    const result = await runTurn(t.deps, 0, never)
    expect(result).toMatchObject({ steps: 2, text: 'second answer' })
    expect(t.seen.requests[1].messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user'])
  })

  it('queued input: a rejected step keeps the input on turn/end; maxSteps puts unentered input back', async () => {
    const t = setup([])
    t.deps.hooks.preStep = async () => ({ action: 'reject', code: 'QUOTA', reason: 'no more today' })
    void t.send('hello')
    const rejected = await runTurn(t.deps, 0, never)
    expect(rejected).toMatchObject({ reason: 'blocked', steps: 0, error: { code: 'QUOTA' } })
    expect(t.log.last('turn/end')!.data.rejected).toEqual([{ content: toBlocks('hello'), source: { kind: 'human' } }])

    const u = setup([{ calls: [['echo', {}]] }, { text: 'later' }])
    u.deps.maxSteps = 1
    u.deps.tools = toolRunner(async () => {
      void u.send('too late')
      return 'done'
    }, [])
    void u.send('go')
    expect(await runTurn(u.deps, 0, never)).toMatchObject({ reason: 'blocked', error: { code: 'MAX_STEPS' } })
    expect(u.deps.queue.hasHuman).toBe(true) // put back: the next turn enters it
    await runTurn(u.deps, 1, never)
    expect(u.seen.requests[1].messages.at(-1)).toEqual(user('too late'))
  })

  it('compaction hand-off: a context overflow is compacted by the requestError hook, the retry carries the summary', async () => {
    const t = setup([{ text: 'one' }, { error: new LlmError('CONTEXT_OVERFLOW', 'too long') }, { text: 'two' }])
    void t.send('first')
    await runTurn(t.deps, 0, never)
    t.deps.hooks.requestError = async ({ error }) => {
      if (error.code !== 'CONTEXT_OVERFLOW') return { action: 'fail' }
      // What a compaction engine does: replace the old history by a summary, in the log.
      const lastTurn = t.log.last('turn/end')!.seq + 1
      t.log.surface.replaceRange(0, lastTurn, [{ role: 'user', content: toBlocks('summary of turn 0') }])
      return { action: 'retry', delayMs: 0 }
    }
    void t.send('second')
    const result = await runTurn(t.deps, 1, never)
    expect(result).toMatchObject({ reason: 'completed', text: 'two' })
    expect(t.seen.requests[1].messages).toEqual([
      user('first'),
      { role: 'assistant', content: [{ type: 'text', text: 'one' }] },
      user('second'),
    ])
    expect(t.seen.requests[2].messages).toEqual([user('summary of turn 0'), user('second')])
  })

  it('compaction hand-off: a preStep hook that compacts before the step is what the request carries', async () => {
    const t = setup([{ text: 'one' }, { text: 'two' }])
    void t.send('first')
    await runTurn(t.deps, 0, never)
    t.deps.hooks.preStep = async ({ messages }) => {
      t.log.surface.replaceRange(0, t.log.length, [{ role: 'user', content: toBlocks('summary') }])
      return { action: 'enter', messages }
    }
    void t.send('second')
    await runTurn(t.deps, 1, never)
    expect(t.seen.requests[1].messages).toEqual([user('summary'), user('second')])
  })
})
