// The byte framing of both log formats, on buffers: every way a batch or a line can be damaged is
// reported with its reason and offset (or, at the end of the log, as a torn tail), stored zstd
// frames read back under every header shape a zstd writer may use, and the directory key of a cwd.
// The session-level tests reach these through whole logs; mutation testing
// (`pnpm mutation session-persistence-jsonl`) showed which reasons and bounds no test pinned.
import { crc32 } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import type { StoredRecord } from '@dsh/session-persistence'
import {
  BATCH_HEADER_SIZE,
  FramingError,
  cwdKey,
  encodeBatch,
  encodeLines,
  loadZstd,
  scanRaw,
  scanZstd,
  storedFrame,
  unstoreFrame,
} from '../src/index.ts'

const record = (seq: number, extra: Partial<StoredRecord> = {}): StoredRecord => ({
  event: {
    seq,
    time: 1000 + seq,
    type: 'message/user',
    data: { text: `line ${seq}` },
  } as unknown as StoredRecord['event'],
  ...extra,
})

/** The FramingError `fn` throws. */
function framingError(fn: () => unknown): FramingError {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(FramingError)
    return error as FramingError
  }
  throw new Error('expected a FramingError')
}

/** A batch whose frame is replaced by `frame` (header checksums recomputed), claiming `rawLength`. */
function batchWith(frame: Buffer, rawLength: number, firstSeq = 0): Buffer {
  const out = Buffer.alloc(BATCH_HEADER_SIZE + frame.length)
  out.writeUInt32LE(0x184d2a5d, 0)
  out.writeUInt32LE(24, 4)
  out.writeUInt32LE(0x42687364, 8)
  out.writeUInt32LE(frame.length, 12)
  out.writeUInt32LE(crc32(frame), 16)
  out.writeUInt32LE(rawLength, 20)
  out.writeUInt32LE(firstSeq, 24)
  out.writeUInt32LE(crc32(out.subarray(8, 28)), 28)
  frame.copy(out, BATCH_HEADER_SIZE)
  return out
}

const stored = (text: string) => {
  const raw = Buffer.from(text)
  return batchWith(storedFrame(raw), raw.length)
}

describe('lines', () => {
  it('writes seq, time, type and data, and ignorable only when set', () => {
    expect(encodeLines([record(0), record(1, { ignorable: true })]).toString()).toBe(
      '{"seq":0,"time":1000,"type":"message/user","data":{"text":"line 0"}}\n' +
        '{"seq":1,"time":1001,"type":"message/user","data":{"text":"line 1"},"ignorable":true}\n',
    )
    const back = scanRaw(encodeLines([record(0), record(1, { ignorable: true })]))
    expect(back.records).toEqual([record(0), record(1, { ignorable: true })])
    expect(back.records[0]).not.toHaveProperty('ignorable')
  })

  it('a raw log: a torn last line or a zero-filled tail is torn, a bad line before the end is damage at its byte offset', () => {
    const good = encodeLines([record(0)])
    expect(scanRaw(Buffer.concat([good, Buffer.from('{"seq":1')]))).toMatchObject({
      goodLength: good.length,
      torn: { reason: 'incomplete last line (8 bytes without a newline)' },
    })
    expect(scanRaw(Buffer.concat([good, Buffer.alloc(5)]))).toMatchObject({
      goodLength: good.length,
      torn: { reason: 'zero-filled tail (5 bytes)' },
    })
    // Offsets count bytes, not characters.
    const wide = encodeLines([
      {
        event: { seq: 0, time: 1, type: 'message/user', data: { text: 'héllo ✓' } } as unknown as StoredRecord['event'],
      },
    ])
    const bad = framingError(() => scanRaw(Buffer.concat([wide, Buffer.from('not json\n')])))
    expect(bad.offset).toBe(wide.length)
    expect(bad.message).toBe(`line for seq 1 is not valid JSON at offset ${wide.length}`)
    expect(framingError(() => scanRaw(Buffer.from('{"seq":3,"time":1,"type":"x","data":1}\n'))).reason).toBe(
      'record has seq 3, expected 0',
    )
    expect(scanRaw(Buffer.alloc(0))).toEqual({ records: [], goodLength: 0 })
  })
})

describe('zstd batches', () => {
  it('a batch header names the frame, its checksum, the raw length and the first seq', async () => {
    const codec = await loadZstd()
    const batch = encodeBatch([record(0), record(1)], codec, 3)
    const raw = encodeLines([record(0), record(1)])
    expect(batch.readUInt32LE(0)).toBe(0x184d2a5d)
    expect(batch.readUInt32LE(4)).toBe(24)
    expect(batch.subarray(8, 12).toString('latin1')).toBe('dshB')
    expect(batch.readUInt32LE(12)).toBe(batch.length - BATCH_HEADER_SIZE)
    expect(batch.readUInt32LE(16)).toBe(crc32(batch.subarray(BATCH_HEADER_SIZE)))
    expect(batch.readUInt32LE(20)).toBe(raw.length)
    expect(batch.readUInt32LE(24)).toBe(0)
    const second = encodeBatch([record(2)], undefined, 3)
    expect(second.readUInt32LE(24)).toBe(2)
    expect(scanZstd(Buffer.concat([batch, second]), codec).records.map((r) => r.event.seq)).toEqual([0, 1, 2])
    // A log of stored batches reads without a codec; a compressed one needs it.
    expect(scanZstd(encodeBatch([record(0)], undefined, 3), undefined).records).toHaveLength(1)
    expect(() => scanZstd(batch, undefined)).toThrow()
  })

  it('the end of a log: a short header, a short frame, a bad last checksum or zeros are a torn tail', () => {
    const one = encodeBatch([record(0)], undefined, 3)
    const two = encodeBatch([record(1)], undefined, 3)
    expect(scanZstd(Buffer.concat([one, two.subarray(0, 10)]), undefined)).toMatchObject({
      records: [record(0)],
      goodLength: one.length,
      torn: { reason: `incomplete batch header (10 of ${BATCH_HEADER_SIZE} bytes)` },
    })
    const frameLength = two.length - BATCH_HEADER_SIZE
    expect(scanZstd(Buffer.concat([one, two.subarray(0, BATCH_HEADER_SIZE + 4)]), undefined).torn).toEqual({
      reason: `incomplete batch frame (4 of ${frameLength} bytes)`,
    })
    const flipped = Buffer.from(two)
    flipped[flipped.length - 2] ^= 0xff
    expect(scanZstd(Buffer.concat([one, flipped]), undefined)).toMatchObject({
      goodLength: one.length,
      torn: { reason: 'checksum mismatch in the last batch' },
    })
    expect(scanZstd(Buffer.concat([one, Buffer.alloc(40)]), undefined).torn).toEqual({
      reason: 'zero-filled tail (40 bytes)',
    })
    expect(scanZstd(Buffer.concat([one, Buffer.alloc(BATCH_HEADER_SIZE)]), undefined).torn).toEqual({
      reason: `zero-filled tail (${BATCH_HEADER_SIZE} bytes)`,
    })
    expect(scanZstd(Buffer.concat([one, two]), undefined)).toEqual({
      records: [record(0), record(1)],
      goodLength: one.length + two.length,
    })
  })

  it("damage before the end is an error with the batch's offset and reason", async () => {
    const codec = await loadZstd()
    const one = encodeBatch([record(0)], undefined, 3)
    const two = encodeBatch([record(1)], undefined, 3)
    const three = encodeBatch([record(2)], undefined, 3)
    const at = (buf: Buffer) => framingError(() => scanZstd(buf, undefined))

    // Each header field is checked: magic, size, tag and the header's own checksum.
    for (const byte of [0, 4, 8, 28]) {
      const bad = Buffer.from(two)
      bad[byte] ^= 0x01
      expect(at(Buffer.concat([one, bad, three])), `byte ${byte}`).toMatchObject({
        offset: one.length,
        reason: 'bad batch header',
      })
    }
    const flipped = Buffer.from(two)
    flipped[flipped.length - 2] ^= 0xff
    expect(at(Buffer.concat([one, flipped, three]))).toMatchObject({
      offset: one.length,
      reason: 'batch checksum mismatch',
    })
    expect(at(Buffer.concat([one, three]))).toMatchObject({
      offset: one.length,
      reason: 'batch starts at seq 2, expected 1',
    })
    // A frame that is not a stored one goes to the codec, which cannot read this one.
    expect(framingError(() => scanZstd(batchWith(Buffer.from('not a zstd frame at all'), 5), codec)).reason).toMatch(
      /^batch does not decompress \(.+\)$/,
    )
    const text = '{"seq":0,"time":1,"type":"x","data":1}\n'
    expect(at(batchWith(storedFrame(Buffer.from(text)), text.length + 1)).reason).toBe(
      `batch decompressed to ${text.length} bytes, expected ${text.length + 1}`,
    )
    expect(at(stored('{"seq":0,"time":1,"type":"x","data":1}')).reason).toBe('batch does not end with a newline')
    expect(at(stored('{"seq":0,"time":1,"type":"x","data":1}\nnope\n')).reason).toBe('line for seq 1 is not valid JSON')
    expect(at(stored('{"seq":0,"time":1,"type":"x"}\n')).reason).toBe('record 0 has no data')
  })
})

describe('stored frames', () => {
  const text = Buffer.from('hello stored frame\n')

  /** A zstd frame of raw blocks with the given frame header descriptor and extra header bytes. */
  function frame(fhd: number, headerBytes: number[], blocks: Buffer[], trailer: number[] = []): Buffer {
    const parts: Buffer[] = [Buffer.from([0x28, 0xb5, 0x2f, 0xfd, fhd, ...headerBytes])]
    blocks.forEach((block, i) => {
      const header = Buffer.alloc(3)
      header.writeUIntLE((block.length << 3) | (i === blocks.length - 1 ? 1 : 0), 0, 3)
      parts.push(header, block)
    })
    parts.push(Buffer.from(trailer))
    return Buffer.concat(parts)
  }

  it('reads back what storedFrame writes, in one block or several', () => {
    expect(Buffer.from(unstoreFrame(storedFrame(text))!).toString()).toBe(text.toString())
    expect(unstoreFrame(storedFrame(Buffer.alloc(0)))).toHaveLength(0)
    const big = Buffer.alloc(128 * 1024 * 2 + 7, 'x')
    const framed = storedFrame(big)
    // Three blocks: two full ones and the rest, each with a 3-byte header.
    expect(framed.length).toBe(9 + 3 * 3 + big.length)
    expect(Buffer.compare(Buffer.from(unstoreFrame(framed)!), big)).toBe(0)
  })

  it('reads raw blocks under every frame header shape (window byte, dictionary id, content size, checksum)', () => {
    const a = Buffer.from('abc')
    const b = Buffer.from('defg\n')
    // No single segment: a window descriptor byte; no content size.
    expect(Buffer.from(unstoreFrame(frame(0x00, [0x00], [a, b]))!).toString()).toBe('abcdefg\n')
    // Single segment with a 1-byte content size (flag 0).
    expect(Buffer.from(unstoreFrame(frame(0x20, [8], [a, b]))!).toString()).toBe('abcdefg\n')
    // A 2-byte content size (flag 1), a 1-byte dictionary id, a checksum after the last block.
    expect(
      Buffer.from(unstoreFrame(frame(0x60 | 0x04 | 0x01, [0x07, 0x08, 0x00], [a, b], [1, 2, 3, 4]))!).toString(),
    ).toBe('abcdefg\n')
    // An 8-byte content size (flag 3) and a 4-byte dictionary id.
    expect(Buffer.from(unstoreFrame(frame(0xe0 | 0x03, [1, 2, 3, 4, 8, 0, 0, 0, 0, 0, 0, 0], [a]))!).toString()).toBe(
      'abc',
    )
    // A 2-byte dictionary id and a 4-byte content size.
    expect(Buffer.from(unstoreFrame(frame(0xa0 | 0x02, [1, 2, 3, 0, 0, 0], [a]))!).toString()).toBe('abc')
  })

  it('anything else is left to the codec', () => {
    const ok = storedFrame(text)
    expect(unstoreFrame(ok.subarray(0, 4))).toBeUndefined()
    const badMagic = Buffer.from(ok)
    badMagic[0] ^= 1
    expect(unstoreFrame(badMagic)).toBeUndefined()
    // An RLE block (type 1) or a compressed one (type 2).
    for (const type of [1, 2]) {
      const other = Buffer.from(ok)
      other.writeUIntLE((text.length << 3) | (type << 1) | 1, 9, 3)
      expect(unstoreFrame(other), `type ${type}`).toBeUndefined()
    }
    // Cut inside a block header, inside a block, or followed by stray bytes.
    expect(unstoreFrame(ok.subarray(0, 10))).toBeUndefined()
    expect(unstoreFrame(ok.subarray(0, ok.length - 1))).toBeUndefined()
    expect(unstoreFrame(Buffer.concat([ok, Buffer.from([0])]))).toBeUndefined()
    // A checksum flag without the checksum bytes.
    const withFlag = Buffer.from(ok)
    withFlag[4] |= 0x04
    expect(unstoreFrame(withFlag)).toBeUndefined()
    expect(unstoreFrame(Buffer.concat([withFlag, Buffer.from([1, 2, 3, 4])]))).toBeDefined()
  })
})

describe('cwdKey', () => {
  it('a readable tail of the cwd (at most 60 characters) and a hash of all of it', () => {
    expect(cwdKey('/home/me/my project')).toMatch(/^home-me-my-project-[0-9a-f]{8}$/)
    expect(cwdKey('/')).toMatch(/^root-[0-9a-f]{8}$/)
    expect(cwdKey('/a.b_c-d')).toMatch(/^a\.b_c-d-[0-9a-f]{8}$/)
    const long = `/${'d'.repeat(100)}/end`
    const key = cwdKey(long)
    expect(key).toMatch(new RegExp(`^${'d'.repeat(56)}-end-[0-9a-f]{8}$`))
    // Two cwds that read the same differ by the hash.
    expect(cwdKey('/a b')).not.toBe(cwdKey('/a-b'))
    expect(cwdKey('/a b')).toBe(cwdKey('/a b'))
  })
})
