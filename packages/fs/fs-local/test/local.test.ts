import { spawn } from 'node:child_process'
import {
  mkdtempSync,
  promises as fsp,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
  chmodSync,
  symlinkSync,
  readlinkSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FsError, sha256, type FsBeforeWritePayload, type FsReadEvent, type FsWroteEvent } from '@dsh/fs'
import LocalFileSystem, { TEMP_SUFFIX } from '../src/index.ts'

let dir: string
let ctx: Context

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-fs-local-'))
  ctx = new Context()
  await ctx.plugin(LocalFileSystem, LocalFileSystem.Config({}))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const code = async (promise: Promise<unknown>) => {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(FsError)
    return (error as FsError).code
  }
  throw new Error('expected a rejection')
}

describe('LocalFileSystem', () => {
  it('writes, reads and stats a path with spaces and unicode', async () => {
    const path = join(dir, 'dir with spaces', 'ünïcödé 文件 😀.txt')
    const result = await ctx.fs.writeFile(path, 'héllo\n', { createParents: true })
    expect(result.created).toBe(true)
    expect(readFileSync(path, 'utf8')).toBe('héllo\n')
    const read = await ctx.fs.readText(path)
    expect(read.text).toBe('héllo\n')
    expect(read.hash).toBe(sha256(new TextEncoder().encode('héllo\n')))
    expect((await ctx.fs.stat(path)).size).toBe(Buffer.byteLength('héllo\n'))
    expect(await ctx.fs.exists(path)).toBe(true)
    expect((await ctx.fs.list(join(dir, 'dir with spaces'))).map((e) => e.name)).toEqual(['ünïcödé 文件 😀.txt'])
  })

  it('maps errno failures to stable codes', async () => {
    expect(await code(ctx.fs.readFile(join(dir, 'missing.txt')))).toBe('NOT_FOUND')
    expect(await code(ctx.fs.readFile(dir))).toBe('IS_DIRECTORY')
    expect(await code(ctx.fs.writeFile(join(dir, 'no', 'parent.txt'), 'x'))).toBe('NOT_FOUND')
    expect(await code(ctx.fs.writeFile(dir, 'x'))).toBe('IS_DIRECTORY')
    expect(await code(ctx.fs.edit(join(dir, 'missing.txt'), (t) => t))).toBe('NOT_FOUND')
    expect(await code(ctx.fs.remove(join(dir, 'missing.txt')))).toBe('NOT_FOUND')
    await ctx.fs.remove(join(dir, 'missing.txt'), { force: true })
    expect(await code(ctx.fs.stat(''))).toBe('NOT_FOUND')
  })

  it('preserves the mode of an existing file and writes through symlinks', async () => {
    const path = join(dir, 'script.sh')
    writeFileSync(path, 'echo old\n')
    chmodSync(path, 0o751)
    await ctx.fs.writeFile(path, 'echo new\n')
    expect(statSync(path).mode & 0o7777).toBe(0o751)
    const link = join(dir, 'link.sh')
    symlinkSync(path, link)
    await ctx.fs.writeFile(link, 'echo via link\n')
    expect(readlinkSync(link)).toBe(path)
    expect(readFileSync(path, 'utf8')).toBe('echo via link\n')
  })

  it('edit is one critical section: concurrent edits of one path never lose an update', async () => {
    const path = join(dir, 'counter.txt')
    writeFileSync(path, '0')
    await Promise.all(Array.from({ length: 25 }, () => ctx.fs.edit(path, (text) => String(Number(text) + 1))))
    expect(readFileSync(path, 'utf8')).toBe('25')
    const result = await ctx.fs.edit(path, (text) => text + '!')
    expect(result.before).toBe('25')
    expect(result.after).toBe('25!')
  })

  it('a throwing transform writes nothing and its error reaches the caller unchanged', async () => {
    const path = join(dir, 'keep.txt')
    writeFileSync(path, 'keep')
    const boom = new RangeError('no match')
    await expect(
      ctx.fs.edit(path, () => {
        throw boom
      }),
    ).rejects.toBe(boom)
    expect(readFileSync(path, 'utf8')).toBe('keep')
  })

  it('runs the fs/before-write gate and emits fs/read and fs/wrote with the session', async () => {
    const path = join(dir, 'gated.txt')
    writeFileSync(path, 'original')
    const gates: Array<{ kind: string; current?: number; hash?: string }> = []
    const reads: FsReadEvent[] = []
    const writes: FsWroteEvent[] = []
    const fiber = ctx.plugin({
      name: 'probe',
      apply(c: Context) {
        c.on('fs/before-write', async (payload: FsBeforeWritePayload, next) => {
          gates.push({ kind: payload.kind, current: payload.current?.size, hash: await payload.currentHash() })
          if (payload.path.endsWith('gated.txt') && payload.kind === 'write') {
            payload.deny = { code: 'NOPE', message: 'not this one' }
            return
          }
          return next()
        })
        c.on('fs/read', (event) => void reads.push(event))
        c.on('fs/wrote', (event) => void writes.push(event))
      },
    })
    await fiber
    try {
      await ctx.fs.readText(path, { session: 's1' })
      expect(reads).toMatchObject([{ path, session: 's1', hash: sha256(Buffer.from('original')) }])
      expect(await code(ctx.fs.writeFile(path, 'changed', { session: 's1' }))).toBe('NOPE')
      expect(readFileSync(path, 'utf8')).toBe('original')
      await ctx.fs.edit(path, (t) => t.toUpperCase(), { session: 's1' })
      await ctx.fs.writeFile(join(dir, 'gated-new.txt'), 'n', { session: 's1' })
      expect(gates).toEqual([
        { kind: 'write', current: 8, hash: sha256(Buffer.from('original')) },
        { kind: 'edit', current: 8, hash: sha256(Buffer.from('original')) },
        { kind: 'write', current: undefined, hash: undefined },
      ])
      expect(writes.map((w) => [w.kind, w.created, w.session])).toEqual([
        ['edit', false, 's1'],
        ['write', true, 's1'],
      ])
      expect(writes[0].hash).toBe(sha256(Buffer.from('ORIGINAL')))
    } finally {
      await fiber.dispose()
    }
    // The probe is gone: the same write now passes.
    await ctx.fs.writeFile(path, 'changed')
    expect(readFileSync(path, 'utf8')).toBe('changed')
  })

  it('mkdir, list, remove', async () => {
    const sub = join(dir, 'tree', 'a', 'b')
    await ctx.fs.mkdir(sub, { recursive: true })
    await ctx.fs.writeFile(join(sub, 'f.txt'), 'f')
    expect(await ctx.fs.readdir(join(dir, 'tree', 'a'))).toEqual([{ name: 'b', kind: 'directory' }])
    expect(await code(ctx.fs.remove(join(dir, 'tree')))).toBe('NOT_EMPTY')
    await ctx.fs.remove(join(dir, 'tree'), { recursive: true })
    expect(await ctx.fs.exists(join(dir, 'tree'))).toBe(false)
  })

  it('a write killed midway leaves the old content or the new, never a partial file', async () => {
    const target = join(dir, 'big.bin')
    const old = 'old content\n'
    writeFileSync(target, old)
    const size = 96 * 1024 * 1024
    const child = spawn(
      fileURLToPath(new URL('../../../../node_modules/.bin/tsx', import.meta.url)),
      [fileURLToPath(new URL('./fixtures/atomic-writer.ts', import.meta.url)), target, String(size)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    )
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)))
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    // Kill as soon as a temp file with some (not all) bytes exists.
    let sawPartialTemp = false
    for (let i = 0; i < 20_000 && !output.includes('done'); i++) {
      const temp = readdirSync(dir).find((name) => name.endsWith(TEMP_SUFFIX))
      if (temp) {
        const tempSize = (await fsp.stat(join(dir, temp)).catch(() => undefined))?.size ?? 0
        if (tempSize > 0 && tempSize < size) {
          child.kill('SIGKILL')
          sawPartialTemp = true
          break
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
    await exited
    const content = readFileSync(target)
    expect(content.length === old.length || content.length === size).toBe(true)
    if (content.length === old.length) expect(content.toString()).toBe(old)
    else expect(content.every((byte) => byte === 78)).toBe(true)
    if (sawPartialTemp) expect(content.toString()).toBe(old)
    expect(sawPartialTemp).toBe(true)
    // A leftover temp file is recognizable and never the target's name.
    for (const name of readdirSync(dir).filter((n) => n.startsWith('.big.bin.')))
      expect(name.endsWith(TEMP_SUFFIX)).toBe(true)
  }, 30_000)

  it('rejects bad config at load', async () => {
    const c = new Context()
    const errors: unknown[] = []
    c.on('internal/error' as never, ((e: unknown) => errors.push(e)) as never)
    // The fiber settles with the schema error: wait for that, not for time.
    await expect(c.plugin(LocalFileSystem, { chunkBytes: 12 } as never)).rejects.toThrow(/4096/)
    expect(c.get('fs')).toBeUndefined()
  })
})
