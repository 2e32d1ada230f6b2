// One test per assumption @dsh/cordis-compat makes about Cordis' internals, against the real
// (pinned, patched) Cordis. A Cordis upgrade that moves one of them fails the test named after it.
import { describe, expect, it } from 'vitest'
import { Context, Service } from 'cordis'
import Schema from 'schemastery'
import {
  FIBER_STATES,
  fiberError,
  fiberStateName,
  isFiberActive,
  listenersOf,
  originalOf,
  unmetInjects,
} from '../src/index.ts'

class CompatProbe extends Service {
  constructor(ctx: Context) {
    super(ctx, 'compatProbe')
  }
}

declare module 'cordis' {
  interface Context {
    compatProbe: CompatProbe
  }
}

describe('cordis-compat', () => {
  it('FiberState numbering: pending, active, failed and disposed fibers read by name', async () => {
    expect(FIBER_STATES.length).toBe(6)
    const ctx = new Context()
    const active = ctx.plugin({ name: 'a', apply() {} })
    await active
    const waiting = ctx.plugin({ name: 'w', inject: ['nobodyProvides'], apply() {} })
    await waiting
    const failed = ctx.plugin({
      name: 'f',
      apply() {
        throw new Error('boom')
      },
    })
    await failed.then(
      () => undefined,
      () => undefined,
    )
    expect([active, waiting, failed].map(fiberStateName)).toEqual(['active', 'pending', 'failed'])
    await active.dispose()
    expect(fiberStateName(active)).toBe('disposed')
  })

  it('FiberState.ACTIVE is 2: isFiberActive tells an active fiber from one waiting on an inject', async () => {
    const ctx = new Context()
    const active = ctx.plugin({ name: 'a', apply() {} })
    const waiting = ctx.plugin({ name: 'w', inject: ['nobodyProvides'], apply() {} })
    await active
    await waiting
    expect(isFiberActive(active)).toBe(true)
    expect(isFiberActive(waiting)).toBe(false)
  })

  it('Fiber._error keeps the apply error and the config ValidationError', async () => {
    const ctx = new Context()
    const boom = new Error('boom')
    const threw = ctx.plugin({
      name: 't',
      apply() {
        throw boom
      },
    })
    await threw.then(
      () => undefined,
      () => undefined,
    )
    expect(fiberError(threw)).toBe(boom)
    const invalid = ctx.plugin(
      { name: 'v', Config: Schema.object({ n: Schema.number().required() }), apply() {} },
      {} as never,
    )
    await invalid.then(
      () => undefined,
      () => undefined,
    )
    expect((fiberError(invalid) as Error)?.name).toBe('ValidationError')
    const fine = ctx.plugin({ name: 'ok', apply() {} })
    await fine
    expect(fiberError(fine)).toBeUndefined()
  })

  it('Fiber._store holds the resolved injects by name: unmetInjects names only the missing ones', async () => {
    const ctx = new Context()
    await ctx.plugin(CompatProbe)
    const fiber = ctx.plugin({ name: 'w', inject: ['compatProbe', 'nobodyProvides'], apply() {} })
    await fiber
    expect(unmetInjects(fiber)).toEqual(['nobodyProvides'])
  })

  it("events._hooks lists each event's listeners in dispatch order with their registering fiber", async () => {
    const ctx = new Context()
    const first = () => {}
    const second = () => {}
    await ctx.plugin({
      name: 'first-plugin',
      apply(c: Context) {
        c.on('compat/probe' as never, first as never)
      },
    })
    await ctx.plugin({
      name: 'second-plugin',
      apply(c: Context) {
        c.on('compat/probe' as never, second as never, true)
      },
    })
    const listeners = listenersOf(ctx, 'compat/probe')
    expect(listeners?.map((l) => l.plugin)).toEqual(['second-plugin', 'first-plugin'])
    // The callbacks are the ones dispatch calls: calling them is what `emit` would do.
    const called: string[] = []
    await ctx.plugin({
      name: 'third',
      apply(c: Context) {
        c.on('compat/other' as never, (() => called.push('x')) as never)
      },
    })
    for (const l of listenersOf(ctx, 'compat/other') ?? []) l.callback()
    expect(called).toEqual(['x'])
    expect(listenersOf(ctx, 'compat/nobody')).toEqual([])
  })

  it('symbols.original unwraps a service reference to its instance', async () => {
    const ctx = new Context()
    await ctx.plugin(CompatProbe)
    const reference = ctx.compatProbe
    const plain = originalOf(reference)
    expect(plain).not.toBe(reference)
    expect(plain).toBeInstanceOf(CompatProbe)
    expect(originalOf(plain)).toBe(plain)
    expect(originalOf(null)).toBeNull()
    expect(originalOf(3)).toBe(3)
  })
})
