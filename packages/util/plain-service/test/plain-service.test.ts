import { describe, expect, it } from 'vitest'
import { Context, Service } from 'cordis'
import { plainService } from '../src/index.ts'

class PlainServiceProbe extends Service {
  count = 0
  constructor(ctx: Context) {
    super(ctx, 'plainServiceProbe')
  }
  bump(): number {
    return ++this.count
  }
}

declare module 'cordis' {
  interface Context {
    plainServiceProbe: PlainServiceProbe
  }
}

describe('plainService', () => {
  it('returns the object behind a service reference, which keeps working and shares its state', async () => {
    const ctx = new Context()
    await ctx.plugin(PlainServiceProbe)
    const reference = ctx.plainServiceProbe
    const plain = plainService(reference)
    // The reference is a proxy around the instance, not the instance itself.
    expect(plain).not.toBe(reference)
    expect(plain).toBeInstanceOf(PlainServiceProbe)
    expect(plainService(plain)).toBe(plain)
    expect(plain.bump()).toBe(1)
    expect(reference.count).toBe(1)
    expect(reference.bump()).toBe(2)
    expect(plain.count).toBe(2)
  })

  it('passes through values that are not service references', () => {
    const object = { a: 1 }
    const fn = () => 1
    expect(plainService(object)).toBe(object)
    expect(plainService(fn)).toBe(fn)
    expect(plainService(undefined)).toBeUndefined()
    expect(plainService(null)).toBeNull()
    expect(plainService(3)).toBe(3)
  })
})
