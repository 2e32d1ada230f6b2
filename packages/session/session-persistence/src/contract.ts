// The shared contract suite: every `ctx.sessionPersistence` backend's test file calls
// `persistenceContract(name, open)`. Test-only entry point (`@dsh/session-persistence/contract`).
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import type { SessionEventMap } from '@dsh/session'
import { Session } from '@dsh/session'
import { completeTurn, eventLog } from './fixtures.ts'
import type { SessionPersistence } from './service.ts'
import { SessionPersistenceError } from './types.ts'

/** Opens a backend over the storage rooted at `root` (a fresh temp dir per test). */
export type OpenBackend = (root: string) => Promise<{ persistence: SessionPersistence; dispose(): Promise<void> }>

export interface ContractOptions {
  /**
   * Module (file URL or path) whose default export is the backend plugin, and the config that
   * points it at a root: used to run a writer in a child process that is SIGKILLed.
   */
  child?: { module: string; config: (root: string) => Record<string, unknown> }
}

/** Mounts a backend plugin in a fresh Context; the usual `OpenBackend` for a Service class. */
export function mountBackend(plugin: unknown, config: (root: string) => Record<string, unknown>): OpenBackend {
  return async (root) => {
    const ctx = new Context()
    const fiber = ctx.plugin(plugin as never, config(root) as never)
    await fiber
    const persistence = ctx.sessionPersistence
    if (!persistence) throw new Error('the backend did not provide ctx.sessionPersistence')
    return { persistence, dispose: async () => void (await fiber.dispose()) }
  }
}

export function persistenceContract(name: string, open: OpenBackend, options: ContractOptions = {}): void {
  describe(`session persistence contract: ${name}`, () => {
    let root: string
    const opened: Array<{ dispose(): Promise<void> }> = []
    const backend = async () => {
      const handle = await open(root)
      opened.push(handle)
      return handle.persistence
    }
    const code = async (promise: Promise<unknown>) => {
      try {
        await promise
      } catch (error) {
        expect(error).toBeInstanceOf(SessionPersistenceError)
        return (error as SessionPersistenceError).code
      }
      return 'resolved'
    }

    beforeEach(async () => {
      root = await mkdtemp(join(tmpdir(), 'dsh-persist-'))
    })
    afterEach(async () => {
      for (const handle of opened.splice(0)) await handle.dispose()
      await rm(root, { recursive: true, force: true })
    })

    it('stores a compacted log whose older events the session released, and loads it whole', async () => {
      // `@dsh/session` keeps events behind a surface/replace as placeholders decoded on read:
      // what a backend stores (and a fork's seed, which copies them) must be the payloads.
      const build = (compactedEvents: 'keep' | 'release') => {
        let time = 1_700_000_000_000
        const session = new Session({ cwd: '/work/project', id: 'released', clock: () => time++, compactedEvents })
        const target = {
          session,
          add: <K extends keyof SessionEventMap & string>(type: K, data: SessionEventMap[K]) =>
            session.append(type, data),
        }
        for (let turn = 0; turn < 40; turn++) completeTurn(target, turn)
        session.surface.replaceRange(0, session.length, [
          { role: 'user', content: [{ type: 'text', text: 'summary' }] },
        ])
        for (let turn = 40; turn < 42; turn++) completeTurn(target, turn)
        return session
      }
      const kept = build('keep')
      const released = build('release')
      expect(released.released.events).toBeGreaterThanOrEqual(256)
      const a = await backend()
      await a.create({ id: released.id, cwd: '/work/project' })
      await a.append(released.id, released.events)
      await a.flush(released.id)
      const loaded = await (await backend()).inspect(released.id)
      const plain = (events: readonly unknown[]) => JSON.parse(JSON.stringify(events))
      expect(plain(loaded.events)).toEqual(plain(kept.events))
      expect(plain(await a.readFrom(released.id, 5))).toEqual(plain(kept.events.slice(5)))
      const resumed = new Session({ cwd: '/work/project', events: loaded.events })
      expect(resumed.deriveMessages()).toEqual(kept.deriveMessages())
    })

    it('round-trips header and events through append, flush and a fresh load', async () => {
      const a = await backend()
      const log = eventLog()
      const header = await a.create({
        id: log.session.id,
        cwd: '/work/project',
        origin: 'test',
        parentSession: { sessionId: 'p1' as never, boundary: 3 },
      })
      expect(header.version).toBe(1)
      completeTurn(log, 0)
      await a.append(log.session.id, log.session.events)
      await a.close(log.session.id)
      const b = await backend()
      const loaded = await b.load(log.session.id)
      expect(loaded.header).toEqual(header)
      expect(loaded.repairs).toEqual([])
      expect(loaded.warnings).toEqual([])
      expect(JSON.parse(JSON.stringify(loaded.events))).toEqual(JSON.parse(JSON.stringify(log.session.events)))
      // The loaded log restores into a Session and derives the same history.
      const restored = new Session({ id: header.id, cwd: header.cwd, events: loaded.events })
      expect(restored.deriveMessages()).toEqual(log.session.deriveMessages())
    })

    it('batches unawaited appends and makes them durable on flush', async () => {
      const a = await backend()
      const log = eventLog()
      await a.create({ id: log.session.id, cwd: '/w' })
      const acks: Array<Promise<void>> = []
      for (let turn = 0; turn < 5; turn++) {
        const before = log.session.length
        completeTurn(log, turn)
        acks.push(a.append(log.session.id, log.session.slice(before)))
      }
      await a.flush(log.session.id)
      await Promise.all(acks)
      expect(a.pendingCount(log.session.id)).toBe(0)
      expect((await a.readFrom(log.session.id, 0)).length).toBe(log.session.length)
    })

    it('continues seq contiguously after a reload and refuses gaps and repeats', async () => {
      const a = await backend()
      const log = eventLog()
      await a.create({ id: log.session.id, cwd: '/w' })
      completeTurn(log, 0)
      await a.append(log.session.id, log.session.events)
      await a.close(log.session.id)
      const b = await backend()
      const loaded = await b.load(log.session.id)
      const session = new Session({ id: log.session.id, cwd: '/w', events: loaded.events })
      const next = session.append('turn/start', { turn: 1 })
      expect(next.seq).toBe(loaded.events.length)
      expect(await code(b.append(log.session.id, [{ ...next, seq: next.seq + 1 }]))).toBe('SEQ_GAP')
      expect(await code(b.append(log.session.id, [session.events[0]]))).toBe('SEQ_GAP')
      await b.append(log.session.id, [next])
      await b.close(log.session.id)
      const c = await backend()
      const again = await c.inspect(log.session.id)
      expect(again.events.map((e) => e.seq).slice(0, again.events.length)).toEqual(again.events.map((_, i) => i))
      expect(again.events[next.seq]?.type).toBe('turn/start')
    })

    it('refuses unknown sessions, duplicate ids, appends to unopened sessions and bad headers', async () => {
      const a = await backend()
      expect(await code(a.load('missing'))).toBe('NOT_FOUND')
      expect(await code(a.inspect('missing'))).toBe('NOT_FOUND')
      expect(await code(a.append('missing', []))).toBe('NOT_OPEN')
      await a.create({ id: 's1', cwd: '/w' })
      expect(await code(a.create({ id: 's1', cwd: '/w' }))).toBe('LOCKED')
      await a.close('s1')
      expect(await code(a.create({ id: 's1', cwd: '/w' }))).toBe('EXISTS')
      expect(() => a.create({ id: '../escape', cwd: '/w' })).toThrow(/id/)
      expect(() => a.create({ id: 'ok', cwd: '' })).toThrow(/cwd/)
    })

    it('refuses ids that are not one safe path segment at every entry point, before touching storage', async () => {
      const a = await backend()
      for (const bad of ['../escape', '..', '.', 'a/b', 'a\\b', '', ' x', 'x\u0000', '/abs', 'x'.repeat(129)]) {
        expect(await code(a.load(bad)), bad).toBe('BAD_ID')
        expect(await code(a.inspect(bad)), bad).toBe('BAD_ID')
        expect(await code(a.readFrom(bad, 0)), bad).toBe('BAD_ID')
        expect(await code(a.append(bad, [])), bad).toBe('BAD_ID')
        expect(await code(a.close(bad)), bad).toBe('BAD_ID')
        expect(await code(a.flush(bad)), bad).toBe('BAD_ID')
        expect(() => a.create({ id: bad, cwd: '/w' })).toThrow(SessionPersistenceError)
      }
      const error = await a.load('../../etc').catch((e: unknown) => e)
      expect((error as Error).message).toMatch(/invalid session id "\.\.\/\.\.\/etc"/)
      expect(() =>
        a.create({ id: 'ok', cwd: '/w', parentSession: { sessionId: '../p' as never, boundary: 0 } }),
      ).toThrow(/parentSession: invalid session id/)
      expect(await a.list()).toEqual([])
    })

    it('refuses a second concurrent writer with a clear error, and allows it after close', async () => {
      const a = await backend()
      const b = await backend()
      await a.create({ id: 's2', cwd: '/w' })
      const error = await b.load('s2').catch((e: unknown) => e)
      expect(error).toBeInstanceOf(SessionPersistenceError)
      expect((error as SessionPersistenceError).code).toBe('LOCKED')
      expect((error as Error).message).toMatch(/s2.*(open for writing|cannot be opened)/)
      // Readers are not writers.
      expect((await b.inspect('s2')).events).toEqual([])
      await a.close('s2')
      await b.load('s2')
      expect(b.isOpen('s2')).toBe(true)
    })

    it('lists sessions with cwd, createdAt, title or first prompt and turns; latest(cwd)', async () => {
      const a = await backend()
      const one = eventLog('/w/one')
      await a.create({ id: one.session.id, cwd: '/w/one', createdAt: 1000 })
      completeTurn(one, 0, 'first   question\nhere')
      completeTurn(one, 1)
      await a.append(one.session.id, one.session.events)
      const two = eventLog('/w/two')
      await a.create({ id: two.session.id, cwd: '/w/two', createdAt: 2000 })
      completeTurn(two, 0)
      two.add('session/title', { title: 'Named', source: 'test' })
      await a.append(two.session.id, two.session.events)
      await a.flush()
      const rows = await a.list()
      const byId = new Map(rows.map((row) => [row.id, row]))
      expect(byId.get(one.session.id)).toMatchObject({
        cwd: '/w/one',
        createdAt: 1000,
        firstPrompt: 'first question here',
        turns: 2,
        events: one.session.length,
      })
      expect(byId.get(one.session.id)?.title).toBeUndefined()
      expect(byId.get(two.session.id)).toMatchObject({ cwd: '/w/two', title: 'Named', turns: 1 })
      expect((await a.latest('/w/two'))?.id).toBe(two.session.id)
      expect(await a.latest('/nowhere')).toBeUndefined()
      // One directory's listing: the same rows as the whole listing filtered, in the same order.
      expect(await a.list({ cwd: '/w/two' })).toEqual(rows.filter((row) => row.cwd === '/w/two'))
      expect(await a.list({ cwd: '/w' })).toEqual([])
    })

    it('readFrom returns the stored suffix from a seq', async () => {
      const a = await backend()
      const log = eventLog()
      await a.create({ id: log.session.id, cwd: '/w' })
      completeTurn(log, 0)
      completeTurn(log, 1)
      await a.append(log.session.id, log.session.events)
      await a.flush(log.session.id)
      const tail = await a.readFrom(log.session.id, 9)
      expect(tail.map((e) => e.seq)).toEqual(log.session.events.slice(9).map((e) => e.seq))
      expect(await a.readFrom(log.session.id, 1000)).toEqual([])
      await expect(a.readFrom(log.session.id, -1)).rejects.toThrow(RangeError)
    })

    it('repairs an unfinished log on load: orphaned calls answered, step and turn closed', async () => {
      const a = await backend()
      const log = eventLog()
      await a.create({ id: log.session.id, cwd: '/w' })
      completeTurn(log, 0)
      log.add('turn/start', { turn: 1 })
      log.add('step/start', { turn: 1, step: 0 })
      log.add('assistant/message', {
        message: {
          role: 'assistant',
          content: [
            { type: 'tool-call', callId: 'ran', name: 'bash', arguments: '{}' },
            { type: 'tool-call', callId: 'queued', name: 'bash', arguments: '{}' },
          ],
        },
      })
      log.add('tool/call', { callId: 'ran', name: 'bash', arguments: '{}' })
      log.add('tool/call', { callId: 'queued', name: 'bash', arguments: '{}' })
      log.add('tool/started', { callId: 'ran' })
      await a.append(log.session.id, log.session.events)
      await a.close(log.session.id)

      const b = await backend()
      const inspected = await b.inspect(log.session.id)
      const inspectedAgain = await b.inspect(log.session.id)
      expect(inspectedAgain).toEqual(inspected)
      expect((await b.readFrom(log.session.id, 0)).length).toBe(log.session.length)
      expect(inspected.repairs).toEqual([
        { kind: 'tool-result', callId: 'ran', name: 'bash', outcome: 'unknown' },
        { kind: 'tool-result', callId: 'queued', name: 'bash', outcome: 'not-started' },
        { kind: 'step-end', turn: 1, step: 0 },
        { kind: 'turn-end', turn: 1 },
      ])
      const loaded = await b.load(log.session.id)
      expect(loaded.repairs).toEqual(inspected.repairs)
      expect(loaded.warnings.join('\n')).toMatch(/interrupted/)
      const last = loaded.events[loaded.events.length - 1]
      expect(last.type).toBe('turn/end')
      expect((last.data as SessionEventMap['turn/end']).reason).toBe('interrupted')
      const restored = new Session({ cwd: '/w', events: loaded.events })
      const tools = restored.deriveMessages().filter((m) => m.role === 'tool')
      expect(tools.map((m) => m.role === 'tool' && m.callId)).toEqual(['call-0', 'ran', 'queued'])
      await b.close(log.session.id)
      // The repair was made durable: the next load is clean.
      const c = await backend()
      const clean = await c.load(log.session.id)
      expect(clean.repairs).toEqual([])
      expect(clean.events.length).toBe(loaded.events.length)
    })

    it('refuses event types it does not know unless the writer marked them ignorable', async () => {
      const writer = await backend()
      writer.registerEventType('future/strict')
      writer.registerEventType('future/soft', { ignorable: true })
      const strict = eventLog()
      await writer.create({ id: 'strict', cwd: '/w' })
      strict.add('turn/start', { turn: 0 })
      ;(strict.session as unknown as { append(t: string, d: unknown): void }).append('future/strict', { x: 1 })
      strict.add('turn/end', { turn: 0, reason: 'completed' })
      await writer.append('strict', strict.session.events)
      const soft = eventLog()
      await writer.create({ id: 'soft', cwd: '/w' })
      ;(soft.session as unknown as { append(t: string, d: unknown): void }).append('future/soft', { y: 2 })
      await writer.append('soft', soft.session.events)
      await writer.close('strict')
      await writer.close('soft')

      const reader = await backend()
      const error = await reader.load('strict').catch((e: unknown) => e)
      expect((error as SessionPersistenceError).code).toBe('UNKNOWN_EVENT_TYPE')
      expect((error as Error).message).toMatch(/future\/strict/)
      expect(reader.isOpen('strict')).toBe(false)
      const kept = await reader.load('soft')
      expect(kept.events.map((e) => e.type)).toEqual(['future/soft'])
      const dispose = reader.registerEventType('future/strict')
      expect((await reader.load('strict')).events.length).toBe(3)
      dispose()
      expect(reader.isKnownType('future/strict')).toBe(false)
    })

    it('closes writers on dispose, flushing what was queued', async () => {
      const handle = await open(root)
      const log = eventLog()
      await handle.persistence.create({ id: log.session.id, cwd: '/w' })
      completeTurn(log, 0)
      void handle.persistence.append(log.session.id, log.session.events)
      await handle.dispose()
      const b = await backend()
      expect((await b.load(log.session.id)).events.length).toBe(log.session.length)
    })

    if (options.child) {
      const child = options.child
      it('recovers a writer process killed with SIGKILL mid-turn', async () => {
        const script = fileURLToPath(new URL('./contract-child.ts', import.meta.url))
        const proc = spawn(
          process.execPath,
          ['--import', 'tsx', script, child.module, JSON.stringify(child.config(root))],
          {
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        )
        let out = ''
        let err = ''
        proc.stderr.on('data', (d) => (err += d))
        const id = await new Promise<string>((resolve, reject) => {
          proc.stdout.on('data', (d) => {
            out += d
            const match = /^durable (\S+)$/m.exec(out)
            if (match) resolve(match[1])
          })
          proc.on('exit', (status) => reject(new Error(`child exited (${status}) before it was durable: ${err}`)))
        })
        const exited = new Promise((resolve) => proc.on('exit', resolve))
        proc.kill('SIGKILL')
        await exited
        const b = await backend()
        const loaded = await b.load(id)
        expect(loaded.repairs).toEqual([
          { kind: 'tool-result', callId: 'long-bash', name: 'bash', outcome: 'unknown' },
          { kind: 'step-end', turn: 1, step: 0 },
          { kind: 'turn-end', turn: 1 },
        ])
        // Everything flushed before the kill is there: the first turn and the second one's start.
        const types = loaded.events.map((e) => e.type)
        expect(types.filter((t) => t === 'turn/end').length).toBe(2)
        expect(loaded.events.find((e) => e.type === 'tool/started')).toBeTruthy()
        const restored = new Session({ cwd: '/w', events: loaded.events })
        expect(restored.deriveMessages().at(-1)).toMatchObject({ role: 'tool', callId: 'long-bash', isError: true })
      }, 30_000)
    }
  })
}

export { SessionPersistenceError, completeTurn, eventLog }
