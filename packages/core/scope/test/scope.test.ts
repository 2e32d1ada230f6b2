import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { ScopeConflictError, ScopedRegistry, scopeKey } from '../src/index.ts'

interface Item {
  name: string
  tag: string
}
const item = (name: string, tag = 'global'): Item => ({ name, tag })
const registry = (duplicates?: 'throw' | 'stack') =>
  new ScopedRegistry<Item>({ key: (i) => i.name, label: 'tool', duplicates })
const names = (items: Item[]) => items.map((i) => `${i.name}:${i.tag}`)

describe('scopeKey', () => {
  it('is stable per agent and distinct across agents', () => {
    expect(scopeKey('a1')).toBe(scopeKey('a1'))
    expect(scopeKey('a1')).not.toBe(scopeKey('a2'))
  })
  it('rejects an empty id', () => {
    expect(() => scopeKey('')).toThrow(TypeError)
  })
})

describe('ScopedRegistry', () => {
  it('returns only global items without a scope, in registration order', () => {
    const r = registry()
    r.register(item('read'))
    r.register(item('bash'))
    r.register(item('edit', 'a'), { scope: scopeKey('a') })
    expect(names(r.resolve())).toEqual(['read:global', 'bash:global'])
  })

  it('lets a scoped item shadow the global one in place and appends scope-only keys', () => {
    const r = registry()
    const a = scopeKey('a')
    r.register(item('read'))
    r.register(item('bash'))
    r.register(item('extra', 'a'), { scope: a })
    r.register(item('read', 'a'), { scope: a })
    expect(names(r.resolve(a))).toEqual(['read:a', 'bash:global', 'extra:a'])
    // Another agent sees the globals untouched.
    expect(names(r.resolve(scopeKey('b')))).toEqual(['read:global', 'bash:global'])
    expect(r.resolveEntries(a).map((e) => e.scope)).toEqual([a, undefined, a])
  })

  it('unwinds shadowing when the scoped disposer runs, and disposers are idempotent', () => {
    const r = registry()
    const a = scopeKey('a')
    const disposeGlobal = r.register(item('read'))
    const disposeScoped = r.register(item('read', 'a'), { scope: a })
    expect(r.get('read', a)?.tag).toBe('a')
    disposeScoped()
    disposeScoped()
    expect(r.get('read', a)?.tag).toBe('global')
    expect(r.scopes()).toEqual([])
    disposeGlobal()
    expect(r.resolve(a)).toEqual([])
    expect(r.has('read', a)).toBe(false)
  })

  it('throws on a duplicate key in the same scope by default, naming key and scope', () => {
    const r = registry()
    r.register(item('read'))
    expect(() => r.register(item('read'))).toThrow(ScopeConflictError)
    expect(() => r.register(item('read'))).toThrow('tool "read" is already registered globally')
    r.register(item('read', 'a'), { scope: 'agent:a' })
    expect(() => r.register(item('read', 'a2'), { scope: 'agent:a' })).toThrow('in scope "agent:a"')
  })

  it('stacks duplicates when asked: the newest wins, disposing it reveals the older', () => {
    const r = registry('stack')
    r.register(item('read', 'v1'))
    r.register(item('bash'))
    const d2 = r.register(item('read', 'v2'))
    expect(names(r.resolve())).toEqual(['read:v2', 'bash:global'])
    d2()
    expect(names(r.resolve())).toEqual(['read:v1', 'bash:global'])
  })

  it('resolves a scope chain most specific first', () => {
    const r = registry()
    r.register(item('persona'))
    r.register(item('rules'))
    r.register(item('persona', 'preset'), { scope: 'preset:coder' })
    r.register(item('rules', 'preset'), { scope: 'preset:coder' })
    r.register(item('persona', 'agent'), { scope: scopeKey('a') })
    expect(names(r.resolve([scopeKey('a'), 'preset:coder']))).toEqual(['persona:agent', 'rules:preset'])
  })

  it('keeps the order stable when a shadowed key is re-registered', () => {
    const r = registry()
    r.register(item('a'))
    const db = r.register(item('b'))
    r.register(item('c'))
    db()
    r.register(item('b', 'again'))
    expect(names(r.resolve())).toEqual(['a:global', 'c:global', 'b:again'])
  })

  it('reports changes and bumps the version', () => {
    const r = registry()
    let calls = 0
    const off = r.onChange(() => calls++)
    const v0 = r.version
    const d = r.register(item('x'))
    d()
    expect(calls).toBe(2)
    expect(r.version).toBe(v0 + 2)
    off()
    r.register(item('y'))
    expect(calls).toBe(2)
  })

  it('rejects bad keys and scopes', () => {
    const r = registry()
    expect(() => r.register(item(''))).toThrow(TypeError)
    expect(() => r.register(item('x'), { scope: '' })).toThrow(TypeError)
  })

  it('unwinds registrations made through ctx.effect when the plugin unloads', async () => {
    const root = new Context()
    const r = registry()
    const fiber = root.plugin({
      name: 'scoped-tools',
      apply(ctx: Context) {
        ctx.effect(() => r.register(item('read', 'a'), { scope: scopeKey('a') }))
        ctx.effect(() => r.register(item('bash')))
      },
    })
    await fiber
    expect(names(r.resolve(scopeKey('a')))).toEqual(['read:a', 'bash:global'])
    await fiber.dispose()
    expect(r.resolve(scopeKey('a'))).toEqual([])
  })
})

describe('standing scope', () => {
  it('is carried by derived contexts and absent elsewhere', async () => {
    const { withStandingScope, standingScope } = await import('@dsh/scope')
    const { Context } = await import('cordis')
    const root = new Context()
    expect(standingScope(root)).toBeUndefined()
    const scoped = withStandingScope(root, 'agent:x')
    expect(standingScope(scoped)).toBe('agent:x')
    let seen: string | undefined
    await scoped.plugin({ name: 'probe', apply: (inner: typeof root) => void (seen = standingScope(inner)) })
    expect(seen).toBe('agent:x')
    expect(standingScope(root)).toBeUndefined()
    expect(() => withStandingScope(root, '')).toThrow(TypeError)
  })
})
