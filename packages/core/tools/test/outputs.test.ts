// What the registry answers at its edges: the exact error results the model reads (malformed
// outputs, a failing finalizeContent, thrown values that are not Errors, the two kinds of
// cancellation), the tool/result payload of an error, the per-call context a tool sees, and the
// one-line refusals of the registration API. Mutation testing (`pnpm mutation tools`) showed these
// sentences and branches could change without a test noticing.
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import ToolRegistry, {
  type ToolCallContext,
  type ToolDefinition,
  type ToolResultInfo,
  type ToolResultPayload,
} from '@dsh/tools'

async function boot(config?: Record<string, unknown>) {
  const ctx = new Context()
  await ctx.plugin(ToolRegistry, config as never)
  return ctx
}

function tool(name: string, execute: ToolDefinition['execute'], extra: Partial<ToolDefinition> = {}): ToolDefinition {
  return { name, description: `the ${name} tool`, parameters: { type: 'object', properties: {} }, execute, ...extra }
}

const run = (ctx: Context, name: string, extra: Record<string, unknown> = {}) =>
  ctx.tools.execute({ callId: 'c1', name, arguments: '' }, { cwd: '/work', ...extra })

describe('error results', () => {
  it('a malformed output is TOOL_ERROR naming what is wrong', async () => {
    const ctx = await boot()
    const outputs: Record<string, unknown> = {
      nothing: null,
      number: 7,
      noContent: {},
      badBlock: { content: [{ type: 'text', text: 'ok' }, { type: 'text' }] },
      badImage: { content: [{ type: 'image', data: 'AA' }] },
      nullBlock: { content: [null] },
    }
    for (const [name, output] of Object.entries(outputs)) ctx.tools.register(tool(name, () => output as never))
    const message = async (name: string) => (await run(ctx, name)).error?.message
    expect(await message('nothing')).toBe(
      'tool "nothing" returned an invalid result: expected an object with "content", got null.',
    )
    expect(await message('number')).toBe(
      'tool "number" returned an invalid result: expected an object with "content", got number.',
    )
    expect(await message('noContent')).toBe(
      'tool "noContent" returned an invalid result: "content" must be a string or an array of text/image blocks.',
    )
    expect(await message('badBlock')).toBe(
      'tool "badBlock" returned an invalid result: content[1] is not a text or image block.',
    )
    expect(await message('badImage')).toBe(
      'tool "badImage" returned an invalid result: content[0] is not a text or image block.',
    )
    expect(await message('nullBlock')).toBe(
      'tool "nullBlock" returned an invalid result: content[0] is not a text or image block.',
    )
    expect((await run(ctx, 'nothing')).error?.code).toBe('TOOL_ERROR')
  })

  it('text and image blocks pass, copied into the payload', async () => {
    const ctx = await boot()
    const blocks = [
      { type: 'text' as const, text: 'see' },
      { type: 'image' as const, mediaType: 'image/png', data: 'AAAA' },
    ]
    ctx.tools.register(tool('pic', () => ({ content: blocks })))
    const result = await run(ctx, 'pic')
    expect(result).toEqual({ message: { role: 'tool', callId: 'c1', name: 'pic', content: blocks } })
    expect(result.message.content[0]).not.toBe(blocks[0])
  })

  it("an error result: the tool's own code and message, or TOOL_ERROR with the first 500 characters of its text", async () => {
    const ctx = await boot()
    ctx.tools.register(tool('coded', () => ({ content: 'nope', error: { code: 'E_MINE', message: 'mine' } })))
    ctx.tools.register(
      tool('bare', () => ({
        content: [
          { type: 'text', text: 'x'.repeat(300) },
          { type: 'text', text: 'y'.repeat(300) },
        ],
        isError: true,
      })),
    )
    ctx.tools.register(tool('fine', () => ({ content: 'ok', isError: false, meta: { n: 1 } })))
    expect(await run(ctx, 'coded')).toEqual({
      message: { role: 'tool', callId: 'c1', name: 'coded', content: [{ type: 'text', text: 'nope' }], isError: true },
      error: { code: 'E_MINE', message: 'mine' },
    })
    const bare = await run(ctx, 'bare')
    expect(bare.error).toEqual({ code: 'TOOL_ERROR', message: `${'x'.repeat(300)}\n${'y'.repeat(199)}` })
    expect(bare.message.isError).toBe(true)
    const fine = await run(ctx, 'fine')
    expect(fine).toEqual({
      message: { role: 'tool', callId: 'c1', name: 'fine', content: [{ type: 'text', text: 'ok' }] },
      meta: { n: 1 },
    })
  })

  it('a thrown value that is not an Error is described as well as it can be', async () => {
    const ctx = await boot()
    const circular: Record<string, unknown> = {}
    circular.self = circular
    const thrown: Record<string, unknown> = {
      text: 'plain words',
      object: { why: 'because' },
      nameless: new TypeError(''),
      undef: undefined,
      circular,
    }
    for (const [name, value] of Object.entries(thrown)) {
      ctx.tools.register(
        tool(name, () => {
          throw value
        }),
      )
    }
    const message = async (name: string) => (await run(ctx, name)).error?.message
    expect(await message('text')).toBe('plain words')
    expect(await message('object')).toBe('{"why":"because"}')
    expect(await message('nameless')).toBe('TypeError')
    expect(await message('undef')).toBe('undefined')
    expect(await message('circular')).toBe('[object Object]')
    expect((await run(ctx, 'text')).message.content).toEqual([
      { type: 'text', text: 'Error [TOOL_ERROR]: tool "text" failed: plain words' },
    ])
  })

  it('finalizeContent: its result replaces the output, a throw is TOOL_ERROR, a malformed result is INTERNAL_ERROR', async () => {
    const ctx = await boot()
    const seen: ToolCallContext[] = []
    ctx.tools.register(
      tool('shaped', () => ({ content: 'raw' }), {
        finalizeContent: (output, call) => (seen.push(call), { ...output, content: `${output.content as string}!` }),
      }),
    )
    ctx.tools.register(
      tool('throws', () => ({ content: 'raw' }), {
        finalizeContent: () => {
          throw new Error('cannot shape')
        },
      }),
    )
    ctx.tools.register(tool('breaks', () => ({ content: 'raw' }), { finalizeContent: () => ({ content: 5 }) as never }))
    expect((await run(ctx, 'shaped', { sessionId: 's9' })).message.content).toEqual([{ type: 'text', text: 'raw!' }])
    expect(seen[0]).toMatchObject({ callId: 'c1', name: 'shaped', sessionId: 's9', cwd: '/work' })
    expect((await run(ctx, 'throws')).error).toEqual({ code: 'TOOL_ERROR', message: 'cannot shape' })
    const broken = await run(ctx, 'breaks')
    expect(broken.error).toEqual({
      code: 'INTERNAL_ERROR',
      message: 'result processing: "content" must be a string or an array of text/image blocks',
    })
    expect(broken.message.content).toEqual([
      {
        type: 'text',
        text: 'Error [INTERNAL_ERROR]: the harness failed while handling tool "breaks" (result processing: "content" must be a string or an array of text/image blocks). The tool ran, but its result was lost.',
      },
    ])
  })

  it('a pre-execute failure says the tool did not run; a denial without a code is DENIED', async () => {
    const ctx = await boot()
    ctx.tools.register(tool('t', () => ({ content: 'ran' })))
    const off = ctx.on('tools/pre-execute', async () => {
      throw new Error('listener broke')
    })
    expect((await run(ctx, 't')).message.content).toEqual([
      {
        type: 'text',
        text: 'Error [INTERNAL_ERROR]: the harness failed while handling tool "t" (tools/pre-execute: listener broke). The tool did not run.',
      },
    ])
    off()
    ctx.tools.registerGuard({ name: 'no', check: () => ({ deny: 'not today' }) })
    expect(await run(ctx, 't')).toMatchObject({
      error: { code: 'DENIED', message: 'not today' },
      message: { content: [{ type: 'text', text: 'Error [DENIED]: the call to tool "t" was not run: not today' }] },
    })
  })

  it('a guard answering something without a string deny lets the call run', async () => {
    const ctx = await boot()
    ctx.tools.register(tool('t', () => ({ content: 'ran' })))
    ctx.tools.registerGuard({ name: 'odd', check: () => ({ deny: 42 }) as never })
    ctx.tools.registerGuard({ name: 'empty', check: () => ({}) })
    expect((await run(ctx, 't')).message.content).toEqual([{ type: 'text', text: 'ran' }])
  })

  it('a tools/result listener that throws does not change the result', async () => {
    const ctx = await boot()
    ctx.tools.register(tool('t', () => ({ content: 'ran' })))
    const infos: ToolResultInfo[] = []
    ctx.on('tools/result', (_result, info) => void infos.push(info))
    ctx.on('tools/result', () => {
      throw new Error('observer broke')
    })
    expect((await run(ctx, 't')).message.content).toEqual([{ type: 'text', text: 'ran' }])
    // An unknown tool's result names no tool.
    await run(ctx, 'missing')
    expect(infos.map((info) => info.tool?.name)).toEqual(['t', undefined])
    expect('tool' in infos[1]).toBe(false)
  })
})

describe('cancellation', () => {
  it('names the reason: an AbortError\'s message, another reason described, or "aborted"', async () => {
    const ctx = await boot()
    ctx.tools.register(tool('t', () => ({ content: 'ran' })))
    const cancelled = async (signal: AbortSignal) => (await run(ctx, 't', { signal })).error?.message
    expect(await cancelled(AbortSignal.abort(new DOMException('user hit escape', 'AbortError')))).toBe(
      'user hit escape',
    )
    expect(await cancelled(AbortSignal.abort(new DOMException('', 'AbortError')))).toBe('aborted')
    expect(await cancelled(AbortSignal.abort('turn ended'))).toBe('turn ended')
    expect(await cancelled(AbortSignal.abort(new Error('budget spent')))).toBe('budget spent')
    const controller = new AbortController()
    controller.abort()
    expect(await cancelled(controller.signal)).toBe('This operation was aborted')
    expect((await run(ctx, 't', { signal: AbortSignal.abort('x') })).message.content).toEqual([
      { type: 'text', text: 'Error [CANCELLED]: tool "t" was cancelled before it started (x); it had no effect.' },
    ])
  })

  it("a call aborted while it runs says its effects may be partial; a wrapper's abort without a reason is the platform's", async () => {
    const ctx = await boot()
    let started!: () => void
    const running = new Promise<void>((resolve) => (started = resolve))
    ctx.tools.register(tool('slow', () => (started(), new Promise(() => {}))))
    const controller = new AbortController()
    const result = run(ctx, 'slow', { signal: controller.signal })
    await running
    controller.abort('stop now')
    expect((await result).message.content).toEqual([
      {
        type: 'text',
        text: 'Error [CANCELLED]: tool "slow" was cancelled before it finished (stop now); any effects it had may be partial.',
      },
    ])
    const off = ctx.on('tools/execute', async (payload, next) => {
      const body = next()
      payload.abort()
      return body
    })
    const wrapped = await run(ctx, 'slow')
    expect(wrapped.error).toEqual({ code: 'CANCELLED', message: 'This operation was aborted' })
    off()
  })

  it('a tool that fails after its call was aborted is reported cancelled, not failed', async () => {
    const ctx = await boot()
    const controller = new AbortController()
    ctx.tools.register(
      tool('t', () => {
        controller.abort('gone')
        throw new Error('interrupted write')
      }),
    )
    expect((await run(ctx, 't', { signal: controller.signal })).error).toEqual({ code: 'CANCELLED', message: 'gone' })
  })
})

describe('the per-call context and concurrency', () => {
  it('a tool sees exactly the context fields the caller gave', async () => {
    const ctx = await boot()
    const seen: ToolCallContext[] = []
    ctx.tools.register(tool('t', (_args, call) => (seen.push(call), { content: 'ok' })))
    await ctx.tools.execute(
      { callId: 'c7', name: 't', arguments: '{}' },
      { cwd: '/w', sessionId: 's', agentId: 'a', turn: 0, step: 0, origin: 'model', parentCallId: 'p' },
    )
    await ctx.tools.execute({ callId: 'c8', name: 't', arguments: '{}' }, { cwd: '/w' })
    const { signal: first, ...rest } = seen[0]
    expect(first).toBeInstanceOf(AbortSignal)
    expect(rest).toEqual({
      callId: 'c7',
      name: 't',
      sessionId: 's',
      agentId: 'a',
      cwd: '/w',
      turn: 0,
      step: 0,
      origin: 'model',
      parentCallId: 'p',
    })
    const { signal: _second, ...bare } = seen[1]
    expect(bare).toEqual({ callId: 'c8', name: 't', cwd: '/w' })
  })

  it('a concurrencySafe function that throws or answers non-true makes the call run alone', async () => {
    const ctx = await boot()
    const order: string[] = []
    // The first call yields to the event loop before it ends: a second call running beside it
    // would start in that gap.
    const body = (label: string) => async () => {
      order.push(`start ${label}`)
      if (label === 'first') await new Promise((resolve) => setImmediate(resolve))
      order.push(`end ${label}`)
      return { content: label }
    }
    ctx.tools.register(
      tool('throwing', body('first'), {
        concurrencySafe: () => {
          throw new Error('cannot tell')
        },
      }),
    )
    ctx.tools.register(tool('truthy', body('second'), { concurrencySafe: () => 1 as never }))
    ctx.tools.register(tool('safe', body('third'), { concurrencySafe: () => true }))
    await ctx.tools.executeAll(
      [
        { callId: 'a', name: 'throwing', arguments: '{}' },
        { callId: 'b', name: 'truthy', arguments: '{}' },
      ],
      { cwd: '/' },
    )
    expect(order).toEqual(['start first', 'end first', 'start second', 'end second'])
  })
})

describe('registration refusals', () => {
  it('each bad registration is one TypeError naming what is wrong', async () => {
    const ctx = await boot()
    const register = (def: unknown) => () => ctx.tools.register(def as ToolDefinition)
    expect(register(null)).toThrow(new TypeError('tools.register: expected a tool definition object'))
    expect(register('read')).toThrow('tools.register: expected a tool definition object')
    expect(register({ name: 5, description: '', execute() {} })).toThrow(
      'tools.register: invalid tool name 5 (must match /^[a-zA-Z0-9_-]{1,64}$/)',
    )
    expect(register({ name: 'a'.repeat(65), description: '', execute() {} })).toThrow('invalid tool name')
    expect(register({ name: 'x', description: 1, execute() {} })).toThrow('tool "x": description must be a string')
    expect(register({ name: 'x', description: '', execute: 'no' })).toThrow('tool "x": execute must be a function')
    for (const scope of ['', 3]) {
      expect(register({ name: 'x', description: '', execute() {}, scope, parameters: { type: 'object' } })).toThrow(
        'tool "x": scope must be a non-empty string when given',
      )
    }
    const guard = (value: unknown) => () => ctx.tools.registerGuard(value as never)
    expect(guard(null)).toThrow('tools.registerGuard: expected {name, check}')
    expect(guard({ name: 'g' })).toThrow('tools.registerGuard: expected {name, check}')
    expect(guard({ name: '', check() {} })).toThrow('tools.registerGuard: name must be a non-empty string')
    expect(guard({ name: 7, check() {} })).toThrow('tools.registerGuard: name must be a non-empty string')
    ctx.tools.registerGuard({ name: 'g', check() {} })
    expect(guard({ name: 'g', check() {} })).toThrow('tools.registerGuard: guard "g" is already registered')
    expect(() => ctx.tools.restrict('', () => true)).toThrow('tools.restrict: scope must be a non-empty string')
    expect(() => ctx.tools.restrict('s', 'all' as never)).toThrow('tools.restrict: allow must be a function')
    expect(() => ctx.tools.setPresentAs('s', 'mixed' as never)).toThrow('tools.setPresentAs: invalid mode "mixed"')
  })

  it('a disposed guard stops checking, and only it', async () => {
    const ctx = await boot()
    ctx.tools.register(tool('t', () => ({ content: 'ran' })))
    const offA = ctx.tools.registerGuard({ name: 'a', check: () => ({ deny: 'a says no' }) })
    ctx.tools.registerGuard({ name: 'b', check: () => ({ deny: 'b says no' }) })
    expect((await run(ctx, 't')).error?.message).toBe('a says no')
    offA()
    offA()
    expect((await run(ctx, 't')).error?.message).toBe('b says no')
    // The name is free again.
    ctx.tools.registerGuard({ name: 'a', check: () => undefined })
  })

  it('the unknown-tool answer lists what can be called, or says nothing can', async () => {
    const ctx = await boot()
    expect((await run(ctx, 'ghost')).message.content).toEqual([
      { type: 'text', text: 'Error [UNKNOWN_TOOL]: there is no tool named "ghost". No tools are available here.' },
    ])
    ctx.tools.register(tool('b', () => ({ content: '' })))
    ctx.tools.register(tool('a', () => ({ content: '' })))
    const result: ToolResultPayload = await run(ctx, 'ghost')
    expect(result.message.content).toEqual([
      {
        type: 'text',
        text: 'Error [UNKNOWN_TOOL]: there is no tool named "ghost". Available tools: a, b. Use one of these exact names.',
      },
    ])
    expect(result.error).toEqual({ code: 'UNKNOWN_TOOL', message: 'unknown tool "ghost"' })
  })
})

describe('the pipeline between the stages', () => {
  it('arguments that are not a string count as none; bad JSON and schema problems carry their details', async () => {
    const ctx = await boot()
    const seen: unknown[] = []
    ctx.tools.register(
      tool('t', (args) => (seen.push(args), { content: 'ok' }), {
        parameters: {
          type: 'object',
          properties: { n: { type: 'integer' }, s: { type: 'string' } },
          additionalProperties: false,
        },
      }),
    )
    await ctx.tools.execute({ callId: 'c', name: 't', arguments: { n: 1 } as never }, { cwd: '/' })
    expect(seen).toEqual([{}])
    const badJson = await ctx.tools.execute({ callId: 'c', name: 't', arguments: '{"n":' }, { cwd: '/' })
    expect(badJson.error?.code).toBe('INVALID_JSON')
    expect(badJson.error?.message).toMatch(/^invalid arguments JSON: .+/)
    const invalid = await ctx.tools.execute({ callId: 'c', name: 't', arguments: '{"n":"x","s":2}' }, { cwd: '/' })
    expect(invalid.error).toEqual({ code: 'INVALID_ARGUMENTS', message: '/n: must be integer; /s: must be string' })
    expect((invalid.message.content[0] as { text: string }).text).toContain(
      'schema:\n- /n: must be integer\n- /s: must be string\nFix these',
    )
  })

  it('a guard sees the arguments pre-execute left, and an unscoped guard checks calls of every scope', async () => {
    const ctx = await boot()
    ctx.tools.register(tool('t', () => ({ content: 'ran' })))
    ctx.on('tools/pre-execute', async (payload, next) => {
      payload.args = { rewritten: true }
      return next()
    })
    const checked: unknown[] = []
    ctx.tools.registerGuard({
      name: 'everywhere',
      check: (resolved) => {
        checked.push([resolved.call.callId, resolved.tool.name, resolved.args, resolved.context.scope])
        return resolved.context.scope === 'agent:x' ? { deny: 'not in x' } : undefined
      },
    })
    expect((await run(ctx, 't')).message.content).toEqual([{ type: 'text', text: 'ran' }])
    expect((await run(ctx, 't', { scope: 'agent:x' })).error?.message).toBe('not in x')
    expect(checked).toEqual([
      ['c1', 't', { rewritten: true }, undefined],
      ['c1', 't', { rewritten: true }, 'agent:x'],
    ])
  })

  it('a call whose signal aborts during pre-execute is cancelled before it starts; the tool never runs', async () => {
    const ctx = await boot()
    let ran = 0
    ctx.tools.register(tool('t', () => (ran++, { content: 'ran' })))
    const controller = new AbortController()
    const off = ctx.on('tools/pre-execute', async (_payload, next) => {
      controller.abort('changed my mind')
      return next()
    })
    const result = await run(ctx, 't', { signal: controller.signal })
    expect(result.error).toEqual({ code: 'CANCELLED', message: 'changed my mind' })
    expect((result.message.content[0] as { text: string }).text).toContain('was cancelled before it started')
    expect(ran).toBe(0)
    off()
    // The same from a guard.
    const second = new AbortController()
    ctx.tools.registerGuard({ name: 'aborter', check: () => void second.abort('guard saw enough') })
    expect((await run(ctx, 't', { signal: second.signal })).error).toEqual({
      code: 'CANCELLED',
      message: 'guard saw enough',
    })
    expect(ran).toBe(0)
  })

  it('a wrapper aborting with a reason names it; post-execute failing says the result was lost', async () => {
    const ctx = await boot()
    ctx.tools.register(tool('slow', () => new Promise(() => {})))
    ctx.tools.register(tool('quick', () => ({ content: 'ran' })))
    const offExec = ctx.on('tools/execute', async (payload, next) => {
      if (payload.tool.name !== 'slow') return next()
      const body = next()
      payload.abort('too slow')
      return body
    })
    expect((await run(ctx, 'slow')).error).toEqual({ code: 'CANCELLED', message: 'too slow' })
    offExec()
    ctx.on('tools/post-execute', async () => {
      throw new Error('spill failed')
    })
    const lost = await run(ctx, 'quick')
    expect(lost.error).toEqual({ code: 'INTERNAL_ERROR', message: 'tools/post-execute: spill failed' })
    expect((lost.message.content[0] as { text: string }).text).toMatch(/The tool ran, but its result was lost\.$/)
  })

  it("a scope's own tools stay callable under a restriction that names none of them", async () => {
    const ctx = await boot()
    ctx.tools.register(tool('global', () => ({ content: 'g' })))
    ctx.tools.register({ ...tool('local', () => ({ content: 'l' })), scope: 'agent:r' })
    ctx.tools.restrict('agent:r', () => false)
    expect(ctx.tools.list('agent:r').map((def) => def.name)).toEqual(['local'])
    expect((await run(ctx, 'local', { scope: 'agent:r' })).message.content).toEqual([{ type: 'text', text: 'l' }])
    expect((await run(ctx, 'global', { scope: 'agent:r' })).error?.code).toBe('UNKNOWN_TOOL')
    expect(ctx.tools.presentAs()).toBe('native')
    ctx.tools.setPresentAs('agent:r', 'both')
    expect(ctx.tools.presentAs('agent:r')).toBe('both')
    expect(ctx.tools.presentAs()).toBe('native')
  })
})
