import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { SlotRegistry } from '../src/index.ts'

const A = () => null
const B = () => null

async function root() {
  const ctx = new Context()
  await ctx.plugin(SlotRegistry)
  return ctx
}

describe('ctx.slots', () => {
  it('orders entries by order then registration, and an unloaded plugin takes its entries away', async () => {
    const ctx = await root()
    let changes = 0
    ctx.slots.subscribe('panel.side', () => changes++)
    ctx.slots.register('panel.side', { id: 'late', order: 10, component: A })
    const fiber = ctx.plugin({
      name: 'ui-todo',
      inject: ['slots'],
      apply(c: Context) {
        c.slots.register('panel.side', { id: 'todo', order: 0, component: B })
        c.slots.register('panel.side', { id: 'files', order: 0, component: A })
      },
    })
    await fiber
    expect(ctx.slots.entries('panel.side').map((e) => e.id)).toEqual(['todo', 'files', 'late'])
    expect(ctx.slots.entries('panel.side')[0].owner).toBe('ui-todo')
    await fiber.dispose()
    expect(ctx.slots.entries('panel.side').map((e) => e.id)).toEqual(['late'])
    expect(changes).toBe(5)
  })

  it('keeps keyed entries apart and the disposer removes one entry', async () => {
    const ctx = await root()
    const off = ctx.slots.register('tool.call.toolview', { id: 'bash-card', key: 'bash', component: A })
    ctx.slots.register('tool.call.toolview', { id: 'generic', component: B })
    expect(ctx.slots.entries('tool.call.toolview', 'bash').map((e) => e.id)).toEqual(['bash-card'])
    expect(ctx.slots.entries('tool.call.toolview').map((e) => e.id)).toEqual(['generic'])
    expect(ctx.slots.entries('tool.call.toolview', 'grep')).toEqual([])
    off()
    expect(ctx.slots.entries('tool.call.toolview', 'bash')).toEqual([])
  })

  it('refuses bad registrations with one clear error', async () => {
    const ctx = await root()
    expect(() => ctx.slots.register('Bad Name', { id: 'x', component: A })).toThrow(/bad slot name/)
    expect(() => ctx.slots.register('panel.side', { id: '', component: A })).toThrow(/id must be/)
    expect(() => ctx.slots.register('panel.side', { id: 'x', component: 'div' as never })).toThrow(/React component/)
    expect(() => ctx.slots.register('panel.side', { id: 'x', order: Number.NaN, component: A })).toThrow(/order/)
    ctx.slots.register('panel.side', { id: 'x', component: A })
    expect(() => ctx.slots.register('panel.side', { id: 'x', component: B })).toThrow(/already registered/)
  })
})
