import { afterAll, describe, expect, it } from 'vitest'
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { OutputRetention } from '../src/index.ts'

const dir = mkdtempSync(join(tmpdir(), 'dsh-retention-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const bytes = (text: string) => Buffer.from(text)

describe('OutputRetention', () => {
  it('keeps everything while under the cap', async () => {
    const r = new OutputRetention({ maxBytes: 10, headBytes: 4, tailBytes: 4, spillDir: dir })
    r.push(bytes('hello'))
    r.push(bytes('world'))
    await r.finish()
    const s = r.snapshot()
    expect(s).toMatchObject({ totalBytes: 10, truncated: false, retainedBytes: 10 })
    expect(Buffer.from(s.head).toString()).toBe('helloworld')
    expect(s.spillPath).toBeUndefined()
  })

  it('takes the head from the chunk that crosses the cap', async () => {
    const r = new OutputRetention({ maxBytes: 10, headBytes: 4, tailBytes: 3, spillDir: dir })
    r.push(bytes('ab'))
    r.push(bytes('cdefghijklmnop'))
    r.push(bytes('qr'))
    await r.finish()
    const s = r.snapshot()
    expect(Buffer.from(s.head).toString()).toBe('abcd')
    expect(Buffer.from(s.tail).toString()).toBe('pqr')
    expect(s.retainedBytes).toBe(7)
    expect(readFileSync(s.spillPath!, 'utf8')).toBe('abcdefghijklmnopqr')
    expect(statSync(s.spillPath!).mode & 0o777).toBe(0o600)
  })

  it('without a spill directory keeps head and tail only', async () => {
    const r = new OutputRetention({ maxBytes: 4, headBytes: 2, tailBytes: 2 })
    for (const c of 'abcdefgh') r.push(bytes(c))
    await r.finish()
    const s = r.snapshot()
    expect(Buffer.from(s.head).toString() + '|' + Buffer.from(s.tail).toString()).toBe('ab|gh')
    expect(s.spillPath).toBeUndefined()
  })

  it('records a spill failure instead of throwing', async () => {
    const blocker = join(dir, 'not-a-dir')
    writeFileSync(blocker, '')
    const r = new OutputRetention({ maxBytes: 2, headBytes: 1, tailBytes: 1, spillDir: join(blocker, 'sub') })
    r.push(bytes('abcdef'))
    await r.finish()
    const s = r.snapshot()
    expect(s.truncated).toBe(true)
    expect(s.spillError).toBeDefined()
  })

  it('never spills through a symlink put in place of the spill dir; tightens a loose dir', async () => {
    const target = join(dir, 'attacker-target')
    mkdirSync(target)
    const link = join(dir, 'swapped')
    symlinkSync(target, link)
    const r = new OutputRetention({ maxBytes: 4, headBytes: 2, tailBytes: 2, spillDir: link })
    r.push(bytes('attacker-controlled output'))
    await r.finish()
    const s = r.snapshot()
    expect(s.spillPath).toBeUndefined()
    expect(s.spillError).toMatch(/refusing to (spill|write) into .*swapped: it is a symbolic link/)
    expect(readdirSync(target)).toEqual([])
    expect(Buffer.from(s.head).toString()).toBe('at')

    const loose = join(dir, 'loose')
    mkdirSync(loose, { mode: 0o755 })
    const ok = new OutputRetention({ maxBytes: 4, headBytes: 2, tailBytes: 2, spillDir: loose })
    ok.push(bytes('0123456789'))
    await ok.finish()
    expect(readFileSync(ok.snapshot().spillPath!, 'utf8')).toBe('0123456789')
    expect(statSync(loose).mode & 0o777).toBe(0o700)
  })
})
