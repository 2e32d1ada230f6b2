import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import type { SessionEvent } from '@dsh/session'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

const types = (events: readonly SessionEvent[]) => events.map((e) => e.type).filter((t) => t !== 'assistant/chunk')

function toolPlugin(name: string, execute: (args: any) => unknown, extra: Record<string, unknown> = {}) {
  return {
    name: `tool-${name}`,
    inject: ['tools'],
    apply(ctx: Context) {
      ctx.tools.register({
        name,
        description: `test tool ${name}`,
        parameters: { type: 'object', properties: { value: { type: 'string' } }, additionalProperties: false },
        execute: async (args: any) => ({ content: String(await execute(args)) }),
        ...extra,
      })
    },
  }
}

describe('agent loop', () => {
  it('runs a two-step turn with a tool call and logs the whole flow', async () => {
    harness = await createHarness({
      script: [
        { text: 'let me look', toolCalls: [{ name: 'echo', arguments: { value: 'hi' } }] },
        { text: 'done: hi' },
      ],
    })
    await harness.mount(toolPlugin('echo', (a) => `echo ${a.value}`))
    const result = await harness.prompt('say hi')
    expect(result).toMatchObject({ reason: 'completed', text: 'done: hi', steps: 2 })
    expect(types(harness.session.events)).toEqual([
      'turn/start',
      'step/start',
      'user/message',
      'request/header',
      'assistant/message',
      'tool/call',
      'tool/result',
      'step/end',
      'step/start',
      'assistant/message',
      'step/end',
      'turn/end',
    ])
    // The second request carries the tool result, derived from the log.
    const second = harness.model.requests[1]
    expect(second.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool'])
    expect(second.messages[2]).toMatchObject({ role: 'tool', content: [{ type: 'text', text: 'echo hi' }] })
    expect(second.tools?.map((t) => t.name)).toEqual(['echo'])
    expect(result.usage.input).toBe(20)
  })

  it('runs concurrency-safe calls of one step in parallel', async () => {
    let started = 0
    let release!: () => void
    const bothStarted = new Promise<void>((r) => (release = r))
    harness = await createHarness({
      script: [
        {
          toolCalls: [
            { name: 'wait', arguments: { value: 'a' } },
            { name: 'wait', arguments: { value: 'b' } },
          ],
        },
        { text: 'ok' },
      ],
    })
    await harness.mount(
      toolPlugin(
        'wait',
        async (a) => {
          if (++started === 2) release()
          await bothStarted // would deadlock if the calls ran one after the other
          return a.value
        },
        { concurrencySafe: true },
      ),
    )
    const result = await harness.prompt('go')
    expect(result.reason).toBe('completed')
    const results = harness.session.events.filter((e) => e.type === 'tool/result') as SessionEvent<'tool/result'>[]
    expect(results.map((e) => e.data.message.content[0])).toEqual([
      { type: 'text', text: 'a' },
      { type: 'text', text: 'b' },
    ])
  })

  it('turns a throwing tool, malformed JSON and an unknown tool into model-visible errors', async () => {
    harness = await createHarness({
      script: [
        {
          toolCalls: [
            { name: 'boom', arguments: {} },
            { name: 'boom', arguments: '{"value": ' },
            { name: 'nope', arguments: {} },
          ],
        },
        { text: 'recovered' },
      ],
    })
    await harness.mount(
      toolPlugin('boom', () => {
        throw new Error('disk on fire')
      }),
    )
    const result = await harness.prompt('try')
    expect(result).toMatchObject({ reason: 'completed', text: 'recovered' })
    const results = harness.session.events.filter((e) => e.type === 'tool/result') as SessionEvent<'tool/result'>[]
    expect(results.map((r) => r.data.error?.code)).toEqual(['TOOL_ERROR', 'INVALID_JSON', 'UNKNOWN_TOOL'])
    expect(results.every((r) => r.data.message.isError)).toBe(true)
    const toolTexts = harness.model.requests[1].messages.filter((m) => m.role === 'tool')
    expect(JSON.stringify(toolTexts[0])).toContain('disk on fire')
    expect(JSON.stringify(toolTexts[2])).toContain('boom') // names the available tools
  })

  it('abort mid-stream logs the interrupted prefix and closes the turn cancelled', async () => {
    harness = await createHarness({ script: [{ text: 'partial answer here', hang: true }, { text: 'next turn' }] })
    const pending = harness.prompt('long task')
    await new Promise<void>((resolve) => {
      const off = harness!.session.subscribe((e) => {
        if (e.type === 'assistant/chunk') {
          off()
          resolve()
        }
      })
    })
    harness.agent.abort()
    const result = await pending
    expect(result.reason).toBe('cancelled')
    const message = harness.session.last('assistant/message')!
    expect(message.data.interrupted).toBe(true)
    expect(message.data.message.content[0]).toMatchObject({ type: 'text' })
    expect(harness.session.last('turn/end')!.data.reason).toBe('cancelled')
    // The agent is usable again, and the interrupted prefix is part of the history.
    const next = await harness.prompt('again')
    expect(next.text).toBe('next turn')
    expect(harness.model.requests[1].messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user'])
  })

  it('a rejecting pre-step listener closes the turn with no step', async () => {
    harness = await createHarness({ script: [{ text: 'never' }] })
    await harness.mount({
      name: 'gate',
      apply(ctx: Context) {
        ctx.on('agent/pre-step', async () => ({ action: 'reject', code: 'QUOTA', reason: 'daily quota used up' }), {
          prepend: true,
        })
      },
    })
    const result = await harness.prompt('hello')
    expect(result).toMatchObject({
      reason: 'blocked',
      error: { code: 'QUOTA', message: 'daily quota used up' },
      steps: 0,
    })
    expect(types(harness.session.events)).toEqual(['turn/start', 'turn/end'])
    expect(harness.model.requests).toHaveLength(0)
    // Nothing the user sent is lost: the unentered input is kept on turn/end (not model-visible).
    expect(harness.session.last('turn/end')!.data.rejected).toEqual([
      { content: [{ type: 'text', text: 'hello' }], source: { kind: 'human' } },
    ])
    expect(harness.session.deriveMessages()).toEqual([])
  })

  it('injected context waits for the next admitted request and is logged with its source', async () => {
    harness = await createHarness({ script: [{ text: 'one' }, { text: 'two' }] })
    await harness.prompt('first')
    harness.agent.inject({ content: 'pane: editor', source: { kind: 'plugin', plugin: '@dsh/tmux-context' } })
    expect(harness.model.requests).toHaveLength(1) // inject never starts a turn
    await harness.prompt('second')
    const messages = harness.model.requests[1].messages
    expect(messages.slice(-2)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'pane: editor' }] },
      { role: 'user', content: [{ type: 'text', text: 'second' }] },
    ])
    const injected = harness.session.events.find(
      (e) => e.type === 'user/message' && e.data.source.kind === 'plugin',
    ) as SessionEvent<'user/message'>
    expect(injected.data.source).toEqual({ kind: 'plugin', plugin: '@dsh/tmux-context' })
  })

  it('a message sent mid-turn steers the running turn at the next step', async () => {
    let steer: (() => void) | undefined
    harness = await createHarness({
      script: [{ toolCalls: [{ name: 'slow', arguments: {} }] }, { text: 'saw the steering message' }],
    })
    await harness.mount(
      toolPlugin('slow', async () => {
        steer?.()
        return 'slow done'
      }),
    )
    let steered: Promise<unknown> | undefined
    steer = () => {
      steered = harness!.agent.send('actually, use tabs')
    }
    const result = await harness.prompt('format the file')
    expect(result.text).toBe('saw the steering message')
    expect(await steered).toBe(result) // both messages are answered by the same turn
    const last = harness.model.requests[1].messages
    expect(last[last.length - 1]).toEqual({ role: 'user', content: [{ type: 'text', text: 'actually, use tabs' }] })
    expect(harness.session.events.filter((e) => e.type === 'turn/start')).toHaveLength(1)
  })

  it('unloading a plugin mid-session unwinds its tools and prompt sections', async () => {
    harness = await createHarness({ script: [{ text: 'a' }, { text: 'b' }] })
    const plugin = await harness.mount({
      name: 'contrib',
      inject: ['tools', 'systemPrompt'],
      apply(ctx: Context) {
        ctx.tools.register({
          name: 'extra',
          description: 'extra tool',
          parameters: { type: 'object' },
          execute: () => ({ content: 'x' }),
        })
        ctx.systemPrompt.registerSection({ id: 'contrib', order: 50, text: 'CONTRIB SECTION' })
      },
    })
    await harness.prompt('one')
    expect(harness.model.requests[0].tools?.map((t) => t.name)).toContain('extra')
    expect(harness.model.requests[0].system).toContain('CONTRIB SECTION')
    await plugin.dispose()
    await harness.prompt('two')
    expect(harness.model.requests[1].tools?.map((t) => t.name) ?? []).not.toContain('extra')
    expect(harness.model.requests[1].system).not.toContain('CONTRIB SECTION')
    // The header change is logged, so the request stays reconstructable from the log.
    expect(harness.session.events.filter((e) => e.type === 'request/header')).toHaveLength(2)
  })

  it('stops a turn at maxSteps with a logged reason', async () => {
    const loop = { toolCalls: [{ name: 'echo', arguments: { value: 'again' } }] }
    harness = await createHarness({ maxSteps: 3, script: [loop, loop, loop, loop] })
    await harness.mount(toolPlugin('echo', (a) => a.value))
    const result = await harness.prompt('loop forever')
    expect(result).toMatchObject({ reason: 'blocked', error: { code: 'MAX_STEPS' }, steps: 3 })
  })

  it('retries a failed request when an agent/request-error listener asks to, in a new step', async () => {
    harness = await createHarness({
      script: [{ error: { code: 'RATE_LIMIT', message: 'slow down' } }, { text: 'fine now' }],
    })
    const seen: string[] = []
    await harness.mount({
      name: 'retry',
      apply(ctx: Context) {
        ctx.on('agent/request-error', async (payload, next) => {
          seen.push(`${payload.error.code}#${payload.attempt}`)
          return payload.attempt <= 1 ? { action: 'retry', delayMs: 0 } : next()
        })
      },
    })
    const result = await harness.prompt('hi')
    expect(result).toMatchObject({ reason: 'completed', text: 'fine now', steps: 2 })
    expect(seen).toEqual(['RATE_LIMIT#1'])
    // The failed step contributed nothing to the history: the retry saw the same messages.
    expect(harness.model.requests[1].messages).toEqual(harness.model.requests[0].messages)
  })

  it('without a retry listener a model error ends the turn with reason error', async () => {
    harness = await createHarness({ script: [{ error: { code: 'AUTH', message: 'bad key' } }] })
    const result = await harness.prompt('hi')
    expect(result).toMatchObject({ reason: 'error', error: { code: 'AUTH', message: 'bad key' } })
  })

  it('a length finish without tool calls ends the turn as max-tokens', async () => {
    harness = await createHarness({ script: [{ text: 'cut off mid sen', finish: 'length' }] })
    expect((await harness.prompt('write a novel')).reason).toBe('max-tokens')
  })

  it('a plugin that throws from agent/request ends the turn with its error code, logged', async () => {
    harness = await createHarness({ script: [{ text: 'never' }] })
    await harness.mount({
      name: 'failing-checkpoint',
      apply(ctx: Context) {
        ctx.on(
          'agent/request',
          async () => {
            throw Object.assign(new Error('disk full while flushing'), { code: 'CHECKPOINT_FAILED' })
          },
          { prepend: true },
        )
      },
    })
    const result = await harness.prompt('hi')
    expect(result).toMatchObject({
      reason: 'error',
      error: { code: 'CHECKPOINT_FAILED', message: 'disk full while flushing' },
    })
    expect(harness.model.requests).toHaveLength(0)
    expect(harness.session.last('turn/end')!.data).toMatchObject({
      reason: 'error',
      error: { code: 'CHECKPOINT_FAILED' },
    })
    expect(types(harness.session.events)).toEqual([
      'turn/start',
      'step/start',
      'user/message',
      'request/header',
      'step/end',
      'turn/end',
    ])
  })

  it('sends the request before deferred work ends and takes none of the response until it has', async () => {
    const order: string[] = []
    let finish!: () => void
    harness = await createHarness({
      script: [
        () => {
          order.push('model saw the request')
          return { text: 'answer' }
        },
      ],
    })
    await harness.mount({
      name: 'slow-checkpoint',
      apply(ctx: Context) {
        ctx.on('agent/request', async (payload, next) => {
          payload.defer!(
            new Promise<void>((resolve) => (finish = resolve)).then(() => void order.push('deferred work done')),
          )
          return next()
        })
        ctx.on('session/event', (_session, event) => {
          if (event.type === 'assistant/chunk' && !order.includes('first chunk logged'))
            order.push('first chunk logged')
        })
      },
    })
    // Count the chunks the loop has taken from the stream (the model's own stream, wrapped).
    let taken = 0
    const model = harness.model as unknown as { stream(request: unknown): AsyncIterable<unknown> }
    const stream = model.stream.bind(model)
    model.stream = async function* (request) {
      for await (const chunk of stream(request)) {
        taken++
        yield chunk
      }
    }
    const result = harness.prompt('hi')
    await vi.waitFor(() => expect(order).toEqual(['model saw the request']))
    // The loop has taken the first chunk of the answer, but logs nothing of it while the work is pending.
    await vi.waitFor(() => expect(taken).toBeGreaterThan(0))
    expect(harness.session.events.some((e) => e.type === 'assistant/chunk')).toBe(false)
    finish()
    expect(await result).toMatchObject({ reason: 'completed', text: 'answer' })
    expect(order).toEqual(['model saw the request', 'deferred work done', 'first chunk logged'])
  })

  it('a deferred rejection (also deferred at pre-step) ends the turn with its code, nothing of the response logged, no retry', async () => {
    harness = await createHarness({
      script: [{ toolCalls: [{ name: 'echo', arguments: { value: 'x' } }] }, { text: 'a paid retry' }],
    })
    let ran = 0
    await harness.mount(toolPlugin('echo', (a) => (ran++, a.value)))
    await harness.mount({
      name: 'failing-deferred-checkpoint',
      apply(ctx: Context) {
        ctx.on('agent/request-error', (async () => ({ action: 'retry', delayMs: 0 })) as never)
        ctx.on('agent/pre-step', async (payload, next) => {
          payload.defer!(
            Promise.reject(Object.assign(new Error('disk full while flushing'), { code: 'CHECKPOINT_FAILED' })),
          )
          return next()
        })
      },
    })
    const result = await harness.prompt('hi')
    expect(result).toMatchObject({
      reason: 'error',
      error: { code: 'CHECKPOINT_FAILED', message: 'disk full while flushing' },
    })
    expect(harness.model.requests).toHaveLength(1)
    expect(ran).toBe(0)
    expect(harness.session.events.some((e) => e.type === 'assistant/chunk')).toBe(false)
    expect(types(harness.session.events)).toEqual([
      'turn/start',
      'step/start',
      'user/message',
      'request/header',
      'step/end',
      'turn/end',
    ])
    expect(harness.session.last('step/end')!.data).toMatchObject({ finish: 'error' })
  })

  it('a deferred rejection wins over a failed stream: the turn ends with it, not as a provider error', async () => {
    harness = await createHarness({
      script: [{ error: { code: 'RATE_LIMIT', message: 'slow down' } }, { text: 'a paid retry' }],
    })
    const seen: string[] = []
    await harness.mount({
      name: 'failing-deferred-checkpoint',
      apply(ctx: Context) {
        ctx.on(
          'agent/request-error',
          async (payload) => (seen.push(payload.error.code), { action: 'retry', delayMs: 0 }),
        )
        ctx.on('agent/request', async (payload, next) => {
          payload.defer!(
            new Promise((_, reject) =>
              setTimeout(() => reject(Object.assign(new Error('flush failed'), { code: 'CHECKPOINT_FAILED' })), 10),
            ),
          )
          return next()
        })
      },
    })
    const result = await harness.prompt('hi')
    expect(result).toMatchObject({ reason: 'error', error: { code: 'CHECKPOINT_FAILED' } })
    expect(seen).toEqual([])
    expect(harness.model.requests).toHaveLength(1)
  })

  it('logs each tool result as soon as it and the earlier calls are done', async () => {
    let seenBeforeSecond: string[] = []
    harness = await createHarness({
      script: [
        {
          toolCalls: [
            { name: 'first', arguments: {} },
            { name: 'second', arguments: {} },
          ],
        },
        { text: 'ok' },
      ],
    })
    await harness.mount(toolPlugin('first', () => 'one'))
    await harness.mount(
      toolPlugin('second', () => {
        seenBeforeSecond = harness!.session.events
          .filter((e) => e.type === 'tool/result')
          .map((e) => (e as SessionEvent<'tool/result'>).data.message.name)
        return 'two'
      }),
    )
    await harness.prompt('go')
    expect(seenBeforeSecond).toEqual(['first'])
  })
})

describe('plugin failures (issue 14 item 14)', () => {
  it('a throwing agent/turn-stopping listener: send() settles, the turn is closed in the log, the next turn runs', async () => {
    harness = await createHarness({ script: [{ text: 'first' }, { text: 'second' }] })
    let calls = 0
    await harness.mount({
      name: 'stopping-bomb',
      apply(ctx: Context) {
        ctx.on('agent/turn-stopping', () => {
          if (calls++ === 0) throw new Error('stopping-bomb exploded')
        })
      },
    })
    const first = await harness.prompt('one')
    expect(first).toMatchObject({ reason: 'error', text: 'first', error: { code: 'PLUGIN_ERROR' } })
    expect(first.error!.message).toBe('plugin "stopping-bomb" failed in agent/turn-stopping: stopping-bomb exploded')
    const end = harness.session.last('turn/end')!
    expect(end.data).toMatchObject({ turn: 0, reason: 'error', error: { code: 'PLUGIN_ERROR' } })
    expect(harness.session.last()!.type).toBe('turn/end')
    await harness.agent.idle()
    expect(harness.agent.status).toBe('idle')
    const second = await harness.prompt('two')
    expect(second).toMatchObject({ turn: 1, reason: 'completed', text: 'second' })
  })

  it('a session listener throwing on assistant/chunk: one request, no retry, PLUGIN_ERROR, the step closed', async () => {
    harness = await createHarness({ script: [{ text: 'the first answer' }, { text: 'a paid retry' }] })
    // A retry policy that would retry any provider error.
    await harness.mount({
      name: 'always-retry',
      apply(ctx: Context) {
        ctx.on('agent/request-error', (async () => ({ action: 'retry', delayMs: 0 })) as never)
      },
    })
    await harness.mount({
      name: 'chunk-bomb',
      apply(ctx: Context) {
        ctx.on('session/event', (_s, event) => {
          if (event.type === 'assistant/chunk') throw new Error('chunk-bomb exploded')
        })
      },
    })
    const result = await harness.prompt('hello')
    expect(harness.model.requests).toHaveLength(1)
    expect(result).toMatchObject({ reason: 'error', error: { code: 'PLUGIN_ERROR' } })
    expect(result.error!.message).toMatch(
      /^plugin "chunk-bomb" failed in session\/event listener on "assistant\/chunk"/,
    )
    const all = harness.session.events.map((e) => e.type)
    expect(all.slice(all.indexOf('assistant/chunk'))).toEqual(['assistant/chunk', 'step/end', 'turn/end'])
  })

  function bomb(on: string) {
    return {
      name: `${on.replace('/', '-')}-bomb`,
      apply(ctx: Context) {
        ctx.on('session/event', (_s, event) => {
          if (event.type === on) throw new Error(`${on} bomb`)
        })
      },
    }
  }

  it('a listener throwing on assistant/message with tool calls: no tool runs, every call is answered, the next turn replays a well-formed history', async () => {
    harness = await createHarness({
      script: [
        {
          toolCalls: [
            { name: 'echo', arguments: { value: 'a' } },
            { name: 'echo', arguments: { value: 'b' } },
          ],
        },
        { text: 'fine' },
      ],
    })
    let ran = 0
    await harness.mount(toolPlugin('echo', (a) => (ran++, a.value)))
    const fiber = await harness.mount(bomb('assistant/message'))
    const result = await harness.prompt('go')
    expect(result).toMatchObject({ reason: 'error', error: { code: 'PLUGIN_ERROR' } })
    expect(result.error!.message).toMatch(/^plugin "assistant-message-bomb" failed/)
    expect(ran).toBe(0)
    expect(types(harness.session.events)).toEqual([
      'turn/start',
      'step/start',
      'user/message',
      'request/header',
      'assistant/message',
      'tool/call',
      'tool/call',
      'tool/result',
      'tool/result',
      'step/end',
      'turn/end',
    ])
    const results = harness.session.events.filter((e) => e.type === 'tool/result') as SessionEvent<'tool/result'>[]
    expect(results.map((e) => e.data.error?.code)).toEqual(['PLUGIN_ERROR', 'PLUGIN_ERROR'])
    await fiber.dispose()
    expect(await harness.prompt('again')).toMatchObject({ reason: 'completed', text: 'fine' })
    expect(harness.model.requests[1].messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'user'])
  })

  it('a listener throwing on tool/result: each result is logged once, the step closes, the turn ends PLUGIN_ERROR without another request', async () => {
    harness = await createHarness({
      script: [
        {
          toolCalls: [
            { name: 'echo', arguments: { value: 'a' } },
            { name: 'echo', arguments: { value: 'b' } },
          ],
        },
        { text: 'unreached' },
      ],
    })
    await harness.mount(toolPlugin('echo', (a) => a.value, { concurrencySafe: true }))
    await harness.mount(bomb('tool/result'))
    const result = await harness.prompt('go')
    expect(result).toMatchObject({ reason: 'error', error: { code: 'PLUGIN_ERROR' } })
    expect(result.error!.message).toMatch(
      /^plugin "tool-result-bomb" failed in session\/event listener on "tool\/result": tool\/result bomb$/,
    )
    expect(harness.model.requests).toHaveLength(1)
    expect(types(harness.session.events).slice(-5)).toEqual([
      'tool/call',
      'tool/result',
      'tool/result',
      'step/end',
      'turn/end',
    ])
  })
})

describe('service references', () => {
  it('reads llm, tools and systemPrompt once per agent and dispatches its step events without ctx.waterfall', async () => {
    const reads: string[] = []
    let waterfallReads = 0
    const counter = {
      name: 'read-counter',
      apply(ctx: Context) {
        ctx.on('internal/get', (from, name, _error, next) => {
          if (from.fiber?.runtime?.name === 'agent-loop' && ['llm', 'tools', 'systemPrompt'].includes(name))
            reads.push(name)
          return next()
        })
        // `ctx.waterfall` is an accessor of the reflect service; count its reads by agent-loop.
        const props = (
          ctx.reflect as unknown as { props: Record<string, { get: (this: Context, ...rest: unknown[]) => unknown }> }
        ).props
        const accessor = props.waterfall
        const get = accessor.get
        accessor.get = function (this: Context, ...rest: unknown[]) {
          if (this.fiber?.runtime?.name === 'agent-loop') waterfallReads++
          return get.apply(this, rest)
        }
      },
    }
    harness = await createHarness({
      script: [
        { toolCalls: [{ name: 'echo', arguments: { value: 'a' } }] },
        { toolCalls: [{ name: 'echo', arguments: { value: 'b' } }] },
        { text: 'done' },
      ],
      plugins: [[counter]],
    })
    await harness.mount(toolPlugin('echo', (a) => `echo ${a.value}`))
    const result = await harness.prompt('go')
    expect(result).toMatchObject({ reason: 'completed', steps: 3 })
    // Once each, when the agent was created; none per step.
    expect(reads).toEqual(['llm', 'tools', 'systemPrompt'])
    // agent/pre-step and agent/request went to the events service directly, three steps each.
    expect(waterfallReads).toBe(0)
  })
})

describe('tool-call identities', () => {
  const calls = (events: readonly SessionEvent[]) =>
    (events.filter((e) => e.type === 'tool/call') as SessionEvent<'tool/call'>[]).map((e) => e.data)

  it('gives repeated and empty provider ids a session-unique identity, used everywhere in the log and on the wire', async () => {
    harness = await createHarness({
      script: [
        {
          toolCalls: [
            { name: 'echo', arguments: { value: 'a' }, callId: 'call_0_0' },
            { name: 'echo', arguments: { value: 'b' }, callId: '' },
          ],
        },
        { text: 'first done' },
        {
          toolCalls: [
            { name: 'echo', arguments: { value: 'c' }, callId: 'call_0_0' },
            { name: 'echo', arguments: { value: 'd' }, callId: '' },
          ],
        },
        { text: 'second done' },
      ],
    })
    await harness.mount(toolPlugin('echo', (a) => `echo ${a.value}`))
    await harness.prompt('one')
    await harness.prompt('two')
    const events = harness.session.events
    expect(calls(events)).toEqual([
      { callId: 'call_0_0', name: 'echo', arguments: '{"value":"a"}' },
      { callId: 'call-1', name: 'echo', arguments: '{"value":"b"}', providerCallId: '' },
      { callId: 'call_0_0-2', name: 'echo', arguments: '{"value":"c"}', providerCallId: 'call_0_0' },
      { callId: 'call-2', name: 'echo', arguments: '{"value":"d"}', providerCallId: '' },
    ])
    // The raw chunk, the message block and the result all carry the identity.
    const starts = events.flatMap((e) =>
      e.type === 'assistant/chunk' && e.data.chunk.kind === 'tool-call-start' ? [e.data.chunk.callId] : [],
    )
    expect(starts).toEqual(['call_0_0', 'call-1', 'call_0_0-2', 'call-2'])
    const blocks = events.flatMap((e) =>
      e.type === 'assistant/message'
        ? e.data.message.content.flatMap((b) => (b.type === 'tool-call' ? [b.callId] : []))
        : [],
    )
    expect(blocks).toEqual(starts)
    const results = (events.filter((e) => e.type === 'tool/result') as SessionEvent<'tool/result'>[]).map((e) => [
      e.data.message.callId,
      e.data.message.content[0],
    ])
    expect(results).toEqual([
      ['call_0_0', { type: 'text', text: 'echo a' }],
      ['call-1', { type: 'text', text: 'echo b' }],
      ['call_0_0-2', { type: 'text', text: 'echo c' }],
      ['call-2', { type: 'text', text: 'echo d' }],
    ])
    // The last request pairs every result with its call under one consistent id.
    const last = harness.model.requests[3].messages
    const sent = last.flatMap((m) =>
      m.role === 'assistant'
        ? m.content.flatMap((b) => (b.type === 'tool-call' ? [b.callId] : []))
        : m.role === 'tool'
          ? [`result:${m.callId}`]
          : [],
    )
    expect(sent).toEqual([
      'call_0_0',
      'call-1',
      'result:call_0_0',
      'result:call-1',
      'call_0_0-2',
      'call-2',
      'result:call_0_0-2',
      'result:call-2',
    ])
  })

  it('keeps identities unique across an agent resumed on the same log', async () => {
    harness = await createHarness({
      script: [
        { toolCalls: [{ name: 'echo', arguments: { value: 'a' }, callId: 'call_0' }] },
        { text: 'done' },
        { toolCalls: [{ name: 'echo', arguments: { value: 'b' }, callId: 'call_0' }] },
        { text: 'done again' },
      ],
    })
    await harness.mount(toolPlugin('echo', (a) => `echo ${a.value}`))
    await harness.prompt('one')
    const { ctx, session, agent } = harness
    await agent.dispose()
    const resumed = ctx.agents.create({ cwd: process.cwd(), session, model: agent.model })
    await resumed.send('two')
    expect(calls(session.events).map((c) => c.callId)).toEqual(['call_0', 'call_0-2'])
    await resumed.dispose()
  })
})
