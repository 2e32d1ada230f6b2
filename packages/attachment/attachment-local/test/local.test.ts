// The local store on a real temporary directory: content addressing, idempotent publish, no
// staging leftovers, digest re-check on read, limits applied at write time only, bad ids.
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import LocalAttachments from '../src/index.ts'
import { png } from '@dsh/attachment/test-png'

let root: string
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-attach-'))
})
afterEach(() => rmSync(root, { recursive: true, force: true }))

const store = async (config: Record<string, unknown> = {}) => {
  const ctx = new Context()
  await ctx.plugin(LocalAttachments, { root, http: false, ...config })
  return ctx.attachments
}

describe('attachment-local', () => {
  it('stores by sha256 under objects/<prefix>/, owner-only, once; reads back the same bytes', async () => {
    const s = await store()
    const image = png(4, 4)
    const ref = await s.put(image, { name: 'shot.png' })
    expect(ref).toMatchObject({ mediaType: 'image/png', width: 4, height: 4, bytes: image.length, name: 'shot.png' })
    expect(ref.id).toMatch(/^sha256:[0-9a-f]{64}$/)
    const hex = ref.id.slice(7)
    const file = join(root, 'objects', hex.slice(0, 2), hex)
    expect(s.pathOf(ref.id)).toBe(file)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect((await s.put(image)).id).toBe(ref.id)
    expect(readdirSync(join(root, 'staging'))).toEqual([])
    const back = await s.get(ref.id)
    expect(back.data.equals(image)).toBe(true)
    expect(back.ref).toMatchObject({ id: ref.id, mediaType: 'image/png', width: 4, height: 4 })
    expect(await s.has(ref.id)).toBe(true)
  })

  it('refuses non-images and oversized images at write; a later smaller limit keeps old objects readable', async () => {
    const s = await store({ maxBytes: 2000 })
    await expect(s.put(Buffer.from('just text'))).rejects.toMatchObject({ code: 'NOT_AN_IMAGE' })
    await expect(s.put(png(40, 40, { noise: true }))).rejects.toMatchObject({ code: 'TOO_LARGE' })
    const ref = await s.put(png(8, 8))
    const strict = await store({ maxBytes: 10 })
    expect((await strict.get(ref.id)).ref.width).toBe(8)
  })

  it('a tampered object, a missing object and a bad id are clear errors', async () => {
    const s = await store()
    const ref = await s.put(png(2, 2))
    writeFileSync(s.pathOf(ref.id), png(3, 3))
    await expect(s.get(ref.id)).rejects.toMatchObject({ code: 'CORRUPT' })
    await expect(s.get(`sha256:${'0'.repeat(64)}`)).rejects.toMatchObject({ code: 'NOT_FOUND' })
    await expect(s.get('sha256:../../etc/passwd')).rejects.toMatchObject({ code: 'BAD_ID' })
    expect(await s.has(`sha256:${'0'.repeat(64)}`)).toBe(false)
  })
})
