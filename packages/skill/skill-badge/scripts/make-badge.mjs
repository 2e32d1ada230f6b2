#!/usr/bin/env node
// Writes skill/powered-by-dsh.png: a 102x20 "powered by | dsh" badge drawn from a 5x7 bitmap
// font and encoded as an RGB PNG with node:zlib (no image library). Run after changing the design;
// the PNG is committed so the package ships it.
import { writeFileSync } from 'node:fs'
import { deflateSync } from 'node:zlib'

const GLYPHS = {
  p: ['.....', '.....', '####.', '#...#', '####.', '#....', '#....'],
  o: ['.....', '.....', '.###.', '#...#', '#...#', '#...#', '.###.'],
  w: ['.....', '.....', '#...#', '#...#', '#.#.#', '#.#.#', '.#.#.'],
  e: ['.....', '.....', '.###.', '#...#', '#####', '#....', '.###.'],
  r: ['.....', '.....', '#.##.', '##..#', '#....', '#....', '#....'],
  d: ['....#', '....#', '.####', '#...#', '#...#', '#...#', '.####'],
  b: ['#....', '#....', '####.', '#...#', '#...#', '#...#', '####.'],
  y: ['.....', '.....', '#...#', '#...#', '.####', '....#', '.###.'],
  s: ['.....', '.....', '.####', '#....', '.###.', '....#', '####.'],
  h: ['#....', '#....', '####.', '#...#', '#...#', '#...#', '#...#'],
  ' ': ['.....', '.....', '.....', '.....', '.....', '.....', '.....'],
}
const W = 102
const H = 20
const LEFT = 70
const px = Buffer.alloc(W * H * 3)
const set = (x, y, [r, g, b]) => {
  const i = (y * W + x) * 3
  px[i] = r
  px[i + 1] = g
  px[i + 2] = b
}
for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) set(x, y, x < LEFT ? [85, 85, 85] : [0, 110, 220])
const text = (s, x0) => {
  let x = x0
  for (const ch of s) {
    GLYPHS[ch].forEach((row, dy) => {
      for (let dx = 0; dx < 5; dx++) if (row[dx] === '#') set(x + dx, 6 + dy, [255, 255, 255])
    })
    x += 6
  }
}
text('powered by', 6)
text('dsh', LEFT + 7)

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})
const crc32 = (buf) => {
  let c = 0xffffffff
  for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}
const chunk = (type, data) => {
  const len = Buffer.alloc(4)
  len.writeUInt32BE(data.length)
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(body))
  return Buffer.concat([len, body, crc])
}
const ihdr = Buffer.alloc(13)
ihdr.writeUInt32BE(W, 0)
ihdr.writeUInt32BE(H, 4)
ihdr[8] = 8 // bit depth
ihdr[9] = 2 // truecolour RGB
const raw = Buffer.concat(
  Array.from({ length: H }, (_, y) => Buffer.concat([Buffer.from([0]), px.subarray(y * W * 3, (y + 1) * W * 3)])),
)
const png = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  chunk('IHDR', ihdr),
  chunk('IDAT', deflateSync(raw)),
  chunk('IEND', Buffer.alloc(0)),
])
writeFileSync(new URL('../skill/powered-by-dsh.png', import.meta.url), png)
