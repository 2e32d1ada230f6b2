// Content sniffing for `read`: images by magic bytes, binary by NUL bytes or invalid UTF-8.

export interface ImageKind {
  mediaType: string
  label: string
}

/** The image type whose signature `bytes` starts with, if any. */
export function sniffImage(bytes: Uint8Array): ImageKind | undefined {
  const at = (offset: number, ...values: number[]) => values.every((value, i) => bytes[offset + i] === value)
  if (at(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return { mediaType: 'image/png', label: 'PNG' }
  if (at(0, 0xff, 0xd8, 0xff)) return { mediaType: 'image/jpeg', label: 'JPEG' }
  if (at(0, 0x47, 0x49, 0x46, 0x38) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61)
    return { mediaType: 'image/gif', label: 'GIF' }
  if (at(0, 0x52, 0x49, 0x46, 0x46) && at(8, 0x57, 0x45, 0x42, 0x50)) return { mediaType: 'image/webp', label: 'WebP' }
  return undefined
}

const SAMPLE = 8192
const strict = new TextDecoder('utf-8', { fatal: true })

/** True when the first 8 KiB hold a NUL byte or are not valid UTF-8 (a cut final sequence is allowed). */
export function looksBinary(bytes: Uint8Array): boolean {
  const sample = bytes.subarray(0, SAMPLE)
  if (sample.includes(0)) return true
  try {
    strict.decode(sample, { stream: bytes.length > SAMPLE })
    return false
  } catch {
    return true
  }
}
