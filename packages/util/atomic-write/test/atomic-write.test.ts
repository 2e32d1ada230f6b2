import { mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { withFileLock, writeAtomic } from '../src/index.ts'

const dir = () => mkdtempSync(join(tmpdir(), 'dsh-atomic-'))

describe('writeAtomic', () => {
  it('replaces a file, applies an explicit mode and leaves no temp file', async () => {
    const d = dir()
    const file = join(d, 'settings.yaml')
    writeFileSync(file, 'old')
    await writeAtomic(file, 'new', 0o600)
    expect(readFileSync(file, 'utf8')).toBe('new')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    await writeAtomic(file, new TextEncoder().encode('bytes'))
    expect(readFileSync(file, 'utf8')).toBe('bytes')
    expect(readdirSync(d)).toEqual(['settings.yaml'])
  })

  it('fails without touching anything when the directory is missing', async () => {
    const d = dir()
    await expect(writeAtomic(join(d, 'nope', 'x'), 'x')).rejects.toMatchObject({ code: 'ENOENT' })
    expect(readdirSync(d)).toEqual([])
  })
})

describe('withFileLock', () => {
  it('serializes bodies and removes the lock', async () => {
    const d = dir()
    const file = join(d, 'f')
    const order: string[] = []
    await Promise.all(
      ['a', 'b', 'c'].map((name) =>
        withFileLock(file, { timeoutMs: 5000, staleMs: 30_000 }, async () => {
          order.push(`${name}+`)
          await new Promise((r) => setTimeout(r, 5))
          order.push(`${name}-`)
        }),
      ),
    )
    for (let i = 0; i < order.length; i += 2) expect(order[i].slice(0, 1)).toBe(order[i + 1].slice(0, 1))
    expect(readdirSync(d)).toEqual([])
  })

  it('times out on a live lock with a message naming it, and takes over a stale one', async () => {
    const d = dir()
    const file = join(d, 'f')
    writeFileSync(`${file}.lock`, '1\n')
    await expect(withFileLock(file, { timeoutMs: 50, staleMs: 60_000 }, async () => 1)).rejects.toMatchObject({
      code: 'LOCK_TIMEOUT',
    })
    const old = new Date(Date.now() - 120_000)
    utimesSync(`${file}.lock`, old, old)
    await expect(withFileLock(file, { timeoutMs: 50, staleMs: 60_000 }, async () => 'ran')).resolves.toBe('ran')
  })
})
