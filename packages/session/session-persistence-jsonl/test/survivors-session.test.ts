// Crash shapes of a whole session on disk, checked through the backend, that the mutation run of
// 2026-12-07 (`pnpm mutation session-persistence-jsonl`) found without a quick test: torn.test.ts
// covers every cut of a log but is left out of mutation runs (seconds per mutant), so these take
// one cut each. A torn last batch is cut durably by load() only (inspect() and list() leave the
// file alone), and a log whose every byte is zero (a crash before the data reached the disk) is
// damage, refused and left as it is, never a session loaded empty.
import { readFile, mkdtemp, rm, stat, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { SessionCorruptError } from '@dsh/session-persistence'
import { completeTurn, eventLog } from '@dsh/session-persistence/contract'
import JsonlPersistence from '../src/index.ts'

let root: string
const contexts: Context[] = []
const warnings: string[] = []
async function open(config: Record<string, unknown> = {}) {
  const ctx = new Context()
  ctx.on('session-persistence/warning', (message) => void warnings.push(message))
  await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5, fsync: false, ...config })
  contexts.push(ctx)
  return ctx.sessionPersistence as JsonlPersistence
}
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-jsonl-survivors-session-'))
})
afterAll(async () => {
  for (const ctx of contexts.splice(0))
    await (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
  await rm(root, { recursive: true, force: true })
})

/** A session of two batches (one turn each); the log's size after the first and the event counts. */
async function twoBatches(p: JsonlPersistence, id: string) {
  const log = eventLog('/w')
  await p.create({ id, cwd: '/w' })
  completeTurn(log, 0)
  await p.append(id, log.session.slice(0))
  await p.flush(id)
  const path = (await p.logPath(id))!
  const first = (await stat(path)).size
  const firstCount = log.session.length
  completeTurn(log, 1)
  await p.append(id, log.session.slice(firstCount))
  await p.close(id)
  return { path, first, firstCount, full: (await stat(path)).size }
}

describe.each(['zstd', 'none'] as const)('a torn last batch (%s)', (compression) => {
  it('inspect and list leave it; load reports it, cuts it durably, and the next batch follows the cut', async () => {
    const p = await open({ compression })
    const id = `torn-${compression}`
    const { path, first, firstCount, full } = await twoBatches(p, id)
    // The crash: the second batch reached the disk only in part (10 bytes of it: inside its batch
    // header, or inside its first line).
    const cut = first + 10
    expect(full).toBeGreaterThan(cut)
    await truncate(path, cut)
    const tornTail = { offset: first, dropped: cut - first }

    const inspected = await p.inspect(id)
    expect(inspected.tornTail).toMatchObject(tornTail)
    expect(inspected.events).toHaveLength(firstCount)
    const [row] = (await p.list()).filter((r) => r.id === id)
    expect(row.damaged).toBeUndefined()
    expect((await stat(path)).size).toBe(cut)

    warnings.length = 0
    const loaded = await p.load(id)
    expect(loaded.tornTail).toMatchObject(tornTail)
    expect(loaded.events).toHaveLength(firstCount)
    expect(warnings.some((w) => w.includes(`torn tail at offset ${first} (${cut - first} dropped)`))).toBe(true)
    // Cut back to the last whole batch, on disk.
    expect((await stat(path)).size).toBe(first)
    const stored = loaded.events.length
    // The next batch starts on that boundary: everything reads back whole, with no torn tail.
    const more = eventLog('/w')
    completeTurn(more, 0)
    const extra = more.session.events.slice(0, 2).map((e, i) => ({ ...e, seq: stored + i }))
    await p.append(id, extra)
    await p.close(id)
    const again = await p.inspect(id)
    expect(again.tornTail).toBeUndefined()
    // (inspect() adds repair events after them for the turn the extra events leave open.)
    expect(again.events.slice(0, stored + 2).map((e) => e.seq)).toEqual(Array.from({ length: stored + 2 }, (_, i) => i))
    expect(again.events.slice(stored, stored + 2).map((e) => e.type)).toEqual(extra.map((e) => e.type))
  })
})

describe.each(['zstd', 'none'] as const)('a log of zeros (%s)', (compression) => {
  it('is damage naming its size and reason, refused by load and inspect, and left as it is', async () => {
    const p = await open({ compression })
    const id = `zeros-${compression}`
    const { path } = await twoBatches(p, id)
    await writeFile(path, Buffer.alloc(4096))
    const reason = `the log ${path} holds no intact batch (4096 bytes: zero-filled tail (4096 bytes))`
    for (const attempt of [() => p.load(id), () => p.inspect(id)]) {
      const error = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(error).toBeInstanceOf(SessionCorruptError)
      expect(error).toMatchObject({ offset: 0, reason })
    }
    expect(p.isOpen(id)).toBe(false)
    expect((await readFile(path)).equals(Buffer.alloc(4096))).toBe(true)
    const [row] = (await p.list()).filter((r) => r.id === id)
    expect(row.damaged).toContain(reason)
  })
})
