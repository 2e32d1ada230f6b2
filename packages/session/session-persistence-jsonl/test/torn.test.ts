import { cp, mkdtemp, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { SessionCorruptError } from '@dsh/session-persistence'
import { completeTurn, eventLog } from '@dsh/session-persistence/contract'
import JsonlPersistence, { cwdKey, loadZstd, scanZstd } from '../src/index.ts'

let root: string
/** Copies of the store the every-cut test checks side by side. */
const LANES = 4
const contexts: Context[] = []
async function open(config: Record<string, unknown> = {}) {
  const ctx = new Context()
  const warnings: string[] = []
  ctx.on('session-persistence/warning', (message) => void warnings.push(message))
  await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5, ...config })
  contexts.push(ctx)
  return { p: ctx.sessionPersistence as JsonlPersistence, warnings, ctx }
}

/** Writes three batches (one turn each) and returns the log path and the byte size after each batch. */
async function threeBatches(compression: 'zstd' | 'none') {
  const { p } = await open({ compression })
  const log = eventLog('/w')
  await p.create({ id: 'torn', cwd: '/w' })
  const sizes: number[] = []
  const counts: number[] = []
  const path = (await p.logPath('torn'))!
  for (let turn = 0; turn < 3; turn++) {
    const before = log.session.length
    completeTurn(log, turn)
    await p.append('torn', log.session.slice(before))
    await p.flush('torn')
    sizes.push((await stat(path)).size)
    counts.push(log.session.length)
  }
  await p.close('torn')
  return { path, sizes, counts, log }
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-jsonl-'))
})
const dispose = (ctx: Context) => (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
afterEach(async () => {
  for (const ctx of contexts.splice(0)) await dispose(ctx)
  for (const dir of [root, ...Array.from({ length: LANES }, (_, i) => `${root}.lane${i}`)])
    await rm(dir, { recursive: true, force: true })
})

describe('layout', () => {
  it('stores header and log under <root>/<cwd-key>/<id>/', async () => {
    const { p } = await open()
    await p.create({ id: 'lay', cwd: '/home/me/project' })
    const dir = join(root, cwdKey('/home/me/project'), 'lay')
    expect(JSON.parse(await readFile(join(dir, 'header.json'), 'utf8'))).toMatchObject({
      version: 1,
      id: 'lay',
      cwd: '/home/me/project',
    })
    expect(await p.logPath('lay')).toBe(join(dir, 'session.jsonl.zstd'))
    expect(cwdKey('/a/b')).not.toBe(cwdKey('/a-b'))
  })

  it('compresses: the zstd log is far smaller than the same JSONL', async () => {
    const raw = await threeBatches('none')
    await rm(join(root), { recursive: true, force: true })
    // With the codec loaded (a short log does not load the WebAssembly one: see stored.test.ts).
    await loadZstd()
    const z = await threeBatches('zstd')
    expect(z.sizes[2]).toBeLessThan(raw.sizes[2])
  })
})

for (const compression of ['zstd', 'none'] as const) {
  describe(`torn tail (${compression})`, () => {
    it('loads the complete batches at every cut inside the last batch, cuts the file and warns', async () => {
      const { path, sizes, counts } = await threeBatches(compression)
      const original = await readFile(path)
      // Every cut, in LANES independent copies of the store (the cuts of a lane one after another,
      // the lanes at once): one cut's load waits on the disk while another's runs.
      const lanes = await Promise.all(
        Array.from({ length: LANES }, async (_, i) => {
          const laneRoot = `${root}.lane${i}`
          await cp(root, laneRoot, { recursive: true })
          return { laneRoot, lanePath: join(laneRoot, relative(root, path)) }
        }),
      )
      let checked = 0
      await Promise.all(
        lanes.map(async ({ laneRoot, lanePath }, lane) => {
          for (let cut = sizes[1] + lane; cut < sizes[2]; cut += LANES) {
            await writeFile(lanePath, original.subarray(0, cut))
            // fsync off for these throwaway stores: the cut itself is still synced (load always
            // syncs it); the durability of appended batches is not what this loop checks.
            const { p, warnings, ctx } = await open({ root: laneRoot, fsync: false })
            const loaded = await p.load('torn')
            // zstd: the batch is the unit. Raw JSONL: every complete line of the torn batch survives.
            const region = original.subarray(sizes[1], cut)
            const lines = compression === 'none' ? region.toString('utf8').split('\n').length - 1 : 0
            const intact = compression === 'none' ? sizes[1] + region.lastIndexOf(0x0a) + 1 : sizes[1]
            expect(loaded.events.length - loaded.repairs.length, `cut at ${cut}`).toBe(counts[1] + lines)
            if (cut > intact) {
              expect(loaded.tornTail, `cut at ${cut}`).toMatchObject({ offset: intact, dropped: cut - intact })
              expect(warnings.join('\n')).toMatch(/torn tail/)
              // Cut, then repairs appended after the intact prefix: the torn bytes are gone.
              const now = await readFile(lanePath)
              expect(now.subarray(0, intact).equals(original.subarray(0, intact))).toBe(true)
              if (loaded.repairs.length === 0) expect(now.length).toBe(intact)
              expect((await p.inspect('torn')).tornTail).toBeUndefined()
            } else {
              expect(loaded.tornTail, `cut at ${cut}`).toBeUndefined()
            }
            await p.close('torn')
            // One store per cut, disposed at once rather than a thousand kept until the test ends.
            contexts.splice(contexts.indexOf(ctx), 1)
            await dispose(ctx)
            checked++
          }
        }),
      )
      expect(checked).toBe(sizes[2] - sizes[1])
    }, 60_000)

    it('inspect reports a torn tail without cutting it', async () => {
      const { path, sizes } = await threeBatches(compression)
      await truncate(path, sizes[2] - 3)
      const { p } = await open()
      const seen = await p.inspect('torn')
      expect(seen.tornTail?.offset).toBe(
        compression === 'zstd' ? sizes[1] : (await readFile(path)).lastIndexOf(0x0a) + 1,
      )
      expect((await stat(path)).size).toBe(sizes[2] - 3)
    })

    it('reports a corrupted middle batch with session id and offset instead of skipping it', async () => {
      const { path, sizes } = await threeBatches(compression)
      const bytes = await readFile(path)
      const at = sizes[0] + Math.floor((sizes[1] - sizes[0]) / 2)
      bytes[at] ^= 0x5a
      await writeFile(path, bytes)
      const { p } = await open()
      const error = await p.load('torn').catch((e: unknown) => e)
      expect(error).toBeInstanceOf(SessionCorruptError)
      expect((error as SessionCorruptError).message).toMatch(/torn/)
      expect((error as SessionCorruptError).offset).toBeGreaterThanOrEqual(sizes[0])
      expect((error as SessionCorruptError).offset).toBeLessThan(sizes[1])
      expect(p.isOpen('torn')).toBe(false)
      expect((await stat(path)).size).toBe(sizes[2])
    })

    it('treats a zero-filled tail as torn', async () => {
      const { path, sizes, counts } = await threeBatches(compression)
      const bytes = await readFile(path)
      await writeFile(path, Buffer.concat([bytes, Buffer.alloc(4096)]))
      const { p } = await open()
      const loaded = await p.load('torn')
      expect(loaded.events.length).toBe(counts[2])
      expect(loaded.tornTail?.reason).toMatch(/zero-filled/)
      expect((await stat(path)).size).toBe(sizes[2])
    })
  })
}

describe('zstd codec', () => {
  it('the bundled wasm codec reads and writes the log on this Node', async () => {
    const codec = await loadZstd('wasm')
    expect(codec.name).toBe('@bokuweb/zstd-wasm')
    const { p } = await open({ zstdCodec: 'wasm' })
    const log = eventLog('/w')
    await p.create({ id: 'wasm', cwd: '/w' })
    completeTurn(log, 0)
    await p.append('wasm', log.session.events)
    await p.close('wasm')
    const bytes = await readFile((await p.logPath('wasm'))!)
    const scan = scanZstd(bytes, codec)
    expect(scan.records.length).toBe(log.session.length)
    expect(scan.torn).toBeUndefined()
  })

  it('every batch is a standard zstd frame preceded by a skippable frame', async () => {
    const { path } = await threeBatches('zstd')
    const bytes = await readFile(path)
    expect(bytes.readUInt32LE(0)).toBe(0x184d2a5d)
    expect(bytes.readUInt32LE(32)).toBe(0xfd2fb528)
  })
})
