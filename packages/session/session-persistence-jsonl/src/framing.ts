// Byte framing of the two log formats, as pure functions over buffers.
//
// `.jsonl.zstd`: a sequence of batches. Each batch is a zstd *skippable* frame holding a small
// batch header, then one ordinary zstd frame holding the batch's JSONL lines. Standard zstd
// tools skip the skippable frames, so `zstd -dc session.jsonl.zstd` prints the plain JSONL.
//
//   skippable frame: u32le magic 0x184D2A5D, u32le 24 (payload size), then the payload:
//     "dshB" | u32le frame length | u32le crc32(frame) | u32le raw length | u32le first seq
//     | u32le crc32(the 20 bytes before it)
//   zstd frame: `frame length` bytes
//
// A batch written before the zstd codec has loaded (the WebAssembly fallback takes tens of
// milliseconds, which would land before a one-shot's first model request) holds a *stored* zstd
// frame: valid zstd whose blocks are raw bytes, written and read here without the codec.
//
// `.jsonl`: one record per line; a line counts only once its newline is written.
import { crc32 } from 'node:zlib'
import { recordProblem, type StoredRecord } from '@dsh/session-persistence'
import type { ZstdCodec } from './zstd.ts'

const SKIPPABLE_MAGIC = 0x184d2a5d
const TAG = 0x42687364 // "dshB" read as u32le
export const BATCH_HEADER_SIZE = 32

export function encodeLines(records: readonly StoredRecord[]): Buffer {
  let text = ''
  for (const { event, ignorable } of records) {
    text += JSON.stringify(
      ignorable
        ? { seq: event.seq, time: event.time, type: event.type, data: event.data, ignorable: true }
        : { seq: event.seq, time: event.time, type: event.type, data: event.data },
    )
    text += '\n'
  }
  return Buffer.from(text, 'utf8')
}

const ZSTD_MAGIC = 0xfd2fb528
/** The largest zstd block (128 KiB). */
const MAX_BLOCK = 128 * 1024

/**
 * A zstd frame holding `raw` in raw (uncompressed) blocks: single segment, a 4-byte content size,
 * no checksum (the batch header carries a crc32 of the frame).
 */
export function storedFrame(raw: Uint8Array): Buffer {
  const blocks = Math.max(1, Math.ceil(raw.length / MAX_BLOCK))
  const out = Buffer.allocUnsafe(4 + 1 + 4 + blocks * 3 + raw.length)
  out.writeUInt32LE(ZSTD_MAGIC, 0)
  out[4] = 0xa0 // Frame_Content_Size_flag 2 (4 bytes), Single_Segment_flag
  out.writeUInt32LE(raw.length, 5)
  let at = 9
  for (let i = 0; i < blocks; i++) {
    const chunk = raw.subarray(i * MAX_BLOCK, Math.min(raw.length, (i + 1) * MAX_BLOCK))
    // Block header (u24le): Last_Block bit, Block_Type 0 (raw), Block_Size.
    out.writeUIntLE((chunk.length << 3) | (i === blocks - 1 ? 1 : 0), at, 3)
    out.set(chunk, at + 3)
    at += 3 + chunk.length
  }
  return out
}

/**
 * The content of a zstd frame made only of raw blocks (what storedFrame writes), or undefined when
 * the frame has RLE or compressed blocks or is not one whole frame (the codec decides, with its
 * output bounded by the batch header's size). Raw blocks never expand, so a damaged or hostile
 * frame cannot make this allocate more than the frame holds.
 */
export function unstoreFrame(frame: Uint8Array): Uint8Array | undefined {
  const view = Buffer.from(frame.buffer, frame.byteOffset, frame.length)
  if (view.length < 5 || view.readUInt32LE(0) !== ZSTD_MAGIC) return undefined
  const fhd = view[4]!
  const fcsFlag = fhd >> 6
  const single = (fhd >> 5) & 1
  const checksum = (fhd >> 2) & 1
  const dictBytes = [0, 1, 2, 4][fhd & 3]!
  const fcsBytes = fcsFlag === 0 ? single : [0, 2, 4, 8][fcsFlag]!
  let at = 5 + (single ? 0 : 1) + dictBytes + fcsBytes
  const parts: Uint8Array[] = []
  for (;;) {
    if (at + 3 > view.length) return undefined
    const header = view.readUIntLE(at, 3)
    const type = (header >> 1) & 3
    const size = header >>> 3
    at += 3
    if (type !== 0 || at + size > view.length) return undefined
    parts.push(view.subarray(at, at + size))
    at += size
    if (header & 1) break
  }
  if (at + (checksum ? 4 : 0) !== view.length) return undefined
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts)
}

/** Thrown by scanZstd when a batch needs the codec and none was given. */
export class CodecNeeded extends Error {}

/**
 * One batch: compressed with `codec`, or a stored frame when the codec has not loaded yet.
 */
export function encodeBatch(records: readonly StoredRecord[], codec: ZstdCodec | undefined, level: number): Buffer {
  const raw = encodeLines(records)
  const frame = codec ? codec.compress(raw, level) : storedFrame(raw)
  const out = Buffer.allocUnsafe(BATCH_HEADER_SIZE + frame.length)
  out.writeUInt32LE(SKIPPABLE_MAGIC, 0)
  out.writeUInt32LE(24, 4)
  out.writeUInt32LE(TAG, 8)
  out.writeUInt32LE(frame.length, 12)
  out.writeUInt32LE(crc32(frame), 16)
  out.writeUInt32LE(raw.length, 20)
  out.writeUInt32LE(records[0]?.event.seq ?? 0, 24)
  out.writeUInt32LE(crc32(out.subarray(8, 28)), 28)
  out.set(frame, BATCH_HEADER_SIZE)
  return out
}

/** Outcome of scanning a log: the intact records, where they end, and a torn tail if any. */
export interface ScanResult {
  records: StoredRecord[]
  /** Byte length of the intact prefix. */
  goodLength: number
  torn?: { reason: string }
}

/** A damaged record before the end of the log. */
export class FramingError extends Error {
  constructor(
    readonly offset: number,
    readonly reason: string,
  ) {
    super(`${reason} at offset ${offset}`)
  }
}

const allZero = (buf: Buffer, from: number) => {
  for (let i = from; i < buf.length; i++) if (buf[i] !== 0) return false
  return true
}

/** `codec` may be absent while every batch is stored; a compressed one then throws CodecNeeded. */
export function scanZstd(buf: Buffer, codec: ZstdCodec | undefined): ScanResult {
  const records: StoredRecord[] = []
  let offset = 0
  const torn = (reason: string): ScanResult => ({ records, goodLength: offset, torn: { reason } })
  while (offset < buf.length) {
    const remaining = buf.length - offset
    if (remaining < BATCH_HEADER_SIZE)
      return torn(`incomplete batch header (${remaining} of ${BATCH_HEADER_SIZE} bytes)`)
    const headerOk =
      buf.readUInt32LE(offset) === SKIPPABLE_MAGIC &&
      buf.readUInt32LE(offset + 4) === 24 &&
      buf.readUInt32LE(offset + 8) === TAG &&
      buf.readUInt32LE(offset + 28) === crc32(buf.subarray(offset + 8, offset + 28))
    if (!headerOk) {
      if (allZero(buf, offset)) return torn(`zero-filled tail (${remaining} bytes)`)
      throw new FramingError(offset, 'bad batch header')
    }
    const frameLength = buf.readUInt32LE(offset + 12)
    const frameCrc = buf.readUInt32LE(offset + 16)
    const rawLength = buf.readUInt32LE(offset + 20)
    const firstSeq = buf.readUInt32LE(offset + 24)
    const end = offset + BATCH_HEADER_SIZE + frameLength
    if (end > buf.length)
      return torn(`incomplete batch frame (${buf.length - offset - BATCH_HEADER_SIZE} of ${frameLength} bytes)`)
    const frame = buf.subarray(offset + BATCH_HEADER_SIZE, end)
    if (crc32(frame) !== frameCrc) {
      if (end === buf.length) return torn('checksum mismatch in the last batch')
      throw new FramingError(offset, 'batch checksum mismatch')
    }
    if (firstSeq !== records.length)
      throw new FramingError(offset, `batch starts at seq ${firstSeq}, expected ${records.length}`)
    let raw: Uint8Array
    try {
      const stored = unstoreFrame(frame)
      if (!stored && !codec) throw new CodecNeeded()
      raw = stored ?? codec!.decompress(frame, rawLength)
    } catch (error) {
      if (error instanceof CodecNeeded) throw error
      throw new FramingError(offset, `batch does not decompress (${(error as Error).message})`)
    }
    if (raw.length !== rawLength)
      throw new FramingError(offset, `batch decompressed to ${raw.length} bytes, expected ${rawLength}`)
    const text = Buffer.from(raw.buffer, raw.byteOffset, raw.length).toString('utf8')
    if (!text.endsWith('\n')) throw new FramingError(offset, 'batch does not end with a newline')
    let start = 0
    while (start < text.length) {
      const nl = text.indexOf('\n', start)
      const problem = pushLine(records, text.slice(start, nl))
      if (problem) throw new FramingError(offset, problem)
      start = nl + 1
    }
    offset = end
  }
  return { records, goodLength: offset }
}

export function scanRaw(buf: Buffer): ScanResult {
  const records: StoredRecord[] = []
  const text = buf.toString('utf8')
  // Offsets are tracked in bytes; lines are ASCII-safe JSON except inside strings, so measure each.
  let charStart = 0
  let byteStart = 0
  while (charStart < text.length) {
    const nl = text.indexOf('\n', charStart)
    if (nl < 0) {
      const rest = buf.length - byteStart
      return {
        records,
        goodLength: byteStart,
        torn: {
          reason: allZero(buf, byteStart)
            ? `zero-filled tail (${rest} bytes)`
            : `incomplete last line (${rest} bytes without a newline)`,
        },
      }
    }
    const line = text.slice(charStart, nl)
    const problem = pushLine(records, line)
    if (problem) throw new FramingError(byteStart, problem)
    byteStart += Buffer.byteLength(line, 'utf8') + 1
    charStart = nl + 1
  }
  return { records, goodLength: byteStart }
}

function pushLine(records: StoredRecord[], line: string): string | undefined {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    return `line for seq ${records.length} is not valid JSON`
  }
  const problem = recordProblem(value, records.length)
  if (problem) return problem
  const r = value as { seq: number; time: number; type: string; data: unknown; ignorable?: boolean }
  const event = { type: r.type, seq: r.seq, time: r.time, data: r.data } as StoredRecord['event']
  records.push(r.ignorable === true ? { event, ignorable: true } : { event })
  return undefined
}
