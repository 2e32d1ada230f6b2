// The checkpoint document and its journal, on real files: what a later reader (another process)
// sees after appends, folds, torn or foreign lines, and two writers at once.
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import JsonProjectionCache, { decodeDocument } from '@dsh/session-projection-cache'
import type { ProjectionCheckpoint } from '@dsh/session-projection'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function place(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-projcache-'))
  dirs.push(dir)
  return join(dir, 'storage', 'cache.json')
}

/** A cache instance as one process would have it. */
async function open(path: string, journalRatio?: number): Promise<JsonProjectionCache> {
  const ctx = new Context()
  await ctx.plugin(JsonProjectionCache, { path, ...(journalRatio !== undefined ? { journalRatio } : {}) })
  return ctx.sessionProjectionCache as JsonProjectionCache
}

const cp = (id: string, events: number, note = ''): ProjectionCheckpoint => ({
  sessionId: id,
  events,
  lastTime: 1000 + events,
  units: { u: { version: 1, state: { note } } },
})
const ids = async (path: string) => [...(await (await open(path)).readAll()).keys()].sort()
const doc = (path: string) => decodeDocument(readFileSync(path, 'utf8'))!

describe('@dsh/session-projection-cache', () => {
  it('the first write is a whole document; later small updates go to the journal and read back merged', async () => {
    const path = place()
    const cache = await open(path)
    expect((await cache.readAll()).size).toBe(0)
    await cache.write([cp('a', 1), cp('b', 2), cp('c', 3)], [])
    expect(Object.keys(doc(path).checkpoints).sort()).toEqual(['a', 'b', 'c'])
    expect(existsSync(`${path}.journal`)).toBe(false)
    const bytes = statSync(path).size

    await cache.readAll()
    await cache.write([cp('b', 5, 'grown'), cp('d', 1)], ['c'])
    expect(statSync(path).size).toBe(bytes) // the document was not rewritten
    expect(readFileSync(`${path}.journal`, 'utf8').split('\n').filter(Boolean)).toHaveLength(1)
    const again = await (await open(path)).readAll()
    expect([...again.keys()].sort()).toEqual(['a', 'b', 'd'])
    expect(again.get('b')).toEqual(cp('b', 5, 'grown'))
    // Nothing to write writes nothing.
    await cache.write([], [])
    expect(readFileSync(`${path}.journal`, 'utf8').split('\n').filter(Boolean)).toHaveLength(1)
  })

  it('a journal past its budget is folded into a new document generation and removed', async () => {
    const path = place()
    const cache = await open(path, 0.0001) // the 64 KiB floor is the budget
    await cache.write([cp('a', 1)], [])
    const first = doc(path).generation
    const big = 'x'.repeat(40 * 1024)
    await cache.readAll()
    await cache.write([cp('b', 1, big)], [])
    expect(existsSync(`${path}.journal`)).toBe(true)
    await cache.readAll()
    await cache.write([cp('c', 1, big)], [])
    expect(existsSync(`${path}.journal`)).toBe(false)
    expect(doc(path).generation).not.toBe(first)
    expect(Object.keys(doc(path).checkpoints).sort()).toEqual(['a', 'b', 'c'])
    expect(await ids(path)).toEqual(['a', 'b', 'c'])
    // journalRatio 0: every update rewrites the document.
    const always = await open(path, 0)
    await always.readAll()
    await always.write([cp('d', 1)], ['a'])
    expect(existsSync(`${path}.journal`)).toBe(false)
    expect(Object.keys(doc(path).checkpoints).sort()).toEqual(['b', 'c', 'd'])
  })

  it('skips torn, malformed and foreign-generation journal lines, and ignores a journal without its document', async () => {
    const path = place()
    const cache = await open(path)
    await cache.write([cp('a', 1)], [])
    const generation = doc(path).generation
    await cache.readAll()
    await cache.write([cp('b', 1)], [])
    appendFileSync(`${path}.journal`, JSON.stringify({ generation: 'other', put: [cp('evil', 9)] }) + '\n')
    appendFileSync(
      `${path}.journal`,
      JSON.stringify({
        generation,
        put: [{ sessionId: 'mismatch', events: 1, units: {} }, cp('c', 1)].map((c, i) =>
          i === 0 ? { ...c, sessionId: 7 } : c,
        ),
      }) + '\n',
    )
    appendFileSync(`${path}.journal`, JSON.stringify({ generation, put: 'not a list' }) + '\n')
    appendFileSync(`${path}.journal`, '{"generation":"' + generation + '","put":[{"sessionId":"torn"')
    expect(await ids(path)).toEqual(['a', 'b', 'c'])
    // The document gone: its journal means nothing.
    rmSync(path)
    expect(await ids(path)).toEqual([])
    // A garbled document reads as empty too, and the next write replaces it and the journal.
    writeFileSync(path, '{not json')
    const fresh = await open(path)
    await fresh.readAll()
    await fresh.write([cp('z', 1)], [])
    expect(existsSync(`${path}.journal`)).toBe(false)
    expect(await ids(path)).toEqual(['z'])
  })

  it('a format-1 document of an older build is read, and rewritten in format 2 by that read', async () => {
    const path = place()
    const cache = await open(path)
    await cache.write([cp('a', 1)], [])
    // Without a generation: its journal is not its own.
    writeFileSync(path, JSON.stringify({ format: 1, checkpoints: { a: cp('a', 1), b: cp('b', 2) } }))
    appendFileSync(`${path}.journal`, JSON.stringify({ generation: '', put: [cp('stray', 1)] }) + '\n')
    const read = await (await open(path)).readAll()
    expect([...read.keys()].sort()).toEqual(['a', 'b'])
    expect(read.get('b')).toEqual(cp('b', 2))
    expect(readFileSync(path, 'utf8').startsWith('{"format":2,')).toBe(true)
    expect(doc(path).format).toBe(2)
    expect(JSON.parse(JSON.stringify(doc(path).checkpoints.b))).toEqual(cp('b', 2))
    // With a generation (the journal of format 1): its journal lines are applied, then folded in.
    writeFileSync(path, JSON.stringify({ format: 1, generation: 'g1', checkpoints: { a: cp('a', 1) } }))
    writeFileSync(`${path}.journal`, JSON.stringify({ generation: 'g1', put: [cp('j', 3)], drop: ['a'] }) + '\n')
    expect(await ids(path)).toEqual(['j'])
    expect(existsSync(`${path}.journal`)).toBe(false)
    expect(Object.keys(doc(path).checkpoints)).toEqual(['j'])
    await cache.readAll()
    await cache.write([cp('c', 1)], [])
    expect(typeof doc(path).generation).toBe('string')
    expect(await ids(path)).toEqual(['c', 'j'])
    // A document of another format reads as empty.
    writeFileSync(path, JSON.stringify({ format: 99, checkpoints: { a: cp('a', 1) } }))
    expect(await ids(path)).toEqual([])
  })

  it("two processes updating at once keep each other's entries; a line behind a fold is skipped, not misread", async () => {
    const path = place()
    const a = await open(path)
    const b = await open(path)
    await a.write([cp('base', 1)], [])
    await a.readAll()
    await b.readAll()
    await a.write([cp('from-a', 1)], [])
    await b.write([cp('from-b', 1)], [])
    expect(await ids(path)).toEqual(['base', 'from-a', 'from-b'])
    // A third process folds the journal (new generation) while b still holds the old one: b's next
    // line names the old generation and is skipped (a lost update costs one refresh, never a wrong row).
    const folder = await open(path, 0)
    await folder.readAll()
    await folder.write([cp('from-folder', 1)], [])
    await b.write([cp('late-b', 1)], [])
    expect(await ids(path)).toEqual(['base', 'from-a', 'from-b', 'from-folder'])
    // After reading again, b appends on top of the new generation.
    await b.readAll()
    await b.write([cp('late-b', 1)], [])
    expect(await ids(path)).toEqual(['base', 'from-a', 'from-b', 'from-folder', 'late-b'])
  })
})
