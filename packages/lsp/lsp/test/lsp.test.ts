// The `ctx.lsp` seam in a real Cordis tree, with small providers written here (one per extension)
// registered from their own plugins, as `@dsh/lsp-stdio` does.
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import LspService, {
  LspError,
  type Diagnostic,
  type Location,
  type LspProvider,
  type Position,
  type SymbolInfo,
} from '@dsh/lsp'

/** A provider that serves files ending in one of `extensions` and answers with its own id in every result. */
function provider(id: string, extensions: string[], calls: string[] = []): LspProvider {
  const loc = (path: string, start: Position): Location => ({
    path: `${path}#${id}`,
    start,
    end: { line: start.line, character: start.character + 1 },
  })
  const symbol = (name: string, path: string): SymbolInfo => ({
    name,
    kind: 'Function',
    location: loc(path, { line: 0, character: 0 }),
    container: id,
  })
  return {
    id,
    handles: (path) => extensions.some((ext) => path.endsWith(ext)),
    async definition(path, position) {
      calls.push(`definition ${path} ${position.line}:${position.character}`)
      return [loc(path, position)]
    },
    async references(path, position) {
      calls.push(`references ${path}`)
      return [loc(path, position), loc(path, { line: position.line + 1, character: 0 })]
    },
    async implementations(path, position) {
      calls.push(`implementations ${path}`)
      return [loc(path, position)]
    },
    async hover(path) {
      calls.push(`hover ${path}`)
      return `hover from ${id}`
    },
    async documentSymbols(path) {
      calls.push(`documentSymbols ${path}`)
      return [symbol('doc', path)]
    },
    async workspaceSymbols(query, near) {
      calls.push(`workspaceSymbols ${query} ${near}`)
      return [symbol(query, near)]
    },
    async diagnostics(path): Promise<Diagnostic[]> {
      calls.push(`diagnostics ${path}`)
      return [
        {
          path,
          start: { line: 0, character: 0 },
          end: { line: 0, character: 1 },
          severity: 'error',
          message: `from ${id}`,
          source: id,
        },
      ]
    },
  }
}

/** A plugin that registers `p` through `ctx.lsp` and keeps the disposer it got. */
function providerPlugin(p: LspProvider, out: { dispose?: () => void } = {}) {
  return {
    name: `test-lsp-${p.id}`,
    inject: ['lsp'],
    apply(ctx: Context) {
      out.dispose = ctx.lsp.register(p)
    },
  }
}

const fibers: { dispose(): unknown }[] = []
afterEach(async () => {
  for (const fiber of fibers.splice(0).reverse()) await fiber.dispose()
})

async function boot() {
  const ctx = new Context()
  const fiber = ctx.plugin(LspService)
  await fiber
  fibers.push(fiber)
  return ctx
}

async function mount(ctx: Context, p: LspProvider, out?: { dispose?: () => void }) {
  const fiber = ctx.plugin(providerPlugin(p, out))
  await fiber
  fibers.push(fiber)
  return fiber
}

describe('@dsh/lsp', () => {
  it('routes each method to the provider that handles the file and passes arguments through', async () => {
    const ctx = await boot()
    const calls: string[] = []
    await mount(ctx, provider('ts', ['.ts'], calls))
    await mount(ctx, provider('py', ['.py'], calls))
    expect(ctx.lsp.list()).toEqual(['ts', 'py'])
    expect(ctx.lsp.providerFor('/w/a.ts')?.id).toBe('ts')
    expect(ctx.lsp.providerFor('/w/b.py')?.id).toBe('py')
    expect(ctx.lsp.providerFor('/w/c.rs')).toBeUndefined()

    const pos = { line: 3, character: 7 }
    expect(await ctx.lsp.definition('/w/a.ts', pos)).toEqual([
      { path: '/w/a.ts#ts', start: pos, end: { line: 3, character: 8 } },
    ])
    expect((await ctx.lsp.references('/w/b.py', pos)).map((l) => l.path)).toEqual(['/w/b.py#py', '/w/b.py#py'])
    expect((await ctx.lsp.implementations('/w/b.py', pos))[0].path).toBe('/w/b.py#py')
    expect(await ctx.lsp.hover('/w/a.ts', pos)).toBe('hover from ts')
    expect(await ctx.lsp.documentSymbols('/w/b.py')).toEqual([
      {
        name: 'doc',
        kind: 'Function',
        location: { path: '/w/b.py#py', start: { line: 0, character: 0 }, end: { line: 0, character: 1 } },
        container: 'py',
      },
    ])
    expect(await ctx.lsp.diagnostics('/w/a.ts')).toEqual([
      {
        path: '/w/a.ts',
        start: { line: 0, character: 0 },
        end: { line: 0, character: 1 },
        severity: 'error',
        message: 'from ts',
        source: 'ts',
      },
    ])
    // workspaceSymbols picks the server by `near`, not by the query text.
    expect((await ctx.lsp.workspaceSymbols('thing.ts', '/w/pkg/main.py'))[0].container).toBe('py')
    expect(calls).toEqual([
      'definition /w/a.ts 3:7',
      'references /w/b.py',
      'implementations /w/b.py',
      'hover /w/a.ts',
      'documentSymbols /w/b.py',
      'diagnostics /w/a.ts',
      'workspaceSymbols thing.ts /w/pkg/main.py',
    ])
  })

  it('gives a file to the first registered provider that handles it', async () => {
    const ctx = await boot()
    await mount(ctx, provider('first', ['.ts']))
    await mount(ctx, provider('second', ['.ts', '.tsx']))
    expect(ctx.lsp.providerFor('/w/a.ts')?.id).toBe('first')
    expect(await ctx.lsp.hover('/w/a.ts', { line: 0, character: 0 })).toBe('hover from first')
    // The second still serves what the first does not.
    expect(await ctx.lsp.hover('/w/a.tsx', { line: 0, character: 0 })).toBe('hover from second')
  })

  it('rejects every method with LspError NO_SERVER naming the file when no provider handles it', async () => {
    const ctx = await boot()
    const pos = { line: 0, character: 0 }
    const none = [
      () => ctx.lsp.definition('/w/x.rs', pos),
      () => ctx.lsp.references('/w/x.rs', pos),
      () => ctx.lsp.implementations('/w/x.rs', pos),
      () => ctx.lsp.hover('/w/x.rs', pos),
      () => ctx.lsp.documentSymbols('/w/x.rs'),
      () => ctx.lsp.workspaceSymbols('q', '/w/x.rs'),
      () => ctx.lsp.diagnostics('/w/x.rs'),
    ]
    for (const call of none) {
      // A rejection, not a synchronous throw: callers `await` or `.catch()` it.
      const pending = call()
      expect(pending).toBeInstanceOf(Promise)
      const error = await pending.then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(error).toBeInstanceOf(LspError)
      expect(error).toMatchObject({
        name: 'LspError',
        code: 'NO_SERVER',
        message: 'no language server is configured for /w/x.rs',
      })
    }
    // Still NO_SERVER with a provider for other files.
    await mount(ctx, provider('ts', ['.ts']))
    await expect(ctx.lsp.hover('/w/x.rs', pos)).rejects.toMatchObject({ code: 'NO_SERVER' })
  })

  it('unregisters a provider when its plugin is disposed, and lets the id register again', async () => {
    const ctx = await boot()
    const fiber = await mount(ctx, provider('ts', ['.ts']))
    await mount(ctx, provider('py', ['.py']))
    expect(ctx.lsp.list()).toEqual(['ts', 'py'])
    await fiber.dispose()
    expect(ctx.lsp.list()).toEqual(['py'])
    expect(ctx.lsp.providerFor('/w/a.ts')).toBeUndefined()
    await expect(ctx.lsp.definition('/w/a.ts', { line: 0, character: 0 })).rejects.toMatchObject({ code: 'NO_SERVER' })
    await mount(ctx, provider('ts', ['.ts']))
    expect(ctx.lsp.list()).toEqual(['py', 'ts'])
  })

  it('unregisters through the returned disposer, once, without touching other providers', async () => {
    const ctx = await boot()
    const handle: { dispose?: () => void } = {}
    await mount(ctx, provider('ts', ['.ts']), handle)
    await mount(ctx, provider('py', ['.py']))
    handle.dispose!()
    expect(ctx.lsp.list()).toEqual(['py'])
    handle.dispose!()
    expect(ctx.lsp.list()).toEqual(['py'])
  })

  it('refuses a second provider with the same id and keeps the first', async () => {
    const ctx = await boot()
    await mount(ctx, provider('ts', ['.ts']))
    expect(() => ctx.lsp.register(provider('ts', ['.py']))).toThrow(
      new TypeError('lsp.register: provider "ts" is already registered'),
    )
    expect(ctx.lsp.list()).toEqual(['ts'])
    expect(ctx.lsp.providerFor('/w/a.py')).toBeUndefined()
    expect(ctx.lsp.providerFor('/w/a.ts')?.id).toBe('ts')
  })

  it('propagates a provider failure unchanged', async () => {
    const ctx = await boot()
    const failing: LspProvider = {
      ...provider('bad', ['.go']),
      definition: async () => {
        throw new LspError('SERVER_FAILED', 'gopls exited with code 2')
      },
    }
    await mount(ctx, failing)
    await expect(ctx.lsp.definition('/w/m.go', { line: 0, character: 0 })).rejects.toMatchObject({
      name: 'LspError',
      code: 'SERVER_FAILED',
      message: 'gopls exited with code 2',
    })
  })
})
