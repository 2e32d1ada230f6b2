// The ctx.shell seam, exercised through the shipped local provider: a provider occupies
// `ctx.shell` while loaded and frees it on unload; a bad request is a ShellError with a stable code
// (never a run), and a command's own failure is a result, not a rejection.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import LocalSubprocess from '@dsh/subprocess-local'
import BashLocalExecutor from '@dsh/bash-local'
import { ShellError, ShellExecutor } from '../src/index.ts'

async function boot() {
  const ctx = new Context()
  await ctx.plugin(LocalSubprocess, {} as never)
  const fiber = ctx.plugin(BashLocalExecutor, {} as never)
  await fiber
  return { ctx, fiber }
}

describe('ctx.shell', () => {
  it('is provided by an executor while it is loaded and gone after unload', async () => {
    const { ctx, fiber } = await boot()
    expect(ctx.shell).toBeInstanceOf(ShellExecutor)
    expect(ctx.shell.dialect).toBe('bash')
    await fiber.dispose()
    expect(ctx.get('shell')).toBeUndefined()
  })

  it('refuses a bad request with a ShellError code before anything runs', async () => {
    const { ctx } = await boot()
    const dir = mkdtempSync(join(tmpdir(), 'dsh-shell-seam-'))
    writeFileSync(join(dir, 'file'), '')
    for (const [request, code] of [
      [{ command: 'true', cwd: join(dir, 'missing') }, 'WORKDIR_NOT_FOUND'],
      [{ command: 'true', cwd: join(dir, 'file') }, 'WORKDIR_NOT_DIRECTORY'],
      [{ command: 'true', cwd: 'relative/dir' }, 'INVALID_REQUEST'],
      [{ command: 'echo a\0b', cwd: dir }, 'INVALID_REQUEST'],
    ] as const) {
      const error = await ctx.shell.resolve(request as never).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(error, code).toBeInstanceOf(ShellError)
      expect((error as ShellError).code).toBe(code)
    }
  })

  it('reports a failing command as a result with its exit code', async () => {
    const { ctx } = await boot()
    const spec = await ctx.shell.resolve({ command: 'echo out; exit 3', cwd: tmpdir() } as never)
    const result = await ctx.shell.run(spec)
    expect(result).toMatchObject({ status: 'exited', exitCode: 3 })
  })
})
