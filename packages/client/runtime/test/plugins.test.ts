import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { ClientPlugins, SlotRegistry } from '../src/index.ts'

const modules: Record<string, unknown> = {
  '/plugins/good/index.js': {
    default: {
      name: 'good',
      inject: ['slots'],
      apply: (ctx: Context) => void ctx.slots.register('panel.side', { id: 'good', component: () => null }),
    },
  },
  '/plugins/throws/index.js': {
    default: {
      name: 'throws',
      apply: () => {
        throw new Error('boom in apply')
      },
    },
  },
  '/plugins/not-a-plugin/index.js': { default: 42 },
  '/plugins/waits/index.js': { default: { name: 'waits', inject: ['nobodyProvidesThis'], apply: () => {} } },
}

describe('ctx.clientPlugins', () => {
  it('mounts good halves, reports the bad ones without throwing, and unloading removes what a half registered', async () => {
    const ctx = new Context()
    await ctx.plugin(SlotRegistry)
    await ctx.plugin(ClientPlugins, (async (url: string) => {
      if (!(url in modules)) throw new TypeError(`Failed to fetch dynamically imported module: ${url}`)
      return modules[url]
    }) as never)
    const warn = console.warn
    console.warn = () => {}
    try {
      await ctx.clientPlugins.loadAll(
        ['good', 'throws', 'not-a-plugin', 'waits', 'missing'].map((p) => ({
          package: p,
          url: `/plugins/${p}/index.js`,
        })),
      )
    } finally {
      console.warn = warn
    }
    const states = Object.fromEntries(ctx.clientPlugins.list.get().map((p) => [p.package, [p.state, p.error ?? '']]))
    expect(states.good).toEqual(['active', ''])
    expect(states.throws[0]).toBe('failed')
    expect(states['not-a-plugin']).toEqual([
      'failed',
      'its default export is not a Cordis plugin ({name, apply(ctx)} or a Service class)',
    ])
    expect(states.waits).toEqual(['waiting', 'it waits for nobodyProvidesThis'])
    expect(states.missing[1]).toContain('Failed to fetch')
    expect(ctx.slots.entries('panel.side').map((e) => e.id)).toEqual(['good'])
    await ctx.clientPlugins.unload('good')
    expect(ctx.slots.entries('panel.side')).toEqual([])
    expect(ctx.clientPlugins.list.get().map((p) => p.package)).not.toContain('good')
  })
})
