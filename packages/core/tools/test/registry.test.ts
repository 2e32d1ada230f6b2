import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import ToolRegistry, { type ToolDefinition } from '@dsh/tools'

function echo(name: string, extra: Partial<ToolDefinition> = {}): ToolDefinition {
  return {
    name,
    description: `${name} tool`,
    parameters: { type: 'object', properties: { text: { type: 'string' } } },
    execute: (args: { text?: string }) => ({ content: `${name}:${args.text ?? ''}` }),
    ...extra,
  }
}

async function boot(config?: Record<string, unknown>) {
  const ctx = new Context()
  await ctx.plugin(ToolRegistry, config as never)
  return ctx
}

describe('registry', () => {
  it('exposes config defaults and validates config', async () => {
    const ctx = await boot()
    expect(ctx.tools.mode).toBe('native')
    expect(ctx.tools.maxParallel).toBe(8)
    expect(ctx.tools.presentAs('agent:x')).toBe('native')
    const coded = await boot({ mode: 'code', maxParallel: 2 })
    expect(coded.tools.mode).toBe('code')
    expect(coded.tools.presentAs()).toBe('code')

    const bad = new Context()
    await expect(bad.plugin(ToolRegistry, { mode: 'sideways' } as never)).rejects.toThrow(/mode/)
  })

  it('rejects bad names and schemas at registration', async () => {
    const ctx = await boot()
    expect(() => ctx.tools.register(echo('has space'))).toThrow(/invalid tool name/)
    expect(() => ctx.tools.register(echo('x'.repeat(65)))).toThrow(/invalid tool name/)
    expect(() =>
      ctx.tools.register(echo('a', { parameters: { type: 'object', properties: { n: { type: 'strnig' } } } })),
    ).toThrow(/tool "a": parameters are not a valid JSON Schema/)
    expect(() => ctx.tools.register(echo('b', { parameters: { type: 'string' } }))).toThrow(/type "object"/)
    expect(ctx.tools.list()).toEqual([])
  })

  it('throws on a duplicate name in the same scope; a scoped tool shadows a global one', async () => {
    const ctx = await boot()
    ctx.tools.register(echo('read'))
    expect(() => ctx.tools.register(echo('read'))).toThrow(/already registered/)
    const scoped = echo('read', { scope: 'agent:a', description: 'scoped read' })
    ctx.tools.register(scoped)
    expect(() => ctx.tools.register(echo('read', { scope: 'agent:a' }))).toThrow(
      /already registered in scope "agent:a"/,
    )
    expect(ctx.tools.get('read')?.description).toBe('read tool')
    expect(ctx.tools.get('read', 'agent:a')?.description).toBe('scoped read')
    expect(ctx.tools.get('read', 'agent:b')?.description).toBe('read tool')
    ctx.tools.register(echo('only_a', { scope: 'agent:a' }))
    expect(ctx.tools.list().map((t) => t.name)).toEqual(['read'])
    expect(ctx.tools.list('agent:a').map((t) => t.name)).toEqual(['only_a', 'read'])
  })

  it('returns schemas sorted by name', async () => {
    const ctx = await boot()
    for (const name of ['zeta', 'alpha', 'Mid', 'beta_2']) ctx.tools.register(echo(name))
    const schemas = ctx.tools.schemas()
    expect(schemas.map((s) => s.name)).toEqual(['Mid', 'alpha', 'beta_2', 'zeta'])
    expect(schemas[1]).toEqual({ name: 'alpha', description: 'alpha tool', parameters: echo('alpha').parameters })
  })

  it('the disposer removes the tool, and calling it twice is harmless', async () => {
    const ctx = await boot()
    const dispose = ctx.tools.register(echo('tmp'))
    expect(ctx.tools.get('tmp')).toBeDefined()
    dispose()
    dispose()
    expect(ctx.tools.get('tmp')).toBeUndefined()
    ctx.tools.register(echo('tmp'))
    expect(ctx.tools.get('tmp')).toBeDefined()
  })

  it('unloading the registering plugin unwinds its tools, guards and presentation overrides', async () => {
    const ctx = await boot()
    ctx.tools.register(echo('kept'))
    const fiber = ctx.plugin({
      name: 'contrib',
      inject: ['tools'],
      apply(c: Context) {
        c.tools.register(echo('one'))
        c.tools.register(echo('one', { scope: 'agent:a' }))
        c.tools.registerGuard({
          name: 'no-kept',
          check: (call) => (call.tool.name === 'kept' ? { deny: 'blocked' } : undefined),
        })
        c.tools.setPresentAs('agent:a', 'both')
      },
    })
    await fiber
    expect(ctx.tools.list('agent:a').map((t) => t.name)).toEqual(['kept', 'one'])
    expect(ctx.tools.presentAs('agent:a')).toBe('both')
    expect((await ctx.tools.execute({ callId: 'c1', name: 'kept', arguments: '{}' }, { cwd: '/' })).error?.code).toBe(
      'DENIED',
    )

    await fiber.dispose()
    expect(ctx.tools.list('agent:a').map((t) => t.name)).toEqual(['kept'])
    expect(ctx.tools.presentAs('agent:a')).toBe('native')
    const after = await ctx.tools.execute({ callId: 'c2', name: 'kept', arguments: '{}' }, { cwd: '/' })
    expect(after.error).toBeUndefined()
    expect(after.message.content).toEqual([{ type: 'text', text: 'kept:' }])
  })

  it('a call prepared before its tool was unloaded answers UNKNOWN_TOOL instead of running it', async () => {
    const ctx = await boot()
    let ran = false
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    ctx.tools.register({ ...echo('first'), execute: async () => (await gate, { content: 'first done' }) })
    const dispose = ctx.tools.register({ ...echo('second'), execute: () => ((ran = true), { content: 'second' }) })
    const pending = ctx.tools.executeAll(
      [
        { callId: '1', name: 'first', arguments: '' },
        { callId: '2', name: 'second', arguments: '' },
      ],
      { cwd: '/' },
    )
    dispose()
    release()
    const [, second] = await pending
    expect(ran).toBe(false)
    expect(second.error?.code).toBe('UNKNOWN_TOOL')
  })
})

describe('presentation modes (Code Mode)', () => {
  const entry = () => echo('run_code', { codeEntry: true })
  const text = (r: { message: { content: Array<{ type: string; text?: string }> } }) =>
    r.message.content.map((b) => b.text ?? '').join('')

  it('native hides the entry tool; code presents only it; both presents all', async () => {
    const ctx = await boot()
    ctx.tools.register(echo('read'))
    ctx.tools.register(entry())
    expect(ctx.tools.schemas().map((s) => s.name)).toEqual(['read'])
    ctx.tools.setPresentAs('agent:c', 'code')
    ctx.tools.setPresentAs('agent:b', 'both')
    expect(ctx.tools.schemas('agent:c').map((s) => s.name)).toEqual(['run_code'])
    expect(ctx.tools.schemas('agent:b').map((s) => s.name)).toEqual(['read', 'run_code'])
    // list() and programTools() ignore the mode: they are what a program can reach.
    expect(ctx.tools.list('agent:c').map((t) => t.name)).toEqual(['read', 'run_code'])
    expect(ctx.tools.programTools('agent:c').map((t) => t.name)).toEqual(['read'])
  })

  it('in code mode a direct model call to another tool is unknown; a program call resolves it; a program cannot call the entry tool', async () => {
    const ctx = await boot({ mode: 'code' })
    ctx.tools.register(echo('read'))
    ctx.tools.register(entry())
    const direct = await ctx.tools.execute({ callId: 'c1', name: 'read', arguments: '{"text":"x"}' }, { cwd: '/' })
    expect(direct.error?.code).toBe('UNKNOWN_TOOL')
    expect(text(direct)).toContain('Available tools: run_code.')
    let seen: unknown
    ctx.on('tools/pre-execute', (payload, next) => {
      seen = { origin: payload.context.origin, parent: payload.context.parentCallId }
      return next()
    })
    const nested = await ctx.tools.execute(
      { callId: 'c1.1', name: 'read', arguments: '{"text":"x"}' },
      { cwd: '/', origin: 'code', parentCallId: 'c1' },
    )
    expect(nested.error).toBeUndefined()
    expect(text(nested)).toBe('read:x')
    expect(seen).toEqual({ origin: 'code', parent: 'c1' })
    const recursive = await ctx.tools.execute(
      { callId: 'c1.2', name: 'run_code', arguments: '{}' },
      { cwd: '/', origin: 'code' },
    )
    expect(recursive.error?.code).toBe('UNKNOWN_TOOL')
    expect(text(recursive)).toContain('Available tools: read.')
    expect(
      (await ctx.tools.execute({ callId: 'c2', name: 'run_code', arguments: '{}' }, { cwd: '/' })).error,
    ).toBeUndefined()
  })

  it('in native mode the entry tool is unknown to the model', async () => {
    const ctx = await boot()
    ctx.tools.register(echo('read'))
    ctx.tools.register(entry())
    const result = await ctx.tools.execute({ callId: 'c1', name: 'run_code', arguments: '{}' }, { cwd: '/' })
    expect(result.error?.code).toBe('UNKNOWN_TOOL')
    expect(text(result)).toContain('Available tools: read.')
  })
})
