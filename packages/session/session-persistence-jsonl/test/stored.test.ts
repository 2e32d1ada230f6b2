// Stored zstd frames: the batches written before the zstd codec has loaded. This file runs in its
// own module instance, so the codec starts unloaded here (the first write must not wait for it).
// vitest: isolate (vitest.config.ts: a shared worker may have loaded the codec in an earlier file)
import { spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { completeTurn, eventLog } from '@dsh/session-persistence/contract'
import JsonlPersistence, {
  BATCH_HEADER_SIZE,
  STORE_BELOW,
  loadZstd,
  readyZstd,
  scanZstd,
  storedFrame,
  unstoreFrame,
} from '../src/index.ts'

let root: string
const contexts: Context[] = []
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-jsonl-stored-'))
})
afterEach(async () => {
  for (const ctx of contexts.splice(0))
    await (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
  await rm(root, { recursive: true, force: true })
})

async function open() {
  const ctx = new Context()
  await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5, zstdCodec: 'wasm' })
  contexts.push(ctx)
  return ctx.sessionPersistence as JsonlPersistence
}

/** The zstd frames of a log, one per batch. */
function frames(bytes: Buffer): Buffer[] {
  const out: Buffer[] = []
  for (let at = 0; at < bytes.length; ) {
    const length = bytes.readUInt32LE(at + 12)
    out.push(bytes.subarray(at + BATCH_HEADER_SIZE, at + BATCH_HEADER_SIZE + length))
    at += BATCH_HEADER_SIZE + length
  }
  return out
}

const hasZstd = spawnSync('zstd', ['--version']).status === 0
const sample = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7919) % 251))

describe('stored zstd frames', () => {
  it('a short log is written and read without loading the WebAssembly codec', async () => {
    const p = await open()
    const log = eventLog('/w')
    await p.create({ id: 'short', cwd: '/w' })
    for (let turn = 0; turn < 3; turn++) {
      const before = log.session.length
      completeTurn(log, turn)
      await p.append('short', log.session.slice(before))
      await p.flush('short')
    }
    await p.close('short')
    const again = await open()
    expect((await again.load('short')).events).toHaveLength(log.session.length)
    await again.close('short')
    expect(readyZstd('wasm', false)).toBeUndefined()
    const bytes = await readFile((await p.logPath('short'))!)
    expect(bytes.length).toBeLessThan(STORE_BELOW)
    expect(frames(bytes).length).toBe(3)
  })

  it('a log that reaches STORE_BELOW starts the load; later batches are compressed', async () => {
    const p = await open()
    await p.create({ id: 'long', cwd: '/w' })
    const log = eventLog('/w')
    const big = 'x'.repeat(80 * 1024)
    completeTurn(log, 0, big)
    await p.append('long', log.session.events)
    await p.flush('long')
    await p.codec()
    const before = log.session.length
    completeTurn(log, 1)
    await p.append('long', log.session.slice(before))
    await p.close('long')
    const bytes = await readFile((await p.logPath('long'))!)
    const [first, ...rest] = frames(bytes)
    expect(unstoreFrame(first!)).toBeDefined()
    expect(rest.length).toBeGreaterThan(0)
    for (const frame of rest) expect(unstoreFrame(frame)).toBeUndefined()
    // A mixed log needs the codec to read; its stored prefix alone does not.
    expect(() => scanZstd(bytes, undefined)).toThrow()
    expect(scanZstd(bytes.subarray(0, BATCH_HEADER_SIZE + first!.length), undefined).records).toHaveLength(before)
    expect((await (await open()).load('long')).events).toHaveLength(log.session.length)
  })

  it('round-trips sizes around the 128 KiB block limit through our reader and libzstd (wasm)', async () => {
    const codec = await loadZstd('wasm')
    for (const n of [0, 1, 131071, 131072, 131073, 300000]) {
      const raw = sample(n)
      const frame = storedFrame(raw)
      expect(Buffer.compare(Buffer.from(unstoreFrame(frame)!), raw)).toBe(0)
      expect(Buffer.compare(Buffer.from(codec.decompress(frame, n)), raw)).toBe(0)
    }
  })

  it.skipIf(!hasZstd)('the zstd command reads a stored frame', () => {
    const raw = sample(200000)
    const out = spawnSync('zstd', ['-dc'], { input: storedFrame(raw) })
    expect(out.status).toBe(0)
    expect(Buffer.compare(out.stdout, raw)).toBe(0)
  })

  it('a compressed, truncated or padded frame is left to the codec', async () => {
    const codec = await loadZstd('wasm')
    expect(unstoreFrame(codec.compress(Buffer.alloc(4096, 'a'), 3))).toBeUndefined()
    const frame = storedFrame(sample(1000))
    expect(unstoreFrame(frame.subarray(0, frame.length - 1))).toBeUndefined()
    expect(unstoreFrame(Buffer.concat([frame, Buffer.from([0])]))).toBeUndefined()
    expect(unstoreFrame(Buffer.from('not zstd at all'))).toBeUndefined()
    // A raw block of 0 bytes, then an RLE block (one byte to repeat 2 MiB - 1 times): never expanded here.
    const rle = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x00, 0, 0, 0, 0, 0, 0, 0x61])
    rle.writeUIntLE(((2 ** 21 - 1) << 3) | (1 << 1) | 1, 9, 3)
    expect(unstoreFrame(rle)).toBeUndefined()
  })
})
