// The local patch of cordis (patches/cordis@4.0.0-rc.10.patch, note .agents/notes/cordis-patch.md):
// the traceable proxy of a service is built once per (context, service), and the property traps
// no longer build an Error with a stack for every service read, yet a failed read still throws
// with the caller's frame on top.
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
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

// Second round (note .agents/notes/boot-cuts-2026-12-05.md): a plugin error's composed stack
// keeps its quality while the inner marker error is captured with two frames; fibers that never
// provided a service skip the walk over the service store; the property-name classification is
// remembered; bound listeners trace their arguments without going through `reflect.trace`.

it("a failing plugin's error still names the throwing function and the caller of ctx.plugin", async () => {
  const root = new Context()
  const failures: Error[] = []
  root.on('internal/error' as never, (error: Error) => void failures.push(error))
  function throwsInApply(): never {
    throw new Error('plugin broke')
  }
  async function loadsTheBrokenPlugin() {
    const fiber = root.plugin({ name: 'broken', apply: () => throwsInApply() })
    await fiber.await().catch((error: Error) => failures.push(error))
  }
  await loadsTheBrokenPlugin()
  const error = failures.find((e) => e?.message === 'plugin broke')
  expect(error).toBeDefined()
  const lines = String(error!.stack).split('\n')
  expect(lines[0]).toBe('Error: plugin broke')
  expect(lines[1]).toMatch(/^\s+at throwsInApply /)
  // The composed part: Cordis' own frames are cut and the outer stack (where ctx.plugin was
  // called) follows the plugin's frames.
  expect(lines.some((l) => /at loadsTheBrokenPlugin /.test(l))).toBe(true)
  expect(lines.some((l) => /cordis\/lib\/index\.js/.test(l) && /_execute|composeError/.test(l))).toBe(false)
})

it('the marker error of a plugin run is captured with two frames, and the limit is restored', async () => {
  const root = new Context()
  const captured: number[] = []
  const prepare = Error.prepareStackTrace
  const limit = Error.stackTraceLimit
  // Records how many frames each stack had when it was captured (V8 passes them here when the
  // stack is first read; Cordis reads its marker error only to compose a failure).
  Error.prepareStackTrace = (error, frames) => {
    if (error instanceof Error && error.message === '') captured.push(frames.length)
    return [String(error), ...frames.map((f) => `    at ${f}`)].join('\n')
  }
  try {
    const fiber = root.plugin({
      name: 'broken',
      apply: () => {
        throw new Error('plugin broke')
      },
    })
    await fiber.await().catch(() => {})
  } finally {
    Error.prepareStackTrace = prepare
  }
  // The outer stacks (where the plugin and its effects were created) keep every frame.
  expect(captured.some((n) => n > 2)).toBe(true)
  expect(captured.some((n) => n <= 2)).toBe(true)
  expect(Error.stackTraceLimit).toBe(limit)
})

it('a provider going away still deactivates its dependents, and they come back with it', async () => {
  const root = new Context()
  const provider = root.plugin(PatchProbe)
  await provider
  let active = 0
  const dependent = root.plugin({
    name: 'dependent',
    inject: ['patchProbe'],
    apply(ctx: Context) {
      active += 1
      ctx.effect(() => () => void (active -= 1))
    },
  })
  await dependent
  expect(active).toBe(1)
  await provider.dispose()
  expect(active).toBe(0)
  await root.plugin(PatchProbe)
  await dependent.await()
  expect(active).toBe(1)
})

it('state changes of fibers that provide nothing do not read the reflect service', async () => {
  const root = new Context()
  // The root's own `reflect` (the raw property behind the Context proxy), counted.
  const raw = Reflect.getOwnPropertyDescriptor(root, 'reflect')!.value
  let reads = 0
  Object.defineProperty(root, 'reflect', { configurable: true, get: () => (reads++, raw) })
  const plain = Array.from({ length: 10 }, (_, i) => root.plugin({ name: `plain-${i}`, apply() {} }))
  await Promise.all(plain.map((f) => f.await()))
  await Promise.all(plain.map((f) => f.dispose()))
  // Measured: 9 reads per plugin before the patch (one for each change to and from ACTIVE, 20
  // here), 7 after (the reads that remain are the plugin's own set-up and tear-down).
  expect(reads).toBeLessThanOrEqual(7 * plain.length)
})

it('special property names are classified once per name, with the same answers', async () => {
  const root = new Context() as unknown as Record<string, unknown>
  const includes = Array.prototype.includes
  let checks = 0
  Array.prototype.includes = function (this: unknown[], ...args: [unknown, number?]) {
    if (this.length === 2 && this[0] === 'prototype' && this[1] === 'then') checks++
    return includes.apply(this, args)
  }
  try {
    for (let i = 0; i < 50; i++) {
      expect(root._privateThing).toBeUndefined()
      expect(root.then).toBeUndefined()
      expect(root['12']).toBeUndefined()
    }
  } finally {
    Array.prototype.includes = includes
  }
  expect(checks).toBeLessThanOrEqual(3)
  // A plain name is not special: reading it in a plugin without inject still throws.
  let caught: unknown
  await (root as unknown as Context).plugin({
    name: 'reader',
    apply(ctx: Context) {
      try {
        void (ctx as unknown as Record<string, unknown>).notSpecialAtAll
      } catch (error) {
        caught = error
      }
    },
  })
  expect(String(caught)).toContain('cannot get property "notSpecialAtAll" without inject')
})

it("a listener's context arguments are traced without a call of reflect.trace", async () => {
  const root = new Context()
  const original = Symbol.for('cordis.original')
  const rawReflect = (root.reflect as unknown as Record<symbol, Record<string, unknown>>)[original]
  let traceCalls = 0
  const trace = rawReflect.trace as (value: unknown) => unknown
  rawReflect.trace = function (this: unknown, value: unknown) {
    traceCalls++
    return trace.call(this, value)
  }
  try {
    let seen: unknown
    await root.plugin({
      name: 'listener',
      apply(ctx: Context) {
        ctx.on('patch-probe/ping' as never, (arg: unknown) => void (seen = arg))
      },
    })
    const payload = { n: 1 }
    ;(root.emit as (...args: unknown[]) => void)('patch-probe/ping', payload)
    expect(seen).toBe(payload)
  } finally {
    delete rawReflect.trace
  }
  expect(traceCalls).toBe(0)
})

// Third round (note .agents/notes/closure-names.md): closures Cordis creates per call (proxy
// traps, an effect's disposers, a waterfall's next, ...) are no longer renamed with esbuild's
// `__name()` (a redefined `name` turned each into a dictionary-mode object). They must keep the
// names and the `name` descriptor the renaming gave them, now by inference.

const nameDescriptor = (value: string) => ({ value, writable: false, enumerable: false, configurable: true })

it("closures made per call keep their names: a waterfall's next and an effect's disposer", async () => {
  const root = new Context()
  let next: (() => unknown) | undefined
  await root.plugin({
    name: 'waterfall-listener',
    apply(ctx: Context) {
      ctx.on('patch-probe/fall' as never, ((payload: unknown, n: () => unknown) => ((next = n), n())) as never)
    },
  })
  const result = (root.waterfall as (...args: unknown[]) => unknown)('patch-probe/fall', {}, () => 'inner')
  expect(result).toBe('inner')
  expect(Object.getOwnPropertyDescriptor(next, 'name')).toEqual(nameDescriptor('next'))
  const disposeAsync = await root.effect(() => () => {})
  expect(Object.getOwnPropertyDescriptor(disposeAsync, 'name')).toEqual(nameDescriptor('disposeAsync'))
})

it('closures made per call are fast-mode objects (no name redefined on them)', () => {
  const code = `
    import { Context } from 'cordis'
    const root = new Context()
    let next
    await root.plugin({ name: 'w', apply(ctx) { ctx.on('probe/fall', (p, n) => ((next = n), n())) } })
    root.waterfall('probe/fall', {}, () => 0)
    const disposeAsync = await root.effect(() => () => {})
    console.log(JSON.stringify([next.name, %HasFastProperties(next), disposeAsync.name, %HasFastProperties(disposeAsync)]))
  `
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', code], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    encoding: 'utf8',
  })
  expect(JSON.parse(out)).toEqual(['next', true, 'disposeAsync', true])
})
