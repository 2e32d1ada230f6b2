// `@dsh/attachment/test-png`, for tests only: a real PNG encoder (RGB, no filter: signature, IHDR,
// IDAT, IEND with CRCs), shared by the tests of every package that handles image attachments.
import { deflateSync } from 'node:zlib'

const TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})
const crc32 = (buf: Buffer) => {
  let c = 0xffffffff
  for (const byte of buf) c = TABLE[(c ^ byte) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}
const chunk = (type: string, data: Buffer) => {
  const len = Buffer.alloc(4)
  len.writeUInt32BE(data.length)
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(body))
  return Buffer.concat([len, body, crc])
}

/** A width x height PNG filled with one colour (or noise, to make it large). */
export function png(
  width: number,
  height: number,
  options: { noise?: boolean; rgb?: [number, number, number] } = {},
): Buffer {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8
  ihdr[9] = 2
  const row = 1 + width * 3
  const raw = Buffer.alloc(row * height)
  const [r, g, b] = options.rgb ?? [200, 30, 30]
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const o = y * row + 1 + x * 3
      if (options.noise) {
        raw[o] = (Math.random() * 256) | 0
        raw[o + 1] = (Math.random() * 256) | 0
        raw[o + 2] = (Math.random() * 256) | 0
      } else {
        raw[o] = r
        raw[o + 1] = g
        raw[o + 2] = b
      }
    }
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw, { level: options.noise ? 0 : 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ])
}
