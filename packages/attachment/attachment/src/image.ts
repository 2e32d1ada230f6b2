// Image format and dimensions from the bytes themselves (PNG, JPEG, GIF, WebP). The declared
// media type is never trusted.

export interface ImageInfo {
  mediaType: 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp'
  width: number
  height: number
}

/** The image's format and size, or undefined when the bytes are not a (complete header of a) known image. */
export function sniffImage(b: Uint8Array): ImageInfo | undefined {
  const u32be = (o: number) => ((b[o] << 24) | (b[o + 1] << 16) | (b[o + 2] << 8) | b[o + 3]) >>> 0
  const u16be = (o: number) => (b[o] << 8) | b[o + 1]
  const u16le = (o: number) => b[o] | (b[o + 1] << 8)
  const u24le = (o: number) => b[o] | (b[o + 1] << 8) | (b[o + 2] << 16)
  const ascii = (o: number, n: number) => String.fromCharCode(...b.subarray(o, o + n))
  const ok = (info: ImageInfo) => (info.width > 0 && info.height > 0 ? info : undefined)
  // PNG: signature, IHDR first; the stream must end with IEND (a truncated upload is refused).
  if (b.length >= 33 && b[0] === 0x89 && ascii(1, 3) === 'PNG' && ascii(12, 4) === 'IHDR') {
    if (b.length < 45 || ascii(b.length - 8, 4) !== 'IEND') return undefined
    return ok({ mediaType: 'image/png', width: u32be(16), height: u32be(20) })
  }
  // GIF87a / GIF89a: logical screen size; must end with the trailer.
  if (b.length >= 13 && (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a')) {
    if (b[b.length - 1] !== 0x3b) return undefined
    return ok({ mediaType: 'image/gif', width: u16le(6), height: u16le(8) })
  }
  // WebP: RIFF....WEBP with a VP8 / VP8L / VP8X chunk; RIFF size must match.
  if (b.length >= 30 && ascii(0, 4) === 'RIFF' && ascii(8, 4) === 'WEBP') {
    if ((b[4] | (b[5] << 8) | (b[6] << 16) | (b[7] << 24)) + 8 > b.length) return undefined
    const chunk = ascii(12, 4)
    if (chunk === 'VP8 ') return ok({ mediaType: 'image/webp', width: u16le(26) & 0x3fff, height: u16le(28) & 0x3fff })
    if (chunk === 'VP8L') {
      const bits = b[21] | (b[22] << 8) | (b[23] << 16) | (b[24] << 24)
      return ok({ mediaType: 'image/webp', width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 })
    }
    if (chunk === 'VP8X') return ok({ mediaType: 'image/webp', width: u24le(24) + 1, height: u24le(27) + 1 })
    return undefined
  }
  // JPEG: SOI, walk segments to a start-of-frame; must end with EOI.
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) {
    if (b[b.length - 2] !== 0xff || b[b.length - 1] !== 0xd9) return undefined
    let o = 2
    while (o + 9 < b.length) {
      if (b[o] !== 0xff) return undefined
      const marker = b[o + 1]
      if (marker === 0xff) {
        o++
        continue
      }
      const length = u16be(o + 2)
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return ok({ mediaType: 'image/jpeg', width: u16be(o + 7), height: u16be(o + 5) })
      }
      o += 2 + length
    }
    return undefined
  }
  return undefined
}
