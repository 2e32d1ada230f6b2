// The parts index.ts is made of, each called directly (no plugin tree): the writer's first batch
// and appends (writer.ts), the writer lock (lock.ts), header damage (header.ts) and the checks
// that decide whether a cached summary or an index row is still true (summary-cache.ts). The
// service tests cover them through the backend; these pin each part's own contract so a later
// change to one file shows which promise it broke.
import { spawnSync } from 'node:child_process'
import { mkdtemp, open, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import type { SessionId } from '@dsh/session'
import { SummaryBuilder } from '@dsh/session-persistence'
import { missingLog, readHeader } from '../src/header.ts'
import { CREATED_FILE, HEADER_FILE, LOG_RAW, LOG_ZSTD, cwdKey, stampOf } from '../src/layout.ts'
import type { IndexRow } from '../src/list-index.ts'
import { takeWriterLock } from '../src/lock.ts'
import { cachedSummary, rowValid, writeSummaryCache } from '../src/summary-cache.ts'
import { type OpenLog, appendBatch, createLog, track } from '../src/writer.ts'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dsh-jsonl-parts-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const bytes = (text: string) => new TextEncoder().encode(text)
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as Error & { code?: string },
  )

it.each([true, false])('createLog (fsync %s) writes the first batch whole, private, then marks it', async (fsync) => {
  const log: OpenLog = { path: join(dir, LOG_RAW), compressed: false, size: 0, lockPath: join(dir, 'writer.lock') }
  await createLog(log, bytes('{"seq":1}\n'), fsync)
  expect(await readFile(log.path, 'utf8')).toBe('{"seq":1}\n')
  expect((await stat(log.path)).mode & 0o777).toBe(0o600)
  expect((await readFile(join(dir, CREATED_FILE), 'utf8')).trim()).toBe(LOG_RAW)
  expect(log.size).toBe(10)
  // The handle it leaves is the log's, in append mode.
  await appendBatch(log, log.handle!, bytes('{"seq":2}\n'), fsync)
  expect(await readFile(log.path, 'utf8')).toBe('{"seq":1}\n{"seq":2}\n')
  expect(log.size).toBe(20)
  await log.handle?.close()
})

it('appendBatch cuts a failed batch back to the last boundary and keeps the size', async () => {
  const path = join(dir, LOG_RAW)
  await writeFile(path, 'one\n')
  const real = await open(path, 'a+')
  const log: OpenLog = { path, compressed: false, size: 4, lockPath: '' }
  // A disk that fills half-way through the batch: half is written, then the write fails.
  let calls = 0
  const filling = {
    write: async (buf: Uint8Array, offset: number, length: number) => {
      if (calls++ > 0) throw Object.assign(new Error('no space left'), { code: 'ENOSPC' })
      return real.write(buf, offset, Math.ceil(length / 2))
    },
    truncate: (len: number) => real.truncate(len),
    datasync: () => real.datasync(),
  } as unknown as typeof real
  const error = await failure(appendBatch(log, filling, bytes('two two two\n'), true))
  expect(error?.code).toBe('ENOSPC')
  expect(await readFile(path, 'utf8')).toBe('one\n')
  expect(log.size).toBe(4)
  await real.close()
})

it('track folds written batches into the summary the index row is made from', () => {
  const log: OpenLog = {
    path: '',
    compressed: false,
    size: 0,
    lockPath: '',
    tracked: { more: new SummaryBuilder({ id: 's', cwd: '/w', createdAt: 1 } as never) },
  }
  track(log, [{ event: { seq: 0, time: 5, type: 'turn/start', payload: {} } } as never])
  expect(log.tracked?.more.result()).toMatchObject({ id: 's', events: 1, turns: 1 })
  // An open log whose summary was unknown is left alone.
  expect(() => track({ path: '', compressed: false, size: 0, lockPath: '' }, [{} as never])).not.toThrow()
})

it('takeWriterLock: one holder; a dead holder or a torn file is taken over; other hosts are named', async () => {
  const path = await takeWriterLock('s', dir)
  expect(JSON.parse(await readFile(path, 'utf8')).pid).toBe(process.pid)
  expect(await failure(takeWriterLock('s', dir))).toMatchObject({ code: 'LOCKED', message: /\(this process\)/ })
  const dead = spawnSync(process.execPath, ['-e', '0']).pid
  await writeFile(path, JSON.stringify({ pid: dead, host: (await import('node:os')).hostname() }))
  expect(await takeWriterLock('s', dir)).toBe(path)
  await writeFile(path, '')
  expect(await takeWriterLock('s', dir)).toBe(path)
  await writeFile(path, JSON.stringify({ pid: 1, host: 'elsewhere.example' }))
  expect(await failure(takeWriterLock('s', dir))).toMatchObject({
    code: 'LOCKED',
    message: /on host elsewhere\.example/,
  })
})

it('readHeader and missingLog report damage naming the file, and "not found" only for nothing', async () => {
  expect(await failure(readHeader('s' as never, dir))).toMatchObject({ code: 'NOT_FOUND' })
  await writeFile(join(dir, CREATED_FILE), `${LOG_ZSTD}\n`)
  expect(await failure(readHeader('s' as never, dir))).toMatchObject({
    code: 'BAD_HEADER',
    message: /is missing while/,
  })
  expect((await missingLog('s' as never, dir))?.message).toContain(join(dir, LOG_ZSTD))
  await writeFile(join(dir, HEADER_FILE), '{not json')
  expect(await failure(readHeader('s' as never, dir))).toMatchObject({ code: 'BAD_HEADER', message: /not valid JSON/ })
  await rm(join(dir, CREATED_FILE))
  expect(await missingLog('s' as never, dir)).toBeUndefined()
})

it('a cached summary and an index row hold only while the log and header carry their stamp', async () => {
  await writeFile(join(dir, HEADER_FILE), JSON.stringify({ id: 's', cwd: '/w', createdAt: 1 }))
  await writeFile(join(dir, LOG_RAW), 'x\n')
  const [log, header] = await Promise.all([stat(join(dir, LOG_RAW)), stat(join(dir, HEADER_FILE))])
  const stamp = { file: LOG_RAW, size: log.size, mtime: log.mtimeMs, header: stampOf(header) }
  const summary = { id: 's' as SessionId, cwd: '/w', createdAt: 1, updatedAt: 1, turns: 0, events: 0 }
  await writeSummaryCache(dir, stamp, summary)
  expect(await cachedSummary('s' as never, dir)).toEqual({ summary, stamp })
  const row: IndexRow = { id: 's', key: cwdKey('/w'), ...stamp, summary }
  expect(rowValid(dir, row)).toBe(true)
  // The same size, a later mtime: the log was rewritten in place.
  await utimes(join(dir, LOG_RAW), new Date(), new Date(Date.now() + 5000))
  expect(await cachedSummary('s' as never, dir)).toBeUndefined()
  expect(rowValid(dir, row)).toBe(false)
  // A compressed rival wins over a raw log the row names.
  const now = await stat(join(dir, LOG_RAW))
  const fresh = { ...row, mtime: now.mtimeMs }
  expect(rowValid(dir, fresh)).toBe(true)
  await writeFile(join(dir, LOG_ZSTD), '')
  expect(rowValid(dir, fresh)).toBe(false)
})

it('cwdKey is readable and never shared by two cwds', () => {
  expect(cwdKey('/home/me/proj')).toMatch(/^home-me-proj-[0-9a-f]{8}$/)
  expect(cwdKey('/a/b')).not.toBe(cwdKey('/a-b'))
  expect(cwdKey('/')).toMatch(/^root-[0-9a-f]{8}$/)
})
