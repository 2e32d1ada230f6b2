// The writer lock (`writer.lock`, O_EXCL) of a session directory: who holds it is named in the
// refusal (this process, another process, another host), and a lock left by a writer that died
// (its process gone, or the file torn while it was taken) is taken over. Two writers must never
// append to one log. Mutation testing (`pnpm mutation session-persistence-jsonl`) showed these
// branches unpinned by the shared contract, which only covers a live writer in this process.
import { spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { Context } from 'cordis'
import type { SessionPersistenceError } from '@dsh/session-persistence'
import JsonlPersistence from '../src/index.ts'

let root: string
const contexts: Context[] = []
async function open() {
  const ctx = new Context()
  await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 5 })
  contexts.push(ctx)
  return ctx.sessionPersistence as JsonlPersistence
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dsh-jsonl-locks-'))
})
afterEach(async () => {
  for (const ctx of contexts.splice(0))
    await (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
  await rm(root, { recursive: true, force: true })
})

/** A closed session and the path of its writer lock. */
async function closedSession(p: JsonlPersistence, id: string): Promise<string> {
  await p.create({ id, cwd: '/w' })
  const lock = join((await p.sessionDir(id))!, 'writer.lock')
  await p.close(id)
  expect(existsSync(lock)).toBe(false)
  return lock
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as SessionPersistenceError,
  )

it('the lock names this process, is private, and goes with the close', async () => {
  const p = await open()
  await p.create({ id: 'mine', cwd: '/w' })
  const lock = join((await p.sessionDir('mine'))!, 'writer.lock')
  expect(JSON.parse(await readFile(lock, 'utf8'))).toMatchObject({
    pid: process.pid,
    host: hostname(),
    since: expect.any(Number),
  })
  expect((await stat(lock)).mode & 0o777).toBe(0o600)
  const again = await refusal((await open()).load('mine'))
  expect(again).toMatchObject({
    code: 'LOCKED',
    message: `session mine is open for writing by process ${process.pid} (this process)`,
  })
  await p.close('mine')
  expect(existsSync(lock)).toBe(false)
})

it('a live writer elsewhere on this host and a writer on another host are refused, naming them', async () => {
  const p = await open()
  const lock = await closedSession(p, 'held')
  // PID 1 is alive and is not this process.
  await writeFile(lock, JSON.stringify({ pid: 1, host: hostname(), since: 0 }))
  expect(await refusal(p.load('held'))).toMatchObject({
    code: 'LOCKED',
    message: 'session held is open for writing by process 1',
  })
  await writeFile(lock, JSON.stringify({ pid: 4242, host: 'build-server', since: 0 }))
  expect(await refusal(p.load('held'))).toMatchObject({
    code: 'LOCKED',
    message: `session held is open for writing on host build-server (pid 4242); remove ${lock} if that process is gone`,
  })
  // The refusals left the holder's lock alone.
  expect(JSON.parse(await readFile(lock, 'utf8'))).toMatchObject({ host: 'build-server' })
})

it('a lock left by a process that is gone, or torn while it was taken, is taken over', async () => {
  const p = await open()
  const lock = await closedSession(p, 'stale')
  const gone = spawnSync(process.execPath, ['-e', '0']).pid
  await writeFile(lock, JSON.stringify({ pid: gone, host: hostname(), since: 0 }))
  await p.load('stale')
  expect(JSON.parse(await readFile(lock, 'utf8'))).toMatchObject({ pid: process.pid })
  await p.close('stale')
  await writeFile(lock, '')
  await p.load('stale')
  expect(JSON.parse(await readFile(lock, 'utf8'))).toMatchObject({ pid: process.pid })
  await p.close('stale')
  // JSON that is not an object names no holder.
  await writeFile(lock, 'null')
  await p.load('stale')
  expect(JSON.parse(await readFile(lock, 'utf8'))).toMatchObject({ pid: process.pid })
  await p.close('stale')
  // A lock without a pid (written by something else) is not a live holder either.
  await writeFile(lock, JSON.stringify({ host: hostname() }))
  await p.load('stale')
  expect(p.isOpen('stale')).toBe(true)
})
