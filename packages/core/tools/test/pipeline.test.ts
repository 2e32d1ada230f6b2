import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import ToolRegistry, { type ToolDefinition, type ToolResultInfo, type ToolResultPayload } from '@dsh/tools'

const ctxOf = { cwd: '/work', sessionId: 's1', agentId: 'a1', turn: 1, step: 2 }

async function boot(config?: Record<string, unknown>) {
  const ctx = new Context()
  await ctx.plugin(ToolRegistry, config as never)
  return ctx
}

function tool(name: string, execute: ToolDefinition['execute'], extra: Partial<ToolDefinition> = {}): ToolDefinition {
  return {
    name,
    description: name,
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, count: { type: 'integer', minimum: 0 } },
      additionalProperties: false,
    },
    execute,
    ...extra,
  }
}

function text(result: ToolResultPayload): string {
  return result.message.content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('')
}

/** A promise plus its resolver, for ordering tests without timers. */
function deferred<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

describe('pipeline', () => {
  it('runs the stages in order and returns a tool/result payload', async () => {
    const ctx = await boot()
    const stages: string[] = []
    const results: Array<[ToolResultPayload, ToolResultInfo]> = []
    ctx.tools.register(
      tool(
        'read',
        (args: { path: string }, call) => {
          stages.push(`execute:${args.path}:${call.cwd}:${call.sessionId}:${call.turn}/${call.step}`)
          return { content: `contents of ${args.path}`, meta: { bytes: 3 } }
        },
        {
          finalizeContent: (output) => {
            stages.push('finalize')
            return { ...output, content: `${output.content as string} (final)` }
          },
        },
      ),
    )
    ctx.on('tools/pre-execute', async (_p, next) => {
      stages.push('pre')
      return next()
    })
    ctx.tools.registerGuard({ name: 'g', check: () => void stages.push('guard') })
    ctx.on('tools/execute', async (_p, next) => {
      stages.push('execute:before')
      const output = await next()
      stages.push('execute:after')
      return output
    })
    ctx.on('tools/post-execute', async (p, next) => {
      stages.push(`post:${p.output.content as string}`)
      return next()
    })
    ctx.on('tools/result', (result, info) => {
      stages.push('result')
      results.push([result, info])
    })
    const result = await ctx.tools.execute({ callId: 'c1', name: 'read', arguments: '{"path":"a.txt"}' }, ctxOf)
    expect(stages).toEqual([
      'pre',
      'guard',
      'execute:before',
      'execute:a.txt:/work:s1:1/2',
      'execute:after',
      'post:contents of a.txt',
      'finalize',
      'result',
    ])
    expect(result).toEqual({
      message: {
        role: 'tool',
        callId: 'c1',
        name: 'read',
        content: [{ type: 'text', text: 'contents of a.txt (final)' }],
      },
      meta: { bytes: 3 },
    })
    expect(results[0][0]).toBe(result)
    expect(results[0][1].tool?.name).toBe('read')
    // The payload is plain JSON.
    expect(JSON.parse(JSON.stringify(result))).toEqual(result)
  })

  it('an empty arguments string counts as {}', async () => {
    const ctx = await boot()
    ctx.tools.register(tool('noop', (args) => ({ content: JSON.stringify(args) })))
    expect(text(await ctx.tools.execute({ callId: 'c', name: 'noop', arguments: '' }, ctxOf))).toBe('{}')
    expect(text(await ctx.tools.execute({ callId: 'c', name: 'noop', arguments: '  ' }, ctxOf))).toBe('{}')
  })

  it('malformed JSON becomes INVALID_JSON without running anything', async () => {
    const ctx = await boot()
    let touched = false
    ctx.tools.register(tool('read', () => ((touched = true), { content: 'x' })))
    ctx.on('tools/pre-execute', async (_p, next) => ((touched = true), next()))
    const seen: string[] = []
    ctx.on('tools/result', (r) => seen.push(r.error!.code))
    const result = await ctx.tools.execute({ callId: 'c', name: 'read', arguments: '{"path": "a.txt"' }, ctxOf)
    expect(touched).toBe(false)
    expect(result.message.isError).toBe(true)
    expect(result.error?.code).toBe('INVALID_JSON')
    expect(text(result)).toMatch(
      /^Error \[INVALID_JSON\]: the arguments for tool "read" are not valid JSON \(.+\)\. Call the tool again/,
    )
    expect(seen).toEqual(['INVALID_JSON'])
  })

  it('an unknown tool lists the available names', async () => {
    const ctx = await boot()
    ctx.tools.register(tool('write', () => ({ content: '' })))
    ctx.tools.register(tool('read', () => ({ content: '' })))
    ctx.tools.register(tool('secret', () => ({ content: '' }), { scope: 'agent:other' }))
    const result = await ctx.tools.execute({ callId: 'c', name: 'reed', arguments: '{}' }, ctxOf)
    expect(result.error).toEqual({ code: 'UNKNOWN_TOOL', message: 'unknown tool "reed"' })
    expect(text(result)).toBe(
      'Error [UNKNOWN_TOOL]: there is no tool named "reed". Available tools: read, write. Use one of these exact names.',
    )
    expect(result.message.name).toBe('reed')

    const empty = await boot()
    expect(text(await empty.tools.execute({ callId: 'c', name: 'x', arguments: '' }, ctxOf))).toContain(
      'No tools are available here.',
    )
  })

  it('schema-invalid arguments become INVALID_ARGUMENTS with path and message', async () => {
    const ctx = await boot()
    let ran = false
    ctx.tools.register(
      tool('read', () => ((ran = true), { content: '' }), {
        parameters: {
          type: 'object',
          properties: { path: { type: 'string' }, count: { type: 'integer', minimum: 0 }, mode: { enum: ['a', 'b'] } },
          required: ['path'],
          additionalProperties: false,
        },
      }),
    )
    const result = await ctx.tools.execute(
      { callId: 'c', name: 'read', arguments: '{"count": -1, "mode": "c", "extra": 1}' },
      ctxOf,
    )
    expect(ran).toBe(false)
    expect(result.error?.code).toBe('INVALID_ARGUMENTS')
    const body = text(result)
    expect(body).toMatch(
      /^Error \[INVALID_ARGUMENTS\]: the arguments for tool "read" do not match its parameters schema:/,
    )
    expect(body).toContain('- (root): missing required property "path"')
    expect(body).toContain('- (root): unexpected property "extra"')
    expect(body).toContain('- /count: must be >= 0')
    expect(body).toContain('- /mode: must be one of ["a","b"]')
    expect(body).toMatch(/Fix these and call the tool again\.$/)

    const notObject = await ctx.tools.execute({ callId: 'c', name: 'read', arguments: '[1,2]' }, ctxOf)
    expect(notObject.error?.code).toBe('INVALID_ARGUMENTS')
    expect(text(notObject)).toContain('(root): must be object')
  })

  it('a tool that throws becomes TOOL_ERROR and post-execute still sees it', async () => {
    const ctx = await boot()
    ctx.tools.register(
      tool('boom', () => {
        throw new Error('disk on fire')
      }),
    )
    ctx.tools.register(tool('reject', async () => Promise.reject(new Error('async fire'))))
    ctx.tools.register(tool('garbage', () => 42 as never))
    const post: string[] = []
    ctx.on('tools/post-execute', async (p, next) => (post.push(p.output.error!.code), next()))
    const result = await ctx.tools.execute({ callId: 'c', name: 'boom', arguments: '{}' }, ctxOf)
    expect(result.message.isError).toBe(true)
    expect(result.error).toEqual({ code: 'TOOL_ERROR', message: 'disk on fire' })
    expect(text(result)).toBe('Error [TOOL_ERROR]: tool "boom" failed: disk on fire')
    expect((await ctx.tools.execute({ callId: 'c', name: 'reject', arguments: '{}' }, ctxOf)).error?.message).toBe(
      'async fire',
    )
    const garbage = await ctx.tools.execute({ callId: 'c', name: 'garbage', arguments: '{}' }, ctxOf)
    expect(garbage.error?.code).toBe('TOOL_ERROR')
    expect(text(garbage)).toContain('returned an invalid result')
    expect(post).toEqual(['TOOL_ERROR', 'TOOL_ERROR', 'TOOL_ERROR'])
  })

  it('a tool-reported error keeps its code; bare isError defaults to TOOL_ERROR', async () => {
    const ctx = await boot()
    ctx.tools.register(
      tool('coded', () => ({ content: 'no such file', error: { code: 'ENOENT', message: 'no such file' } })),
    )
    ctx.tools.register(tool('bare', () => ({ content: [{ type: 'text', text: 'bad' }], isError: true })))
    const coded = await ctx.tools.execute({ callId: 'c', name: 'coded', arguments: '{}' }, ctxOf)
    expect(coded.message.isError).toBe(true)
    expect(coded.error).toEqual({ code: 'ENOENT', message: 'no such file' })
    expect((await ctx.tools.execute({ callId: 'c', name: 'bare', arguments: '{}' }, ctxOf)).error).toEqual({
      code: 'TOOL_ERROR',
      message: 'bad',
    })
  })

  it('tools/pre-execute denies by setting decision; later stages do not run', async () => {
    const ctx = await boot()
    const stages: string[] = []
    ctx.tools.register(tool('rm', () => (stages.push('execute'), { content: '' })))
    ctx.on('tools/pre-execute', async (p, next) => {
      if (p.tool.name === 'rm') {
        p.decision = { deny: 'deleting files is disabled in this profile', code: 'POLICY' }
        return
      }
      return next()
    })
    ctx.on('tools/pre-execute', async (_p, next) => (stages.push('later-pre'), next()))
    ctx.tools.registerGuard({ name: 'g', check: () => void stages.push('guard') })
    const result = await ctx.tools.execute({ callId: 'c', name: 'rm', arguments: '{}' }, ctxOf)
    expect(stages).toEqual([])
    expect(result.error).toEqual({ code: 'POLICY', message: 'deleting files is disabled in this profile' })
    expect(text(result)).toBe(
      'Error [POLICY]: the call to tool "rm" was not run: deleting files is disabled in this profile',
    )
  })

  it('an outer pre-execute listener can overturn an inner denial and rewrite arguments', async () => {
    const ctx = await boot()
    ctx.tools.register(tool('read', (args: { path: string }) => ({ content: args.path })))
    ctx.on('tools/pre-execute', async (p, _next) => {
      p.decision = { deny: 'needs approval' }
    })
    ctx.on(
      'tools/pre-execute',
      async (p, next) => {
        await next()
        if (p.decision?.deny === 'needs approval') p.decision = undefined
        ;(p.args as { path: string }).path = '/abs/' + (p.args as { path: string }).path
      },
      { prepend: true },
    )
    const result = await ctx.tools.execute({ callId: 'c', name: 'read', arguments: '{"path":"x"}' }, ctxOf)
    expect(text(result)).toBe('/abs/x')
  })

  it('guards run in registration order and the first denial wins', async () => {
    const ctx = await boot()
    const order: string[] = []
    let ran = false
    ctx.tools.register(tool('bash', () => ((ran = true), { content: '' })))
    ctx.tools.registerGuard({ name: 'one', check: () => void order.push('one') })
    ctx.tools.registerGuard({ name: 'two', check: async () => (order.push('two'), { deny: 'shell is off' }) })
    ctx.tools.registerGuard({ name: 'three', check: () => (order.push('three'), { deny: 'never reached' }) })
    expect(() => ctx.tools.registerGuard({ name: 'two', check: () => {} })).toThrow(/already registered/)
    const result = await ctx.tools.execute({ callId: 'c', name: 'bash', arguments: '{}' }, ctxOf)
    expect(order).toEqual(['one', 'two'])
    expect(ran).toBe(false)
    expect(result.error).toEqual({ code: 'DENIED', message: 'shell is off' })
  })

  it('a guard that throws denies (fail closed); a scoped guard only checks its scope', async () => {
    const ctx = await boot()
    ctx.tools.register(tool('t', () => ({ content: 'ran' })))
    const dispose = ctx.tools.registerGuard({
      name: 'broken',
      check: () => {
        throw new Error('bug')
      },
    })
    const result = await ctx.tools.execute({ callId: 'c', name: 't', arguments: '{}' }, ctxOf)
    expect(result.error?.code).toBe('DENIED')
    expect(text(result)).toContain('guard "broken" failed (bug)')
    dispose()
    ctx.tools.registerGuard({ name: 'child-only', scope: 'agent:child', check: () => ({ deny: 'not for children' }) })
    expect(text(await ctx.tools.execute({ callId: 'c', name: 't', arguments: '{}' }, ctxOf))).toBe('ran')
    expect(
      (await ctx.tools.execute({ callId: 'c', name: 't', arguments: '{}' }, { ...ctxOf, scope: 'agent:child' })).error
        ?.code,
    ).toBe('DENIED')
  })

  it('tools/post-execute may replace the output', async () => {
    const ctx = await boot()
    ctx.tools.register(tool('big', () => ({ content: 'x'.repeat(1000) })))
    ctx.on('tools/post-execute', async (p, next) => {
      p.output = { content: `(spilled ${(p.output.content as string).length} chars)`, meta: { spilled: true } }
      return next()
    })
    const result = await ctx.tools.execute({ callId: 'c', name: 'big', arguments: '{}' }, ctxOf)
    expect(text(result)).toBe('(spilled 1000 chars)')
    expect(result.meta).toEqual({ spilled: true })
  })

  it('a throwing pipeline listener becomes INTERNAL_ERROR, not an exception', async () => {
    const ctx = await boot()
    ctx.tools.register(tool('t', () => ({ content: 'ran' })))
    const off = ctx.on('tools/post-execute', async () => {
      throw new Error('listener bug')
    })
    const result = await ctx.tools.execute({ callId: 'c', name: 't', arguments: '{}' }, ctxOf)
    expect(result.error?.code).toBe('INTERNAL_ERROR')
    expect(text(result)).toContain('The tool ran, but its result was lost.')
    off()
    ctx.on('tools/result', () => {
      throw new Error('observer bug')
    })
    expect(text(await ctx.tools.execute({ callId: 'c', name: 't', arguments: '{}' }, ctxOf))).toBe('ran')
  })

  it('tools/execute wraps dispatch: a wrapper can abort the call (timeout plugin shape)', async () => {
    const ctx = await boot()
    const started = deferred()
    let sawAbort = false
    ctx.tools.register(
      tool(
        'slow',
        (_args, call) =>
          new Promise(() => {
            started.resolve()
            call.signal.addEventListener('abort', () => {
              sawAbort = true
            })
          }),
        { timeoutMs: 5 },
      ),
    )
    ctx.on('tools/execute', async (p, next) => {
      const output = next()
      await started.promise
      p.abort(`exceeded its ${p.tool.timeoutMs} ms budget`)
      return output
    })
    const result = await ctx.tools.execute({ callId: 'c', name: 'slow', arguments: '{}' }, ctxOf)
    expect(sawAbort).toBe(true)
    expect(result.error).toEqual({ code: 'CANCELLED', message: 'exceeded its 5 ms budget' })
  })

  it('aborting the caller signal cancels a running tool, even one that ignores the signal', async () => {
    const ctx = await boot()
    const started = deferred()
    ctx.tools.register(tool('hang', () => (started.resolve(), new Promise(() => {}))))
    const controller = new AbortController()
    const pending = ctx.tools.execute(
      { callId: 'c', name: 'hang', arguments: '{}' },
      { ...ctxOf, signal: controller.signal },
    )
    await started.promise
    controller.abort()
    const result = await pending
    expect(result.error?.code).toBe('CANCELLED')
    expect(text(result)).toMatch(/^Error \[CANCELLED\]: tool "hang" was cancelled before it finished/)
  })

  it('an already-aborted signal answers CANCELLED for every call without running any', async () => {
    const ctx = await boot()
    let runs = 0
    ctx.tools.register(tool('t', () => (runs++, { content: '' })))
    const controller = new AbortController()
    controller.abort(new Error('user pressed Esc'))
    const results = await ctx.tools.executeAll(
      [
        { callId: '1', name: 't', arguments: '{}' },
        { callId: '2', name: 't', arguments: '{}' },
      ],
      { ...ctxOf, signal: controller.signal },
    )
    expect(runs).toBe(0)
    expect(results.map((r) => r.error?.code)).toEqual(['CANCELLED', 'CANCELLED'])
    expect(text(results[0])).toBe(
      'Error [CANCELLED]: tool "t" was cancelled before it started (user pressed Esc); it had no effect.',
    )
  })
})

describe('executeAll', () => {
  it('delivers results to onResult in call order, each as soon as the earlier calls are done', async () => {
    const ctx = await boot()
    const releaseSlow = deferred()
    const delivered: string[] = []
    ctx.tools.register(
      tool('slow', async () => (await releaseSlow.promise, { content: 'slow' }), { concurrencySafe: true }),
    )
    ctx.tools.register(tool('fast', async () => ({ content: 'fast' }), { concurrencySafe: true }))
    const done = ctx.tools.executeAll(
      [
        { callId: '1', name: 'slow', arguments: '{}' },
        { callId: '2', name: 'fast', arguments: '{}' },
      ],
      ctxOf,
      (result, index) => delivered.push(`${index}:${text(result)}`),
    )
    for (let i = 0; i < 20; i++) await Promise.resolve()
    expect(delivered).toEqual([]) // the fast call finished first but waits for the slow one
    releaseSlow.resolve()
    await done
    expect(delivered).toEqual(['0:slow', '1:fast'])
  })

  it('runs consecutive concurrency-safe calls in parallel (each waits for the other to start)', async () => {
    const ctx = await boot()
    const aStarted = deferred()
    const bStarted = deferred()
    ctx.tools.register(
      tool('a', async () => (aStarted.resolve(), await bStarted.promise, { content: 'a' }), { concurrencySafe: true }),
    )
    ctx.tools.register(
      tool('b', async () => (bStarted.resolve(), await aStarted.promise, { content: 'b' }), {
        concurrencySafe: () => true,
      }),
    )
    const results = await ctx.tools.executeAll(
      [
        { callId: '1', name: 'a', arguments: '{}' },
        { callId: '2', name: 'b', arguments: '{}' },
      ],
      ctxOf,
    )
    expect(results.map(text)).toEqual(['a', 'b'])
    expect(results.map((r) => r.message.callId)).toEqual(['1', '2'])
  })

  it('runs unsafe calls alone and in order, with results in call order', async () => {
    const ctx = await boot()
    const log: string[] = []
    let active = 0
    let maxActive = 0
    const body = (name: string) => async (args: { path?: string }) => {
      active++
      maxActive = Math.max(maxActive, active)
      log.push(`start:${name}:${args.path}`)
      // Yield several times so any overlap would show up in `maxActive`.
      for (let i = 0; i < 5; i++) await Promise.resolve()
      log.push(`end:${name}:${args.path}`)
      active--
      return { content: `${name}:${args.path}` }
    }
    ctx.tools.register(tool('write', body('write')))
    ctx.tools.register(
      tool('read', body('read'), { concurrencySafe: (args: { path?: string }) => args.path !== 'unsafe' }),
    )
    const calls = [
      { callId: '1', name: 'write', arguments: '{"path":"1"}' },
      { callId: '2', name: 'read', arguments: '{"path":"unsafe"}' },
      { callId: '3', name: 'write', arguments: '{"path":"3"}' },
    ]
    const results = await ctx.tools.executeAll(calls, ctxOf)
    expect(maxActive).toBe(1)
    expect(log).toEqual([
      'start:write:1',
      'end:write:1',
      'start:read:unsafe',
      'end:read:unsafe',
      'start:write:3',
      'end:write:3',
    ])
    expect(results.map(text)).toEqual(['write:1', 'read:unsafe', 'write:3'])
  })

  it('a safe run waits for the unsafe call before it, and maxParallel bounds the run', async () => {
    const ctx = await boot({ maxParallel: 2 })
    const log: string[] = []
    let active = 0
    let maxActive = 0
    ctx.tools.register(tool('write', async () => (log.push('write'), { content: 'w' })))
    ctx.tools.register(
      tool(
        'read',
        async (args: { path: string }) => {
          active++
          maxActive = Math.max(maxActive, active)
          log.push(`read:${args.path}`)
          for (let i = 0; i < 5; i++) await Promise.resolve()
          active--
          return { content: args.path }
        },
        { concurrencySafe: true },
      ),
    )
    const results = await ctx.tools.executeAll(
      [
        { callId: '0', name: 'write', arguments: '' },
        ...['a', 'b', 'c', 'd'].map((p, i) => ({
          callId: String(i + 1),
          name: 'read',
          arguments: JSON.stringify({ path: p }),
        })),
        { callId: '9', name: 'nope', arguments: '' },
      ],
      ctxOf,
    )
    expect(log[0]).toBe('write')
    expect(maxActive).toBe(2)
    expect(results.map(text).slice(0, 5)).toEqual(['w', 'a', 'b', 'c', 'd'])
    expect(results[5].error?.code).toBe('UNKNOWN_TOOL')
  })

  it('a failing call does not stop the others', async () => {
    const ctx = await boot()
    ctx.tools.register(tool('ok', () => ({ content: 'ok' }), { concurrencySafe: true }))
    ctx.tools.register(
      tool(
        'bad',
        () => {
          throw new Error('nope')
        },
        { concurrencySafe: true },
      ),
    )
    const results = await ctx.tools.executeAll(
      [
        { callId: '1', name: 'ok', arguments: '{' },
        { callId: '2', name: 'bad', arguments: '{}' },
        { callId: '3', name: 'ok', arguments: '{}' },
      ],
      ctxOf,
    )
    expect(results.map((r) => r.error?.code ?? 'ok')).toEqual(['INVALID_JSON', 'TOOL_ERROR', 'ok'])
  })
})

describe('event dispatch', () => {
  it('dispatches the call stages through the events service, not the ctx.waterfall/ctx.emit accessors, to the same listeners', async () => {
    const ctx = await boot()
    const props = (
      ctx.reflect as unknown as { props: Record<string, { get: (this: Context, ...rest: unknown[]) => unknown }> }
    ).props
    let accessorReads = 0
    for (const name of ['waterfall', 'emit']) {
      const get = props[name].get
      props[name].get = function (this: Context, ...rest: unknown[]) {
        accessorReads++
        return get.apply(this, rest)
      }
    }
    ctx.tools.register(tool('t', async () => ({ content: 'body' })))
    const seen: string[] = []
    // Registered after the counter: these reads are the test's own, counted before the call.
    ctx.on('tools/pre-execute', (_payload, next) => (seen.push('pre'), next()))
    ctx.on('tools/execute', async (_payload, next) => (seen.push('execute'), next()))
    ctx.on('tools/post-execute', (_payload, next) => (seen.push('post'), next()))
    ctx.on('tools/result', () => void seen.push('result'))
    accessorReads = 0
    const result = await ctx.tools.execute({ callId: 'c1', name: 't', arguments: '{}' }, ctxOf)
    expect(text(result)).toBe('body')
    expect(seen).toEqual(['pre', 'execute', 'post', 'result'])
    expect(accessorReads).toBe(0)
  })
})
