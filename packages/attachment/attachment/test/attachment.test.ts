// Image sniffing, admission limits, and the message token format.
import { describe, expect, it } from 'vitest'
import { admit, attachmentToken, expandText, findTokens, isAttachmentId, sniffImage } from '../src/index.ts'
import { png } from '@dsh/attachment/test-png'

const ID = `sha256:${'a'.repeat(64)}` as const

describe('attachment', () => {
  it('reads the format and size from the bytes; truncated and foreign files are not images', () => {
    const image = png(3, 2)
    expect(sniffImage(image)).toEqual({ mediaType: 'image/png', width: 3, height: 2 })
    expect(sniffImage(image.subarray(0, image.length - 12))).toBeUndefined()
    expect(sniffImage(Buffer.from('GIF89a\x05\x00\x07\x00\x00\x00\x00;', 'latin1'))).toEqual({
      mediaType: 'image/gif',
      width: 5,
      height: 7,
    })
    const jpeg = Buffer.from([
      0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x09, 0x00, 0x0c, 0x01, 0x01,
      0x11, 0x00, 0xff, 0xd9,
    ])
    expect(sniffImage(jpeg)).toEqual({ mediaType: 'image/jpeg', width: 12, height: 9 })
    expect(sniffImage(Buffer.from('%PDF-1.7 hello'))).toBeUndefined()
    expect(sniffImage(Buffer.alloc(0))).toBeUndefined()
  })

  it('admission refuses empty, oversized, non-image and too-many-pixel uploads with one-line reasons', () => {
    const limits = { maxBytes: 10_000, maxPixels: 10_000 }
    expect(admit(png(10, 10), limits)).toEqual({ mediaType: 'image/png', width: 10, height: 10 })
    expect(() => admit(Buffer.alloc(0), limits)).toThrow(/empty/)
    expect(() => admit(Buffer.from('hello'), limits)).toThrow(expect.objectContaining({ code: 'NOT_AN_IMAGE' }))
    expect(() => admit(png(200, 100), { ...limits, maxBytes: 1e6 })).toThrow(
      expect.objectContaining({
        code: 'TOO_MANY_PIXELS',
        message: 'the image is 200x100 pixels; the limit is 10000 pixels',
      }),
    )
    expect(() => admit(png(60, 60, { noise: true }), limits)).toThrow(expect.objectContaining({ code: 'TOO_LARGE' }))
  })

  it('tokens round-trip, names are sanitized, text splits around tokens', async () => {
    expect(attachmentToken({ id: ID, name: 'a]b\n.png' })).toBe(`[image ${ID} a_b_.png]`)
    expect(attachmentToken({ id: ID })).toBe(`[image ${ID}]`)
    const text = `look ${attachmentToken({ id: ID, name: 'x.png' })} and [image sha256:short] end`
    expect(findTokens(text)).toEqual([
      { id: ID, name: 'x.png', index: 5, length: attachmentToken({ id: ID, name: 'x.png' }).length },
    ])
    const blocks = await expandText(text, async ({ id }) => ({ type: 'image', mediaType: 'image/png', data: id }))
    expect(blocks).toEqual([
      { type: 'text', text: 'look ' },
      { type: 'image', mediaType: 'image/png', data: ID },
      { type: 'text', text: ' and [image sha256:short] end' },
    ])
    expect(await expandText('plain', async () => ({ type: 'text', text: 'never' }))).toEqual([
      { type: 'text', text: 'plain' },
    ])
    expect(isAttachmentId(ID)).toBe(true)
    expect(isAttachmentId('sha256:../../etc')).toBe(false)
  })
})
