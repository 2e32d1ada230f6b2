// The real pyright language server (npm) on a small Python fixture.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import LspService from '@dsh/lsp'
import SubprocessLocal from '@dsh/subprocess-local'
import * as LspStdio from '../src/index.ts'

const require = createRequire(import.meta.url)
const langserver = join(require.resolve('pyright/package.json'), '..', 'langserver.index.js')

const fibers: { dispose(): unknown }[] = []
afterEach(async () => {
  for (const fiber of fibers.splice(0)) await fiber.dispose()
})

describe('@dsh/lsp-stdio with pyright', () => {
  it('answers definition, references and hover, and reports a new type error', { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-pyright-'))
    mkdirSync(join(dir, 'pkg'))
    writeFileSync(join(dir, 'pyrightconfig.json'), JSON.stringify({ include: ['pkg'] }))
    writeFileSync(join(dir, 'pkg/__init__.py'), '')
    writeFileSync(
      join(dir, 'pkg/geometry.py'),
      'def area(width: int, height: int) -> int:\n    return width * height\n',
    )
    writeFileSync(
      join(dir, 'pkg/main.py'),
      'from pkg.geometry import area\n\ntotal = area(2, 3)\nprint(area(total, 1))\n',
    )
    const ctx = new Context()
    const config = {
      servers: {
        python: {
          command: process.execPath,
          args: [langserver, '--stdio'],
          extensions: ['.py'],
          rootMarkers: ['pyrightconfig.json'],
        },
      },
    }
    for (const [plugin, cfg] of [
      [LspService, {}],
      [SubprocessLocal, {}],
      [LspStdio, config],
    ] as const) {
      const fiber = ctx.plugin(plugin as never, cfg as never)
      await fiber
      fibers.push(fiber)
    }
    const main = join(dir, 'pkg/main.py')
    const geometry = join(dir, 'pkg/geometry.py')
    const definition = await ctx.lsp.definition(main, { line: 2, character: 9 })
    expect(definition).toEqual([expect.objectContaining({ path: geometry, start: { line: 0, character: 4 } })])
    const references = await ctx.lsp.references(geometry, { line: 0, character: 5 })
    expect(
      references
        .filter((r) => r.path === main)
        .map((r) => r.start.line)
        .sort(),
    ).toEqual([0, 2, 3])
    expect((await ctx.lsp.hover(main, { line: 2, character: 9 }))?.replace(/\s+/g, ' ')).toContain(
      'def area( width: int, height: int ) -> int',
    )
    writeFileSync(main, 'from pkg.geometry import area\n\ntotal: str = area(2, 3)\n')
    const errors = (await ctx.lsp.diagnostics(main)).filter((d) => d.severity === 'error')
    expect(errors).toEqual([
      expect.objectContaining({
        start: { line: 2, character: 13 },
        message: expect.stringContaining('"int" is not assignable to "str"'),
      }),
    ])
  })
})
