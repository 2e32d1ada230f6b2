// Framing cases that the mutation run of 2026-12-07 (`pnpm mutation session-persistence-jsonl`)
// showed no test pinned: a skippable frame of another writer (right size, its own tag, a valid
// header checksum) is not a batch; a compressed batch read without the codec asks for it rather
// than calling the log damaged; a plain log whose first line is blank is damage at offset 0, never
// a torn tail (cutting it there would drop every event).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { Context } from 'cordis'
import { SessionCorruptError, type StoredRecord } from '@dsh/session-persistence'
import JsonlPersistence, {
  cwdKey,
  encodeBatch,
  encodeLines,
  FramingError,
  loadZstd,
  scanRaw,
  scanZstd,
} from '../src/index.ts'
import { CodecNeeded } from '../src/framing.ts'

const record = (seq: number): StoredRecord => ({
  event: {
    seq,
    time: 1000 + seq,
    type: 'message/user',
    data: { text: `line ${seq}` },
  } as unknown as StoredRecord['event'],
})

let root: string
let ctx: Context
let p: JsonlPersistence
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-jsonl-survivors-framing-'))
  ctx = new Context()
  await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5, fsync: false, compression: 'none' })
  p = ctx.sessionPersistence as JsonlPersistence
})
afterAll(async () => {
  await (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
  await rm(root, { recursive: true, force: true })
})

it("a skippable frame with another writer's tag is not a batch, even with a valid header checksum", () => {
  const one = encodeBatch([record(0)], undefined, 3)
  const foreign = Buffer.from(encodeBatch([record(1)], undefined, 3))
  foreign.write('xyzB', 8, 'latin1')
  foreign.writeUInt32LE(crc32(foreign.subarray(8, 28)), 28)
  let caught: unknown
  try {
    scanZstd(Buffer.concat([one, foreign]), undefined)
  } catch (error) {
    caught = error
  }
  expect(caught).toBeInstanceOf(FramingError)
  expect(caught).toMatchObject({ offset: one.length, reason: 'bad batch header' })
})

it('a compressed batch read without the codec asks for the codec; it is not damage', async () => {
  const codec = await loadZstd()
  const batch = encodeBatch([record(0), record(1)], codec, 3)
  expect(() => scanZstd(batch, undefined)).toThrow(CodecNeeded)
  expect(scanZstd(batch, codec).records).toEqual([record(0), record(1)])
})

it('a plain log whose first line is blank is damage at offset 0, left as it is', async () => {
  const rest = encodeLines([record(0)])
  expect(() => scanRaw(Buffer.concat([Buffer.from('\n'), rest]))).toThrow(FramingError)
  // Through a session: load refuses it and does not cut the log.
  await p.create({ id: 'blank-first', cwd: '/w' })
  await p.close('blank-first')
  const dir = join(root, cwdKey('/w'), 'blank-first')
  const text = `\n${rest.toString()}`
  await writeFile(join(dir, 'session.jsonl'), text)
  const error = await p.load('blank-first').then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(SessionCorruptError)
  expect(error).toMatchObject({ offset: 0 })
  expect(await readFile(join(dir, 'session.jsonl'), 'utf8')).toBe(text)
})
