import { describe, expect, it } from 'vitest'
import { Context, type Message as LogMessage } from 'cordis'
import Schema from 'schemastery'
import {
  MemoryStorage,
  StorageError,
  type StorageService,
  type DomainChange,
  type DomainWrite,
  type LoadedDomain,
} from '../src/index.ts'

const Item = Schema.object({
  title: Schema.string().required(),
  done: Schema.boolean().default(false),
})
type Item = ReturnType<typeof Item>

async function boot(provider: typeof StorageService = MemoryStorage) {
  const ctx = new Context()
  const logs: LogMessage[] = []
  ctx.logger.exporter({ levels: { default: 3 }, export: (m) => void logs.push(m) })
  // The abstract class is never mounted itself; tests pass concrete subclasses.
  const fiber = await ctx.plugin(provider as unknown as typeof MemoryStorage, {})
  const warnings = () => logs.filter((m) => m.type === 'warn').map((m) => m.args.map(String).join(' '))
  return { ctx, fiber, warnings }
}

describe('storage domains', () => {
  it('validates values with the schema, applies its defaults and returns frozen copies', async () => {
    const { ctx } = await boot()
    const items = ctx.storage.domain('todo', Item)
    const stored = await items.set('a', { title: 'write tests' } as Item)
    expect(stored).toEqual({ title: 'write tests', done: false })
    expect(await items.get('a')).toEqual({ title: 'write tests', done: false })
    expect(Object.isFrozen(await items.get('a'))).toBe(true)
    expect(await items.get('missing')).toBeUndefined()
    await items.set('b', { title: 'ship', done: true })
    expect((await items.entries()).map(([key]) => key)).toEqual(['a', 'b'])
  })

  it('rejects a value failing the schema, naming the field, and stores nothing', async () => {
    const { ctx } = await boot()
    const items = ctx.storage.domain('todo', Item)
    const error = await items.set('a', { title: 42 } as unknown as Item).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StorageError)
    expect(error).toMatchObject({ code: 'INVALID_VALUE', field: 'title' })
    expect((error as Error).message).toContain('storage domain "todo", key "a", field "title"')
    expect(await items.entries()).toEqual([])
  })

  it('rejects bad domain names and keys with one clear error', async () => {
    const { ctx } = await boot()
    expect(() => ctx.storage.domain('../etc', Item)).toThrow(/storage domain name "..\/etc" is invalid/)
    expect(() => ctx.storage.domain('Upper', Item)).toThrow(StorageError)
    const items = ctx.storage.domain('todo', Item)
    await expect(items.set('', { title: 'x', done: false })).rejects.toMatchObject({ code: 'INVALID_KEY' })
    await expect(items.get('k'.repeat(257))).rejects.toMatchObject({ code: 'INVALID_KEY' })
  })

  it('deletes keys and reports whether they existed', async () => {
    const { ctx } = await boot()
    const items = ctx.storage.domain('todo', Item)
    await items.set('a', { title: 'x', done: false })
    expect(await items.delete('a')).toBe(true)
    expect(await items.delete('a')).toBe(false)
    expect(await items.get('a')).toBeUndefined()
  })

  it('notifies listeners and the storage/changed event after each durable change, and unloading the listener plugin removes it', async () => {
    const { ctx } = await boot()
    const seen: DomainChange<Item>[] = []
    const events: DomainChange<unknown>[] = []
    ctx.on('storage/changed', (change) => void events.push(change))
    const listener = await ctx.plugin({
      name: 'listener',
      inject: ['storage'],
      apply(inner: Context) {
        inner.storage.domain('todo', Item).onChange((change) => void seen.push(change))
      },
    })
    const items = ctx.storage.domain('todo', Item)
    await items.set('a', { title: 'one', done: false })
    await items.update([
      { key: 'a', value: { title: 'two', done: true } },
      { key: 'b', value: { title: 'three', done: false } },
    ])
    await items.delete('b')
    expect(seen.map((c) => [c.key, c.value?.title, c.previous?.title])).toEqual([
      ['a', 'one', undefined],
      ['a', 'two', 'one'],
      ['b', 'three', undefined],
      ['b', undefined, 'three'],
    ])
    expect(events).toHaveLength(4)
    await listener.dispose()
    await items.set('c', { title: 'after', done: false })
    expect(seen).toHaveLength(4)
    expect(events).toHaveLength(5)
  })

  it('serializes writes: concurrent sets land in call order', async () => {
    const { ctx } = await boot()
    const counter = ctx.storage.domain('counter', Schema.natural())
    await Promise.all(Array.from({ length: 50 }, (_, i) => counter.set('n', i)))
    expect(await counter.get('n')).toBe(49)
  })

  it('a failed write changes nothing in memory and the next write proceeds', async () => {
    class Flaky extends MemoryStorage {
      static fail = true
      protected override async writeDomain(domain: string, write: DomainWrite): Promise<void> {
        if (Flaky.fail) throw new Error('disk full')
        return super.writeDomain(domain, write)
      }
    }
    const { ctx } = await boot(Flaky)
    const items = ctx.storage.domain('todo', Item)
    await expect(items.set('a', { title: 'x', done: false })).rejects.toMatchObject({
      code: 'WRITE_FAILED',
      message: expect.stringContaining('disk full'),
    })
    expect(await items.get('a')).toBeUndefined()
    Flaky.fail = false
    await items.set('b', { title: 'y', done: false })
    expect((await items.entries()).map(([key]) => key)).toEqual(['b'])
  })

  it('hides stored entries that fail the schema with one warning, keeps them in the medium, and loads the rest', async () => {
    class Seeded extends MemoryStorage {
      protected override async loadDomain(): Promise<LoadedDomain> {
        return {
          entries: new Map<string, unknown>([
            ['good', { title: 'ok', done: true }],
            ['bad1', { title: 7 }],
            ['bad2', 'not an object'],
          ]),
        }
      }
      written: DomainWrite[] = []
      protected override async writeDomain(_domain: string, write: DomainWrite): Promise<void> {
        this.written.push(write)
      }
    }
    const { ctx, warnings } = await boot(Seeded)
    const events: Array<{ domain?: string; message: string }> = []
    ctx.on('storage/warning', (warning) => void events.push(warning))
    const items = ctx.storage.domain('todo', Item)
    expect(await items.entries()).toEqual([['good', { title: 'ok', done: true }]])
    expect(await items.get('bad1')).toBeUndefined()
    await items.entries()
    expect(warnings()).toHaveLength(1)
    expect(warnings()[0]).toMatch(/memory#todo: 2 stored entries ignored .*key "bad1", field "title"/)
    await items.set('new', { title: 'n', done: false })
    const service = ctx.storage as unknown as Seeded
    expect([...service.written[0]!.snapshot.keys()]).toEqual(['good', 'bad1', 'bad2', 'new'])
    expect(warnings()).toHaveLength(1)
    expect(events).toEqual([{ domain: 'todo', message: warnings()[0] }])
  })

  it('reads a stored entry missing a defaulted field with the default, leaving the stored copy as it was', async () => {
    class Old extends MemoryStorage {
      protected override async loadDomain(): Promise<LoadedDomain> {
        return { entries: new Map<string, unknown>([['a', { title: 'from an older version' }]]) }
      }
    }
    const { ctx, warnings } = await boot(Old)
    const items = ctx.storage.domain('todo', Item)
    expect(await items.get('a')).toEqual({ title: 'from an older version', done: false })
    expect(warnings()).toEqual([])
  })

  it('a load failure rejects reads with LOAD_FAILED and is retried on the next use', async () => {
    class Unreadable extends MemoryStorage {
      static attempts = 0
      protected override async loadDomain(domain: string): Promise<LoadedDomain> {
        if (Unreadable.attempts++ === 0) throw new Error('EACCES: permission denied')
        return super.loadDomain(domain)
      }
    }
    const { ctx } = await boot(Unreadable)
    const items = ctx.storage.domain('todo', Item)
    await expect(items.entries()).rejects.toMatchObject({
      code: 'LOAD_FAILED',
      message: expect.stringContaining('EACCES'),
    })
    expect(await items.entries()).toEqual([])
  })

  it('refuses writes after the provider unloads', async () => {
    const { ctx, fiber } = await boot()
    const items = ctx.storage.domain('todo', Item)
    await items.set('a', { title: 'x', done: false })
    const service = ctx.storage
    await fiber.dispose()
    await expect(service.domain('todo', Item).set('b', { title: 'y', done: false })).rejects.toMatchObject({
      code: 'DISPOSED',
    })
  })
})
