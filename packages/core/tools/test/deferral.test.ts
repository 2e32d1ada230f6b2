// The registry's side of deferred tool schemas: what `schemas(scope)` sends under a deferral
// policy, and that a deferred tool stays callable.
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import ToolRegistry, { type ToolDefinition, type ToolDeferral } from '@dsh/tools'

function tool(name: string, extra: Partial<ToolDefinition> = {}): ToolDefinition {
  return {
    name,
    description: `Does ${name}. More words the model only needs once it calls it.`,
    parameters: { type: 'object', properties: { n: { type: 'integer' } }, additionalProperties: false },
    execute: (args: { n?: number }) => ({ content: `${name}:${args.n ?? 0}` }),
    ...extra,
  }
}

async function boot() {
  const ctx = new Context()
  await ctx.plugin(ToolRegistry)
  for (const name of ['bash', 'rare_a', 'rare_b', 'load_tools']) ctx.tools.register(tool(name))
  const loaded = new Set<string>()
  const calls: string[] = []
  const policy: ToolDeferral = {
    loader: 'load_tools',
    deferred: (def) => def.name.startsWith('rare_') && !loaded.has(def.name),
    calledDeferred: (def) => {
      calls.push(def.name)
      loaded.add(def.name)
    },
  }
  const undo = ctx.tools.setDeferral(policy)
  return { ctx, loaded, calls, undo }
}

const names = (schemas: { name: string }[]) => schemas.map((s) => s.name)

describe('deferred tool schemas', () => {
  it('an agent scope gets the loader with one line per deferred tool, not their schemas', async () => {
    const { ctx, loaded } = await boot()
    const schemas = ctx.tools.schemas('agent:a')
    expect(names(schemas)).toEqual(['bash', 'load_tools'])
    const loader = schemas.find((s) => s.name === 'load_tools')
    expect(loader?.description).toBe(
      'Does load_tools. More words the model only needs once it calls it.\n- rare_a: Does rare_a.\n- rare_b: Does rare_b.',
    )
    expect(names(ctx.tools.deferred('agent:a').map((d) => ({ name: d.name })))).toEqual(['rare_a', 'rare_b'])
    loaded.add('rare_a')
    expect(names(ctx.tools.schemas('agent:a'))).toEqual(['bash', 'load_tools', 'rare_a'])
    loaded.add('rare_b')
    // Nothing left to load: the loader itself is not sent.
    expect(names(ctx.tools.schemas('agent:a'))).toEqual(['bash', 'rare_a', 'rare_b'])
  })

  it('a scope-less listing (no agent) and a removed policy send every tool in full, without the loader', async () => {
    const { ctx, undo } = await boot()
    expect(names(ctx.tools.schemas())).toEqual(['bash', 'rare_a', 'rare_b'])
    expect(ctx.tools.deferred()).toEqual([])
    undo()
    expect(names(ctx.tools.schemas('agent:a'))).toEqual(['bash', 'load_tools', 'rare_a', 'rare_b'])
    expect(ctx.tools.deferred('agent:a')).toEqual([])
  })

  it('never defers a scope-own tool, a Code Mode entry tool, or anything when the loader is hidden', async () => {
    const { ctx } = await boot()
    ctx.tools.register(tool('rare_own', { scope: 'agent:a' }))
    ctx.tools.register(tool('rare_entry', { codeEntry: true }))
    ctx.tools.setPresentAs('agent:a', 'both')
    expect(names(ctx.tools.schemas('agent:a'))).toEqual(['bash', 'load_tools', 'rare_entry', 'rare_own'])
    ctx.tools.restrict('agent:b', (name) => name !== 'load_tools')
    expect(names(ctx.tools.schemas('agent:b'))).toEqual(['bash', 'rare_a', 'rare_b'])
  })

  it('a deferred tool called directly runs, and the policy hears of it', async () => {
    const { ctx, calls } = await boot()
    const result = await ctx.tools.execute(
      { callId: 'c1', name: 'rare_a', arguments: '{"n":2}' },
      { cwd: '/', scope: 'agent:a' },
    )
    expect(result.message.content).toEqual([{ type: 'text', text: 'rare_a:2' }])
    expect(calls).toEqual(['rare_a'])
    expect(names(ctx.tools.schemas('agent:a'))).toContain('rare_a')
    // Bad arguments: the usual error, and the model is told the schema is now in its list.
    const bad = await ctx.tools.execute(
      { callId: 'c2', name: 'rare_b', arguments: '{"n":"x"}' },
      { cwd: '/', scope: 'agent:a' },
    )
    expect(bad.error?.code).toBe('INVALID_ARGUMENTS')
    expect(JSON.stringify(bad.message.content)).toContain('Its full schema is now in your tool list.')
    // A call from a Code Mode program does not load anything.
    ctx.tools.register(tool('rare_c'))
    await ctx.tools.execute(
      { callId: 'c3', name: 'rare_c', arguments: '{}' },
      { cwd: '/', scope: 'agent:a', origin: 'code' },
    )
    expect(calls).toEqual(['rare_a', 'rare_b'])
  })

  it('summaries: the first sentence, cut at a colon when long; an explicit summary wins', async () => {
    const { ctx } = await boot()
    expect(ctx.tools.summary({ description: 'Read the goal: its id, status and more. Then other text.' })).toBe(
      'Read the goal: its id, status and more.',
    )
    const long = `Fetch a page by URL and return its text: ${'HTML becomes Markdown, '.repeat(6)}done.`
    expect(ctx.tools.summary({ description: long })).toBe('Fetch a page by URL and return its text')
    expect(ctx.tools.summary({ description: 'Line one\nline two' })).toBe('Line one')
    expect(ctx.tools.summary({ description: 'Anything.', summary: ' Given. ' })).toBe('Given.')
  })

  it('one policy at a time; a throwing policy defers nothing', async () => {
    const { ctx } = await boot()
    expect(() => ctx.tools.setDeferral({ loader: 'load_tools', deferred: () => true })).toThrow(/already set/)
    const other = new Context()
    await other.plugin(ToolRegistry)
    expect(() => other.tools.setDeferral({ loader: 'bad name', deferred: () => true })).toThrow(/invalid loader name/)
    for (const name of ['x', 'load_tools']) other.tools.register(tool(name))
    other.tools.setDeferral({
      loader: 'load_tools',
      deferred: () => {
        throw new Error('boom')
      },
    })
    expect(names(other.tools.schemas('agent:a'))).toEqual(['x'])
  })
})
