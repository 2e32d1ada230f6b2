// The base class owns gating and observation; a provider only supplies primitives. An in-memory
// provider here proves the contract holds for any provider, independent of fs-local.
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import {
  FileSystem,
  FsError,
  PathLock,
  sha256,
  toFsError,
  type CommitOptions,
  type DirEntry,
  type FileStat,
} from '../src/index.ts'

class MemoryFileSystem extends FileSystem {
  files = new Map<string, { bytes: Uint8Array; mtimeMs: number; mode: number }>()
  protected async statPath(path: string): Promise<FileStat | undefined> {
    const file = this.files.get(path)
    return file && { kind: 'file', size: file.bytes.length, mtimeMs: file.mtimeMs, mode: file.mode }
  }
  protected async readBytes(path: string): Promise<Uint8Array> {
    const file = this.files.get(path)
    if (!file) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' })
    return file.bytes
  }
  protected async commitBytes(path: string, data: Uint8Array, options: CommitOptions): Promise<FileStat> {
    await new Promise((resolve) => setTimeout(resolve, 1))
    this.files.set(path, { bytes: data, mtimeMs: Date.now(), mode: options.mode ?? 0o644 })
    return (await this.statPath(path))!
  }
  protected async listDir(): Promise<DirEntry[]> {
    return [...this.files.keys()].map((name) => ({ name, kind: 'file' as const }))
  }
  protected async makeDir(): Promise<void> {}
  protected async removePath(path: string): Promise<void> {
    this.files.delete(path)
  }
}

describe('FileSystem contract', () => {
  it('gates mutations, emits observations, and serializes edits of one path', async () => {
    const ctx = new Context()
    await ctx.plugin(MemoryFileSystem)
    const seen: string[] = []
    ctx.on('fs/read', (e) => void seen.push(`read ${e.path} ${e.session}`))
    ctx.on('fs/wrote', (e) => void seen.push(`${e.kind} ${e.path} ${e.created}`))
    ctx.on('fs/before-write', async (payload, next) => {
      if (payload.path === '/locked') {
        payload.deny = { code: 'LOCKED', message: 'locked by test' }
        return
      }
      return next()
    })
    await ctx.fs.writeFile('/a', 'x', { session: 's' })
    await Promise.all(Array.from({ length: 10 }, () => ctx.fs.edit('/a', (t) => t + 'x')))
    expect((await ctx.fs.readText('/a', { session: 's' })).text).toBe('x'.repeat(11))
    const denied = await ctx.fs.writeFile('/locked', 'no').catch((e: unknown) => e)
    expect(denied).toBeInstanceOf(FsError)
    expect(denied).toMatchObject({ code: 'LOCKED', message: 'locked by test', path: '/locked' })
    expect(await ctx.fs.exists('/locked')).toBe(false)
    await ctx.fs.remove('/a')
    expect(seen[0]).toBe('write /a true')
    expect(seen.filter((s) => s.startsWith('edit'))).toHaveLength(10)
    expect(seen.slice(-2)).toEqual(['read /a s', 'remove /a false'])
    expect(ctx.fs.resolve('b/c', '/root')).toBe('/root/b/c')
    expect(sha256(new TextEncoder().encode('abc'))).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    )
  })

  it('PathLock runs holders of one key in order and other keys concurrently', async () => {
    const lock = new PathLock()
    const order: string[] = []
    const slow = lock.run('k', async () => {
      await new Promise((resolve) => setTimeout(resolve, 20))
      order.push('first')
    })
    const second = lock.run('k', async () => void order.push('second'))
    const other = lock.run('other', async () => void order.push('other'))
    await Promise.all([slow, second, other])
    expect(order).toEqual(['other', 'first', 'second'])
    expect(lock.size).toBe(0)
    await expect(
      lock.run('k', async () => {
        throw new Error('boom')
      }),
    ).rejects.toThrow('boom')
    expect(await lock.run('k', async () => 42)).toBe(42)
  })

  it('maps errno codes to stable FsError codes', () => {
    const e = (code: string) => toFsError(Object.assign(new Error(code), { code }), '/p')
    expect(e('ENOENT').code).toBe('NOT_FOUND')
    expect(e('EACCES').code).toBe('PERMISSION')
    expect(e('EISDIR').message).toBe('/p is a directory')
    expect(e('EWEIRD').code).toBe('IO')
  })
})
