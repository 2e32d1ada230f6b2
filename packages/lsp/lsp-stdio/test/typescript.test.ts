// The real typescript-language-server (npm) on a small fixture project.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import LspService from '@dsh/lsp'
import SubprocessLocal from '@dsh/subprocess-local'
import * as LspStdio from '../src/index.ts'

const require = createRequire(import.meta.url)
const tsls = join(require.resolve('typescript-language-server/package.json'), '..', 'lib', 'cli.mjs')
const tsserver = require.resolve('typescript/lib/tsserver.js')

export function typescriptServer() {
  return {
    command: process.execPath,
    args: [tsls, '--stdio'],
    extensions: ['.ts'],
    rootMarkers: ['tsconfig.json'],
    // One tsserver, not a syntax server answering from a partial view while the project loads.
    initializationOptions: { tsserver: { path: tsserver, useSyntaxServer: 'never' } },
  }
}

export function fixture(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-lsp-'))
  mkdirSync(join(dir, 'src'))
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { strict: true, target: 'es2022', module: 'esnext', moduleResolution: 'bundler', noEmit: true },
      include: ['src'],
    }),
  )
  writeFileSync(
    join(dir, 'src/math.ts'),
    'export function add(a: number, b: number): number {\n  return a + b\n}\n\nexport interface Shape {\n  area(): number\n}\n\nexport class Square implements Shape {\n  constructor(readonly side: number) {}\n  area(): number {\n    return this.side * this.side\n  }\n}\n',
  )
  writeFileSync(
    join(dir, 'src/main.ts'),
    "import { add, Square } from './math'\n\nconst total = add(1, 2)\nconst s = new Square(total)\nconsole.log(add(s.area(), 1))\n",
  )
  return dir
}

/** Boots the service and the provider; `onFinished` (the test's own hook) disposes them after it. */
async function boot(config: object, onFinished: (fn: () => Promise<void>) => void) {
  const ctx = new Context()
  const fibers: { dispose(): unknown }[] = []
  onFinished(async () => {
    for (const fiber of fibers.reverse()) await fiber.dispose()
  })
  for (const [plugin, cfg] of [
    [LspService, {}],
    [SubprocessLocal, {}],
    [LspStdio, config],
  ] as const) {
    const fiber = ctx.plugin(plugin as never, cfg as never)
    await fiber
    fibers.push(fiber)
  }
  return ctx
}

// The two server cases run side by side: the second waits 6 s for its server on purpose, time the
// first (a real project load) can use.
describe('@dsh/lsp-stdio with typescript-language-server', () => {
  it.concurrent('answers definition, references, hover, implementations and symbols, and reports a new type error', {
    timeout: 180_000,
  }, async ({ onTestFinished }) => {
    const dir = fixture()
    const ctx = await boot({ servers: { typescript: typescriptServer() } }, onTestFinished)
    const main = join(dir, 'src/main.ts')
    const math = join(dir, 'src/math.ts')
    // `add` in `const total = add(1, 2)`: line 2, character 14 (0-based).
    const definition = await ctx.lsp.definition(main, { line: 2, character: 14 })
    expect(definition).toEqual([expect.objectContaining({ path: math, start: { line: 0, character: 16 } })])
    const references = await ctx.lsp.references(math, { line: 0, character: 16 })
    expect(references.map((r) => `${r.path === main ? 'main' : 'math'}:${r.start.line}`).sort()).toEqual([
      'main:0',
      'main:2',
      'main:4',
      'math:0',
    ])
    const hover = await ctx.lsp.hover(main, { line: 2, character: 14 })
    expect(hover).toContain('add(a: number, b: number): number')
    const implementations = await ctx.lsp.implementations(math, { line: 4, character: 17 })
    expect(implementations.map((l) => l.start.line)).toContain(8)
    const symbols = await ctx.lsp.documentSymbols(math)
    expect(symbols.map((s) => `${s.kind} ${s.name}`)).toEqual(
      expect.arrayContaining(['Function add', 'Interface Shape', 'Class Square', 'Method area']),
    )
    const found = await ctx.lsp.workspaceSymbols('Square', main)
    expect(found.some((s) => s.name === 'Square' && s.location.path === math)).toBe(true)

    expect((await ctx.lsp.diagnostics(main)).filter((d) => d.severity === 'error')).toEqual([])
    writeFileSync(main, "import { add } from './math'\n\nconst total: string = add(1, 2)\n")
    const diagnostics = (await ctx.lsp.diagnostics(main)).filter((d) => d.severity === 'error')
    expect(diagnostics).toEqual([
      expect.objectContaining({
        severity: 'error',
        start: { line: 2, character: 6 },
        message: "Type 'number' is not assignable to type 'string'.",
        code: '2322',
      }),
    ])
  })

  it.concurrent('a slow server start does not use up the diagnostics wait: it counts from the change, once the server is ready', {
    timeout: 180_000,
  }, async ({ onTestFinished }) => {
    const dir = fixture()
    writeFileSync(join(dir, 'src/main.ts'), "import { add } from './math'\n\nconst total: string = add(1, 2)\n")
    const server = typescriptServer()
    // The server answers `initialize` only after 6 s (a cold disk, a loaded machine), longer than
    // the whole diagnostics wait of 5 s: the wait must start once the change reached the server.
    const slow = {
      ...server,
      command: '/bin/sh',
      args: ['-c', 'sleep 6; exec "$0" "$@"', server.command, ...server.args],
    }
    const ctx = await boot({ servers: { typescript: slow }, diagnosticsWaitMs: 5_000 }, onTestFinished)
    const errors = (await ctx.lsp.diagnostics(join(dir, 'src/main.ts'))).filter((d) => d.severity === 'error')
    expect(errors.map((d) => d.code)).toEqual(['2322'])
  })

  it('fails with a clear error when the server cannot start, and answers NO_SERVER for other files', async ({
    onTestFinished,
  }) => {
    const dir = fixture()
    const ctx = await boot(
      { servers: { broken: { command: 'dsh-no-such-language-server', extensions: ['.ts'] } } },
      onTestFinished,
    )
    await expect(ctx.lsp.hover(join(dir, 'src/main.ts'), { line: 0, character: 0 })).rejects.toMatchObject({
      code: 'SERVER_FAILED',
      message: 'language server "broken" did not start: could not start "dsh-no-such-language-server": ENOENT',
    })
    await expect(ctx.lsp.hover(join(dir, 'README.md'), { line: 0, character: 0 })).rejects.toMatchObject({
      code: 'NO_SERVER',
    })
  })
})
