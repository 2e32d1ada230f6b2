// One test per assumption @dsh/cordis-compat/loader makes about @cordisjs/plugin-loader's
// internals, against the real (pinned, patched) Loader with in-memory row modules.
import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { Group, Loader, type Entry, type EntryOptions } from '@cordisjs/plugin-loader'
import { entryInitTask, entryOfContext, entryOfFiber, settleEntryFibers } from '../src/loader.ts'

/** Row modules by name; `gate` holds the import of `slow` until released. */
function modules(gate?: Promise<void>): Record<string, () => Promise<unknown>> {
  return {
    ok: async () => ({ name: 'ok', apply() {} }),
    throws: async () => ({
      name: 'throws',
      apply() {
        throw new Error('apply failed')
      },
    }),
    missing: async () => {
      throw new Error('cannot find module missing')
    },
    slow: async () => {
      await gate
      return { name: 'slow', apply() {} }
    },
  }
}

class MemoryLoader extends Loader {
  table: Record<string, () => Promise<unknown>> = modules()
  write(): void {}
  override import(name: string, getOuterStack: () => string[], useInternal?: boolean): Promise<unknown> {
    if (name.startsWith('cordis:')) return super.import(name, getOuterStack, useInternal)
    return this.table[name]()
  }
}

async function mount(ctx: Context): Promise<MemoryLoader> {
  let loader!: MemoryLoader
  await ctx.plugin({
    name: 'host',
    apply(c: Context) {
      loader = new MemoryLoader(c, {})
      loader.builtins.group = Group
    },
  })
  return loader
}

const entryOf = (loader: Loader, id: string) => [...loader.entries()].find((e) => e.id === id) as Entry

describe('cordis-compat/loader', () => {
  it("Entry.key: internal/error is emitted with the failing entry's context as this", async () => {
    const ctx = new Context()
    const failed: (string | undefined)[] = []
    ;(ctx.on as (name: string, listener: (this: Context) => void) => void)('internal/error', function () {
      failed.push(entryOfContext(this)?.id)
    })
    const loader = await mount(ctx)
    await loader.root.update([
      { id: 'm1', name: 'missing' },
      { id: 'o1', name: 'ok' },
    ] as EntryOptions[])
    await loader.await()
    expect(failed).toEqual(['m1'])
    expect(entryOfContext({})).toBeUndefined()
  })

  it('Entry.key on the parent context: entryOfFiber finds the row a fiber was mounted under', async () => {
    const ctx = new Context()
    const loader = await mount(ctx)
    await loader.root.update([{ id: 'o1', name: 'ok' }] as EntryOptions[])
    await loader.await()
    const entry = entryOf(loader, 'o1')
    expect(entryOfFiber(entry.fiber!)).toBe(entry)
    const child = entry.fiber!.ctx.plugin({ name: 'child', apply() {} })
    await child
    expect(entryOfFiber(child)).toBe(entry)
    const outside = ctx.plugin({ name: 'outside', apply() {} })
    await outside
    expect(entryOfFiber(outside)).toBeUndefined()
  })

  it('Entry._initTask is the pending import of a row, cleared once the row applied', async () => {
    const ctx = new Context()
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const loader = await mount(ctx)
    loader.table = modules(gate)
    const updating = loader.root.update([{ id: 's1', name: 'slow' }] as EntryOptions[])
    const entry = entryOf(loader, 's1')
    const task = entryInitTask(entry)
    expect(task).toBeInstanceOf(Promise)
    release()
    await task
    await updating
    await loader.await()
    expect(entryInitTask(entry)).toBeUndefined()
    expect(entry.fiber).toBeDefined()
  })

  it("settleEntryFibers: a failed row fiber's await() resolves; fibers outside the Loader still reject", async () => {
    const ctx = new Context()
    settleEntryFibers(ctx)
    ;(ctx.on as (name: string, listener: () => void) => void)('internal/error', () => {})
    const loader = await mount(ctx)
    await loader.root.update([{ id: 't1', name: 'throws' }] as EntryOptions[])
    await loader.await()
    const fiber = entryOf(loader, 't1').fiber!
    // The fiber failed (its error is read through fiberError, pinned in compat.test.ts), yet await() resolves.
    expect(fiber.state).toBe(3)
    expect(
      await fiber.await().then(
        () => 'resolved',
        () => 'rejected',
      ),
    ).toBe('resolved')
    const outside = ctx.plugin({
      name: 'outside',
      apply() {
        throw new Error('outside failed')
      },
    })
    expect(
      await outside.await().then(
        () => 'resolved',
        () => 'rejected',
      ),
    ).toBe('rejected')
  })
})
