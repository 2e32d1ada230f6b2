// Where a server's command comes from, and optional servers: a bare name from the nearest
// node_modules/.bin at or above the workspace root (only for confined servers: it is code the
// project ships), then PATH; an optional server whose command is found nowhere serves no file.
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import LspService from '@dsh/lsp'
import SubprocessLocal from '@dsh/subprocess-local'
import * as LspStdio from '../src/index.ts'
import { Config, resolveCommand } from '../src/index.ts'

const base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-lsp-resolve-')))
afterAll(() => rmSync(base, { recursive: true, force: true }))
const fibers: { dispose(): unknown }[] = []
afterEach(async () => {
  for (const fiber of fibers.splice(0)) await fiber.dispose()
})

function file(path: string, mode: number): string {
  mkdirSync(join(path, '..'), { recursive: true })
  writeFileSync(path, '#!/bin/sh\n')
  chmodSync(path, mode)
  return path
}

describe('resolveCommand', () => {
  const project = join(base, 'mono')
  const pkg = join(project, 'packages/app')
  const bin = file(join(project, 'node_modules/.bin/tsls'), 0o755)
  file(join(project, 'node_modules/.bin/plain'), 0o644)
  const pathDir = join(base, 'path-bin')
  const onPath = file(join(pathDir, 'tsls'), 0o755)
  file(join(pathDir, 'other'), 0o755)
  mkdirSync(pkg, { recursive: true })

  it("finds a bare name in the nearest node_modules/.bin above the root, before PATH, only for the project's bins", () => {
    expect(resolveCommand('tsls', pkg, { projectBins: true, path: pathDir })).toBe(bin)
    expect(resolveCommand('tsls', pkg, { projectBins: false, path: pathDir })).toBe(onPath)
    expect(resolveCommand('other', pkg, { projectBins: true, path: pathDir })).toBe(join(pathDir, 'other'))
  })

  it('skips files that are not executable, relative PATH entries and missing names', () => {
    expect(resolveCommand('plain', pkg, { projectBins: true, path: pathDir })).toBeUndefined()
    expect(resolveCommand('tsls', pkg, { projectBins: false, path: `relative:${base}/nowhere` })).toBeUndefined()
    expect(resolveCommand('missing', pkg, { projectBins: true, path: pathDir })).toBeUndefined()
  })

  it('takes a command with a slash as a path relative to the root', () => {
    expect(resolveCommand('node_modules/.bin/tsls', project, { projectBins: false, path: '' })).toBe(bin)
    expect(resolveCommand('./nope/tsls', project, { projectBins: false, path: '' })).toBeUndefined()
  })
})

describe('optional servers', () => {
  async function boot(servers: Record<string, object>): Promise<Context> {
    const ctx = new Context()
    for (const [plugin, config] of [
      [SubprocessLocal, { watchdog: false }],
      [LspService, {}],
      [LspStdio, { servers }],
    ] as const) {
      const fiber = ctx.plugin(plugin as never, config as never)
      await fiber
      fibers.push(fiber)
    }
    return ctx
  }

  it('serve no file while the command is missing, and pick it up once installed', async () => {
    const root = join(base, 'late')
    mkdirSync(root, { recursive: true })
    writeFileSync(join(root, 'tsconfig.json'), '{}')
    const ctx = await boot({
      ts: { command: './tools/server', extensions: ['.ts'], rootMarkers: ['tsconfig.json'], optional: true },
      required: { command: './tools/server', extensions: ['.mts'], rootMarkers: ['tsconfig.json'] },
    })
    expect(ctx.lsp.providerFor(join(root, 'a.ts'))).toBeUndefined()
    await expect(ctx.lsp.diagnostics(join(root, 'a.ts'))).rejects.toMatchObject({ code: 'NO_SERVER' })
    // Not optional: the file is handled and the question fails, naming the command.
    expect(ctx.lsp.providerFor(join(root, 'a.mts'))?.id).toBe('required')
    file(join(root, 'tools/server'), 0o755)
    expect(ctx.lsp.providerFor(join(root, 'a.ts'))?.id).toBe('ts')
  })

  it("never take an unconfined server from the project's node_modules/.bin", async () => {
    const root = join(base, 'shipped')
    file(join(root, 'node_modules/.bin/project-server'), 0o755)
    writeFileSync(join(root, 'package.json'), '{}')
    const ctx = await boot({
      ts: { command: 'project-server', extensions: ['.ts'], rootMarkers: ['package.json'], optional: true },
    })
    expect(ctx.lsp.providerFor(join(root, 'a.ts'))).toBeUndefined()
  })

  it('reject a bad optional value in the row', () => {
    expect(() => Config({ servers: { ts: { command: 'x', extensions: ['.ts'], optional: 'yes' } } } as never)).toThrow(
      /optional/,
    )
  })
})
