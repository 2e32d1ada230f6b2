import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FsError } from '@dsh/fs'
import LocalFileSystem from '@dsh/fs-local'
import * as Policy from '../src/index.ts'

let dir: string
let ctx: Context
let policy: { dispose(): Promise<unknown> }

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-fs-policy-'))
  ctx = new Context()
  await ctx.plugin(LocalFileSystem, LocalFileSystem.Config({}))
  const fiber = ctx.plugin(Policy, Policy.Config({}))
  await fiber
  policy = fiber as never
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function refusal(promise: Promise<unknown>): Promise<FsError> {
  try {
    await promise
  } catch (error) {
    if (error instanceof FsError) return error
    throw error
  }
  throw new Error('expected a refusal')
}

describe('fs-observation-policy', () => {
  it('allows writing a new file and then editing it (its own write is an observation)', async () => {
    const path = join(dir, 'new file ü.txt')
    await ctx.fs.writeFile(path, 'one\n', { session: 'A' })
    await ctx.fs.edit(path, (t) => t.replace('one', 'two'), { session: 'A' })
    await ctx.fs.writeFile(path, 'three\n', { session: 'A' })
    expect(readFileSync(path, 'utf8')).toBe('three\n')
  })

  it('refuses an edit or overwrite of an existing file the session has not read', async () => {
    const path = join(dir, 'unread.txt')
    writeFileSync(path, 'precious\n')
    const edit = await refusal(ctx.fs.edit(path, (t) => t + 'x', { session: 'A' }))
    expect(edit.code).toBe(Policy.NOT_READ)
    expect(edit.message).toContain('Read it with the read tool first')
    const write = await refusal(ctx.fs.writeFile(path, 'clobber', { session: 'A' }))
    expect(write.code).toBe(Policy.NOT_READ)
    expect(readFileSync(path, 'utf8')).toBe('precious\n')
    // Another session's read does not count for A.
    await ctx.fs.readText(path, { session: 'B' })
    expect((await refusal(ctx.fs.edit(path, (t) => t, { session: 'A' }))).code).toBe(Policy.NOT_READ)
    // After reading, the edit goes through.
    await ctx.fs.readText(path, { session: 'A' })
    await ctx.fs.edit(path, (t) => t.toUpperCase(), { session: 'A' })
    expect(readFileSync(path, 'utf8')).toBe('PRECIOUS\n')
  })

  it('refuses an edit of a file that changed on disk since it was read, until it is read again', async () => {
    const path = join(dir, 'stale.txt')
    writeFileSync(path, 'v1\n')
    await ctx.fs.readText(path, { session: 'A' })
    writeFileSync(path, 'v2 changed by someone else\n')
    const stale = await refusal(ctx.fs.edit(path, (t) => t + 'mine', { session: 'A' }))
    expect(stale.code).toBe(Policy.STALE)
    expect(stale.message).toMatch(/changed on disk since it was last read.*Read it again/)
    expect(readFileSync(path, 'utf8')).toBe('v2 changed by someone else\n')
    await ctx.fs.readText(path, { session: 'A' })
    await ctx.fs.edit(path, (t) => t + 'mine', { session: 'A' })
    expect(readFileSync(path, 'utf8')).toBe('v2 changed by someone else\nmine')
  })

  it('a same-size change with a different mtime is caught by the hash; a touch is not a change', async () => {
    const path = join(dir, 'same-size.txt')
    writeFileSync(path, 'aaaa')
    await ctx.fs.readText(path, { session: 'A' })
    const later = new Date(Date.now() + 5_000)
    utimesSync(path, later, later)
    await ctx.fs.edit(path, (t) => t.replace('a', 'b'), { session: 'A' })
    writeFileSync(path, 'cccc')
    utimesSync(path, new Date(Date.now() + 10_000), new Date(Date.now() + 10_000))
    expect((await refusal(ctx.fs.writeFile(path, 'dddd', { session: 'A' }))).code).toBe(Policy.STALE)
  })

  it('another session writing the file makes it stale for this one', async () => {
    const path = join(dir, 'shared.txt')
    writeFileSync(path, 'base\n')
    await ctx.fs.readText(path, { session: 'A' })
    await ctx.fs.readText(path, { session: 'B' })
    await ctx.fs.writeFile(path, 'B was here, longer\n', { session: 'B' })
    expect((await refusal(ctx.fs.edit(path, (t) => t, { session: 'A' }))).code).toBe(Policy.STALE)
  })

  it('calls without a session are not policed; unloading the policy removes the gate', async () => {
    const path = join(dir, 'internal.txt')
    writeFileSync(path, 'x')
    await ctx.fs.writeFile(path, 'harness write')
    writeFileSync(join(dir, 'later.txt'), 'x')
    await policy.dispose()
    await ctx.fs.edit(join(dir, 'later.txt'), () => 'free', { session: 'A' })
    expect(readFileSync(join(dir, 'later.txt'), 'utf8')).toBe('free')
  })
})
