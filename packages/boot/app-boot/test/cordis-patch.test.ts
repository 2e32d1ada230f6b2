// The local patch of cordis (patches/cordis@4.0.0-rc.10.patch, note .agents/notes/cordis-patch.md):
// the traceable proxy of a service is built once per (context, service), and the property traps
// no longer build an Error with a stack for every service read, yet a failed read still throws
// with the caller's frame on top.
import { Context, Service } from 'cordis'
import { expect, it } from 'vitest'

class PatchProbe extends Service {
  value = 0
  constructor(ctx: Context) {
    super(ctx, 'patchProbe')
  }
  bump() {
    return ++this.value
  }
}

declare module 'cordis' {
  interface Context {
    patchProbe: PatchProbe
  }
}

it('reads of a service from one context return one proxy that still behaves as the service', async () => {
  const root = new Context()
  await root.plugin(PatchProbe)
  let first: PatchProbe | undefined
  let second: PatchProbe | undefined
  await root.plugin({
    name: 'reader',
    inject: ['patchProbe'],
    apply(ctx: Context) {
      first = ctx.patchProbe
      second = ctx.patchProbe
      first!.bump()
      second!.bump()
    },
  })
  expect(first).toBeDefined()
  expect(first).toBe(second)
  expect(root.patchProbe.value).toBe(2)
})

it('a read without inject throws with the reading function as the first frame', async () => {
  const root = new Context()
  let caught: Error | undefined
  function readsUndeclared(ctx: Context) {
    return (ctx as unknown as Record<string, unknown>).notDeclaredAnywhere
  }
  await root.plugin({
    name: 'bad-reader',
    apply(ctx: Context) {
      try {
        readsUndeclared(ctx)
      } catch (error) {
        caught = error as Error
      }
    },
  })
  expect(caught?.message).toBe('cannot get property "notDeclaredAnywhere" without inject')
  const lines = String(caught?.stack).split('\n')
  expect(lines[0]).toBe('Error: cannot get property "notDeclaredAnywhere" without inject')
  expect(lines[1]).toMatch(/^\s+at readsUndeclared /)
})

it('the stack is left as it was for reads that succeed (no stack limit leaks)', async () => {
  const root = new Context()
  await root.plugin(PatchProbe)
  const limit = Error.stackTraceLimit
  await root.plugin({ name: 'reader', inject: ['patchProbe'], apply: (ctx: Context) => void ctx.patchProbe.bump() })
  expect(Error.stackTraceLimit).toBe(limit)
  expect(String(new Error('probe').stack).split('\n').length).toBeGreaterThan(1)
})
