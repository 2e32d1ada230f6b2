// Damage is reported, never papered over: an empty log, a log without one intact batch, a damaged
// newest session in list()/latest(); and the strict mode for unregistered event types.
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { Session, type SessionEventType } from '@dsh/session'
import { SessionCorruptError, SessionPersistenceError } from '@dsh/session-persistence'
import { completeTurn, eventLog } from '@dsh/session-persistence/contract'
import JsonlPersistence from '../src/index.ts'

let root: string
const contexts: Context[] = []
async function open(config: Record<string, unknown> = {}) {
  const ctx = new Context()
  await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5, ...config })
  contexts.push(ctx)
  return ctx.sessionPersistence as JsonlPersistence
}

async function stored(p: JsonlPersistence, id: string, cwd = '/w', turns = 1) {
  const log = eventLog(cwd)
  await p.create({ id, cwd })
  for (let turn = 0; turn < turns; turn++) completeTurn(log, turn)
  await p.append(
    id,
    log.session.events.map((e) => e),
  )
  await p.close(id)
  return (await p.logPath(id))!
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-jsonl-dur-'))
})
afterEach(async () => {
  for (const ctx of contexts.splice(0))
    await (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
  await rm(root, { recursive: true, force: true })
})

it('two overlapping closes of one session both resolve after its writer lock is gone', async () => {
  // Unloading closes from two places at once (the durable glue and the backend's shutdown); the
  // second close must not report done while the first is still releasing the lock.
  const p = await open()
  await p.create({ id: 'twice', cwd: '/w' })
  const lock = join((await p.logPath('twice'))!, '..', 'writer.lock')
  expect(existsSync(lock)).toBe(true)
  const first = p.close('twice')
  await p.close('twice')
  expect(existsSync(lock)).toBe(false)
  await first
})

describe.each(['zstd', 'none'] as const)('damage (%s)', (compression) => {
  it('a session created but never written has no log file and loads empty', async () => {
    const p = await open({ compression })
    await p.create({ id: 'fresh', cwd: '/w' })
    const planned = (await p.logPath('fresh'))!
    expect(existsSync(planned)).toBe(false)
    await p.close('fresh')
    const q = await open({ compression })
    expect((await q.load('fresh')).events).toEqual([])
    expect((await q.list()).map((r) => [r.id, r.events, r.damaged])).toEqual([['fresh', 0, undefined]])
    // Its first batch creates the log whole.
    const log = eventLog('/w')
    completeTurn(log, 0)
    await q.append('fresh', log.session.events)
    await q.close('fresh')
    expect((await (await open({ compression })).inspect('fresh')).events.length).toBe(log.session.length)
  })

  it('a 0-byte log is reported as damage (session id and file), not loaded as empty, and is left as it is', async () => {
    const p = await open({ compression })
    const path = await stored(p, 'zero')
    await writeFile(path, '')
    const error = await p.load('zero').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SessionCorruptError)
    expect((error as Error).message).toContain('session zero')
    expect((error as Error).message).toContain(path)
    expect((error as Error).message).toMatch(/empty \(0 bytes\)/)
    expect(p.isOpen('zero')).toBe(false)
    expect((await stat(path)).size).toBe(0)
    expect(existsSync(join(path, '..', 'writer.lock'))).toBe(false)
  })

  it('a log without one intact batch is damage, not an empty session', async () => {
    const p = await open({ compression })
    const path = await stored(p, 'noise')
    const bytes = await readFile(path)
    bytes.fill(0x41, 0, Math.min(bytes.length, 40))
    await writeFile(path, bytes)
    await expect(p.load('noise')).rejects.toBeInstanceOf(SessionCorruptError)
    expect((await readFile(path)).equals(bytes)).toBe(true)
  })

  it('list() keeps a damaged session (marked, by its log mtime) and latest() stops at it', async () => {
    const p = await open({ compression })
    await stored(p, 'older', '/proj')
    const path = await stored(p, 'newer', '/proj')
    await writeFile(path, '')
    const later = new Date(Date.now() + 60_000)
    const { utimes } = await import('node:fs/promises')
    await utimes(path, later, later)
    const rows = await p.list()
    expect(rows.map((r) => r.id)).toEqual(['newer', 'older'])
    expect(rows[0].damaged).toMatch(/session newer is corrupt.*empty/)
    expect(rows[1].damaged).toBeUndefined()
    expect((await p.latest('/proj'))?.id).toBe('newer')
  })
})

describe('unregistered event types', () => {
  it('warn (default) stores them; refuse rejects the append with UNKNOWN_EVENT_TYPE until registered', async () => {
    const strict = await open({ unknownEventTypes: 'refuse' })
    await strict.create({ id: 'strict', cwd: '/w' })
    const session = new Session({ id: 'strict', cwd: '/w' })
    const odd = session.append('plugin/unregistered' as SessionEventType, {} as never)
    const error = await strict.append('strict', [odd]).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SessionPersistenceError)
    expect((error as SessionPersistenceError).code).toBe('UNKNOWN_EVENT_TYPE')
    expect((error as Error).message).toContain('plugin/unregistered')
    const dispose = strict.registerEventType('plugin/unregistered')
    expect(strict.knownEventTypes()).toContain('plugin/unregistered')
    await strict.append('strict', [odd])
    dispose()
    expect(strict.knownEventTypes()).not.toContain('plugin/unregistered')
    await strict.close('strict')
  })
})

// The per-session path of list(): what a listing reads with the store index off (or for a row the
// index lacks or has stale); the index itself is tested in list-index.test.ts.
describe('the list() summary cache (summary.json beside each log)', () => {
  it('is used while its log keeps the recorded size, and recomputed when it does not match', async () => {
    const p = await open({ listIndex: false })
    const log = await stored(p, 'cached', '/w', 1)
    const cacheFile = join(log, '..', 'summary.json')
    const [first] = await p.list()
    const cached = JSON.parse(await readFile(cacheFile, 'utf8'))
    expect(cached).toMatchObject({
      size: (await stat(log)).size,
      file: 'session.jsonl.zstd',
      summary: { id: 'cached', turns: first.turns },
    })
    // A matching cache is trusted as is: a marker planted in it shows up in the listing.
    await writeFile(cacheFile, JSON.stringify({ ...cached, summary: { ...cached.summary, title: 'from the cache' } }))
    expect((await p.list())[0].title).toBe('from the cache')
    // Wrong size, an older cache without `file`, another session's cache, a cache naming a log
    // that is not there: each is rebuilt from the log, never trusted.
    const variants = [
      { ...cached, size: cached.size + 1 },
      { size: cached.size, summary: { ...cached.summary, title: 'from the cache' } },
      { ...cached, summary: { ...cached.summary, id: 'other' } },
      { ...cached, file: 'session.jsonl' },
      'not json',
    ]
    for (const variant of variants) {
      await writeFile(
        cacheFile,
        typeof variant === 'string'
          ? variant
          : JSON.stringify({
              ...variant,
              summary: { ...variant.summary, title: variant.summary.id === 'cached' ? 'stale' : 'x' },
            }),
      )
      const [row] = await p.list()
      expect(row.title, JSON.stringify(variant)).toBeUndefined()
      expect(row.turns).toBe(first.turns)
      expect(JSON.parse(await readFile(cacheFile, 'utf8'))).toEqual(cached)
    }
  })

  it('a cached raw log is not trusted when a compressed log (which wins) sits beside it', async () => {
    const p = await open({ compression: 'none', listIndex: false })
    const raw = await stored(p, 'both', '/w', 1)
    await p.list()
    const cacheFile = join(raw, '..', 'summary.json')
    const cached = JSON.parse(await readFile(cacheFile, 'utf8'))
    expect(cached.file).toBe('session.jsonl')
    await writeFile(cacheFile, JSON.stringify({ ...cached, summary: { ...cached.summary, title: 'stale' } }))
    expect((await p.list())[0].title).toBe('stale')
    // A compressed log of two turns appears beside the raw one: it is the session's log now.
    const z = await open({ root: join(root, 'z') })
    const zlog = await stored(z, 'both', '/w', 2)
    await writeFile(join(raw, '..', 'session.jsonl.zstd'), await readFile(zlog))
    const q = await open({ compression: 'none', listIndex: false })
    const [row] = await q.list()
    expect(row.title).toBeUndefined()
    expect(row.turns).toBe(2)
  })
})

describe.runIf(process.platform === 'linux')('durable writes', () => {
  /** The open flags of this process's descriptor of `path` (from /proc), or undefined when none is open. */
  async function openFlags(path: string): Promise<number | undefined> {
    const { readdir, readlink } = await import('node:fs/promises')
    for (const fd of await readdir('/proc/self/fd')) {
      const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '')
      if (target !== path) continue
      const info = await readFile(`/proc/self/fdinfo/${fd}`, 'utf8').catch(() => '')
      const flags = /^flags:\s+([0-7]+)/m.exec(info)
      if (flags) return parseInt(flags[1], 8)
    }
    return undefined
  }

  it.each(['zstd', 'none'] as const)(
    'with fsync, the log is appended through an O_DSYNC descriptor, created or reopened (%s)',
    async (compression) => {
      const { constants } = await import('node:fs')
      const p = await open({ compression })
      const log = eventLog('/w')
      await p.create({ id: 'dsync', cwd: '/w' })
      completeTurn(log, 0)
      await p.append(
        'dsync',
        log.session.events.map((e) => e),
      )
      const path = (await p.logPath('dsync'))!
      expect((await openFlags(path))! & constants.O_DSYNC).toBe(constants.O_DSYNC)
      await p.close('dsync')
      const q = await open({ compression })
      const loaded = await q.load('dsync')
      expect((await openFlags(path))! & constants.O_DSYNC).toBe(constants.O_DSYNC)
      const more = eventLog('/w')
      completeTurn(more, 1)
      const next = more.session.events.map((e, i) => ({ ...e, seq: loaded.events.length + i }))
      await q.append('dsync', next)
      await q.close('dsync')
      const r = await open({ compression })
      expect((await r.load('dsync')).events.length).toBe(loaded.events.length + next.length)
      await r.close('dsync')
      // Without fsync nothing waits for the disk.
      const s = await open({ compression, fsync: false })
      await s.load('dsync')
      expect((await openFlags(path))! & constants.O_DSYNC).toBe(0)
    },
  )
})
