// UTF-8 bytes to a string in script, for the SSE reader. The browser's TextDecoder (and
// TextDecoderStream) returns strings made by the engine's host side: V8 gets them as external
// strings, allocated in the old generation and held through weak handles whose finalizers run in
// a separate main-thread task after the next major GC. During a 100,000-delta answer (13 MB of
// frames) that task took 40-130 ms on its own, one of the last long tasks of the stream. Strings
// built here (`String.fromCharCode` over the bytes) are ordinary V8 strings: young, collected by
// scavenges, no finalizers.

/** Code units gathered before they become a string; also the longest ASCII run taken at once. */
const WINDOW = 8192
/** ASCII runs at least this long are read straight from the bytes; shorter ones are copied. */
const MIN_RUN = 32
const REPLACEMENT = 0xfffd

/**
 * A streaming UTF-8 decoder with the WHATWG Encoding Standard's error handling (each maximal
 * invalid subsequence becomes one U+FFFD), like `new TextDecoder()` (no BOM handling: an
 * event stream never starts with one that matters). `decode(bytes, { stream: true })` keeps an
 * incomplete sequence at the end for the next call; without `stream` it becomes U+FFFD.
 */
export class Utf8Decoder {
  private readonly units = new Uint16Array(WINDOW + MIN_RUN + 2)
  private needed = 0
  private codePoint = 0
  private lower = 0x80
  private upper = 0xbf

  decode(bytes: Uint8Array, options?: { stream?: boolean }): string {
    const units = this.units
    let out = ''
    let n = 0
    let needed = this.needed
    let codePoint = this.codePoint
    let lower = this.lower
    let upper = this.upper
    let i = 0
    const length = bytes.length
    while (i < length) {
      const byte = bytes[i]
      if (needed === 0) {
        if (byte < 0x80) {
          let end = i + 1
          const limit = Math.min(length, i + WINDOW)
          while (end < limit && bytes[end] < 0x80) end++
          if (end - i >= MIN_RUN) {
            if (n > 0) {
              out += String.fromCharCode.apply(null, units.subarray(0, n) as unknown as number[])
              n = 0
            }
            out += String.fromCharCode.apply(null, bytes.subarray(i, end) as unknown as number[])
          } else {
            for (let k = i; k < end; k++) units[n++] = bytes[k]
          }
          i = end
        } else {
          i++
          if (byte >= 0xc2 && byte <= 0xdf) {
            needed = 1
            codePoint = byte & 0x1f
          } else if (byte >= 0xe0 && byte <= 0xef) {
            if (byte === 0xe0) lower = 0xa0
            else if (byte === 0xed) upper = 0x9f
            needed = 2
            codePoint = byte & 0x0f
          } else if (byte >= 0xf0 && byte <= 0xf4) {
            if (byte === 0xf0) lower = 0x90
            else if (byte === 0xf4) upper = 0x8f
            needed = 3
            codePoint = byte & 0x07
          } else units[n++] = REPLACEMENT
        }
      } else if (byte < lower || byte > upper) {
        // Not a valid continuation: what came so far is one U+FFFD, and this byte starts afresh.
        needed = 0
        codePoint = 0
        lower = 0x80
        upper = 0xbf
        units[n++] = REPLACEMENT
      } else {
        i++
        lower = 0x80
        upper = 0xbf
        codePoint = (codePoint << 6) | (byte & 0x3f)
        if (--needed === 0) {
          if (codePoint > 0xffff) {
            units[n++] = 0xd7c0 + (codePoint >> 10)
            units[n++] = 0xdc00 | (codePoint & 0x3ff)
          } else units[n++] = codePoint
          codePoint = 0
        }
      }
      if (n >= WINDOW) {
        out += String.fromCharCode.apply(null, units.subarray(0, n) as unknown as number[])
        n = 0
      }
    }
    if (!options?.stream && needed > 0) {
      needed = 0
      codePoint = 0
      lower = 0x80
      upper = 0xbf
      units[n++] = REPLACEMENT
    }
    if (n > 0) out += String.fromCharCode.apply(null, units.subarray(0, n) as unknown as number[])
    this.needed = needed
    this.codePoint = codePoint
    this.lower = lower
    this.upper = upper
    return out
  }
}
