import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import Schema from 'schemastery'
import type { Message as LogMessage } from 'cordis'
import { MemorySettings, SettingsValidationError, mergePatch, type SettingsChange } from '../src/index.ts'

async function boot(initial: Record<string, Record<string, unknown>> = {}) {
  const ctx = new Context()
  const logs: LogMessage[] = []
  ctx.logger.exporter({ levels: { default: 3 }, export: (m) => void logs.push(m) })
  await ctx.plugin(MemorySettings, { initial: initial as never })
  return { ctx, logs }
}

const Port = Schema.object({
  port: Schema.natural().default(8080),
  host: Schema.string().default('127.0.0.1'),
  nested: Schema.object({ on: Schema.boolean().default(false) }).default({ on: false }),
})

describe('mergePatch', () => {
  it('merges objects recursively, deletes undefined keys and replaces arrays', () => {
    const base = { a: 1, b: { c: 2, d: [1, 2] }, e: 'x' }
    expect(mergePatch(base, { b: { d: [3] }, e: undefined, f: null })).toEqual({ a: 1, b: { c: 2, d: [3] }, f: null })
    expect(base).toEqual({ a: 1, b: { c: 2, d: [1, 2] }, e: 'x' })
  })
})

describe('ctx.settings', () => {
  it('gives a typed section with defaults for an absent namespace', async () => {
    const { ctx } = await boot()
    const section = ctx.settings.section('web', Port)
    expect(section.value).toEqual({ port: 8080, host: '127.0.0.1', nested: { on: false } })
    expect(section.error).toBeUndefined()
  })

  it('falls back to defaults for an invalid section, naming the namespace and field, and warns once', async () => {
    const { ctx, logs } = await boot({ web: { port: 'eighty', host: 'example.org' }, other: { fine: true } })
    const section = ctx.settings.section('web', Port)
    expect(section.value.port).toBe(8080)
    expect(section.value.host).toBe('127.0.0.1')
    expect(section.error).toBeInstanceOf(SettingsValidationError)
    expect(section.error!.namespace).toBe('web')
    expect(section.error!.field).toBe('web.port')
    expect(section.error!.message).toContain('memory settings')
    void section.value
    const warnings = logs.filter((m) => m.type === 'warn')
    expect(warnings).toHaveLength(1)
    expect(warnings[0].args.join(' ')).toContain('web.port')
    // The other section is unaffected.
    expect(ctx.settings.get('other')).toEqual({ fine: true })
  })

  it('reports nested fields with their full path', async () => {
    const { ctx } = await boot({ web: { nested: { on: 'yes' } } })
    expect(ctx.settings.section('web', Port).error?.field).toBe('web.nested.on')
  })

  it('refuses a schema that cannot give defaults', async () => {
    const { ctx } = await boot()
    expect(() => ctx.settings.section('x', Schema.object({ must: Schema.string().required() }))).toThrow(
      /absent section/,
    )
  })

  it('notifies onChange listeners and emits settings/changed for changed namespaces only', async () => {
    const { ctx } = await boot({ a: { v: 1 }, b: { v: 1 } })
    const seen: unknown[] = []
    const events: SettingsChange[] = []
    ctx.on('settings/changed', (change) => void events.push(change))
    const dispose = ctx.settings.onChange('a', (value, previous) => void seen.push([value, previous]))
    await ctx.settings.update('a', { v: 2 })
    await ctx.settings.update('a', { v: 2 })
    expect(seen).toEqual([[{ v: 2 }, { v: 1 }]])
    expect(events.map((e) => [e.namespace, e.cause])).toEqual([['a', 'update']])
    dispose()
    await ctx.settings.update('a', { v: 3 })
    expect(seen).toHaveLength(1)
  })

  it('unwinds listeners when the registering plugin unloads', async () => {
    const { ctx } = await boot()
    const seen: unknown[] = []
    const fiber = await ctx.plugin({
      name: 'consumer',
      inject: ['settings'],
      apply(inner: Context) {
        inner.settings.section('web', Port).onChange((value) => void seen.push(value.port))
      },
    })
    await ctx.settings.update('web', { port: 1 })
    await fiber.dispose()
    await ctx.settings.update('web', { port: 2 })
    expect(seen).toEqual([1])
  })

  it('section.update validates the merged section and writes nothing when it fails', async () => {
    const { ctx } = await boot({ web: { port: 1 } })
    const section = ctx.settings.section('web', Port)
    await expect(section.update({ port: -5 })).rejects.toThrow(SettingsValidationError)
    expect(ctx.settings.get('web')).toEqual({ port: 1 })
    await section.update({ host: 'localhost' })
    expect(section.value).toMatchObject({ port: 1, host: 'localhost' })
  })

  it('rejects bad namespaces and values that a document cannot hold', async () => {
    const { ctx } = await boot()
    expect(() => ctx.settings.get('no.dots')).toThrow(/namespace/)
    await expect(async () => ctx.settings.update('x', { f: () => 1 } as never)).rejects.toThrow(/x\.f/)
    await expect(async () => ctx.settings.update('x', { n: Number.NaN })).rejects.toThrow(/finite/)
  })

  it('returns frozen sections', async () => {
    const { ctx } = await boot({ a: { list: [1] } })
    expect(Object.isFrozen(ctx.settings.get('a'))).toBe(true)
    expect(Object.isFrozen((ctx.settings.get('a') as { list: number[] }).list)).toBe(true)
  })
})
