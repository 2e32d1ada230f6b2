import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import AnonymousUserId, { FILE_NAME, readOrCreate } from '../src/index.ts'

const home = () => mkdtempSync(join(tmpdir(), 'dsh-anon-'))

describe('@dsh/anonymous-user-id', () => {
  it('creates a UUID on first use (0600), keeps it, and resets when the file is deleted', async () => {
    const dir = home()
    const ctx = new Context()
    await ctx.plugin(AnonymousUserId, { home: dir })
    expect(() => statSync(join(dir, FILE_NAME))).toThrow() // nothing written at load
    const first = ctx.anonymousUserId.get()
    expect(first).toMatch(/^[0-9a-f-]{36}$/)
    expect(statSync(join(dir, FILE_NAME)).mode & 0o777).toBe(0o600)
    expect(ctx.anonymousUserId.get()).toBe(first)
    rmSync(join(dir, FILE_NAME))
    const second = ctx.anonymousUserId.get()
    expect(second).not.toBe(first)
    expect(readFileSync(join(dir, FILE_NAME), 'utf8').trim()).toBe(second)
  })

  it('replaces content that is not a UUID', () => {
    const dir = home()
    writeFileSync(join(dir, FILE_NAME), 'not-an-id\n')
    const result = readOrCreate(join(dir, FILE_NAME))
    expect(result.origin).toBe('replaced')
    expect(readFileSync(join(dir, FILE_NAME), 'utf8').trim()).toBe(result.id)
  })

  it('two processes racing on first use agree on one id', () => {
    const dir = home()
    const script = fileURLToPath(new URL('../src/index.ts', import.meta.url))
    const code = `import('${script}').then((m) => console.log(m.readOrCreate(process.argv[1]).id))`
    const file = join(dir, FILE_NAME)
    const runs = [0, 1, 2].map(() =>
      spawnSync(process.execPath, ['--import', 'tsx', '--conditions=development', '-e', code, file], {
        encoding: 'utf8',
      }),
    )
    const ids = new Set(runs.map((r) => r.stdout.trim()))
    expect(runs.every((r) => r.status === 0)).toBe(true)
    expect(ids.size).toBe(1)
    expect([...ids][0]).toBe(readFileSync(file, 'utf8').trim())
  })
})
