// `dsh sessions` shows this directory's most recent sessions (50 by default) with a footer on
// stderr saying how many more there are; `--limit N` sets the count, `--all` lists every stored
// session. The store is written by the real JSONL backend (55 one-turn sessions, no model needed),
// then listed by the real bin.
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { Context, type Plugin } from 'cordis'
import { runDsh } from '@dsh/cli-testkit'
import SessionStore, { Session } from '@dsh/session'
import JsonlPersistence, { INDEX_FILE, readIndex } from '@dsh/session-persistence-jsonl'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 })

const HERE = 53
const ELSEWHERE = 2
let root: string
let home: string
let cwd: string
const env = () => ({ DSH_HOME: home, HOME: home })
const id = (i: number) => `limit-${String(i).padStart(3, '0')}`
/** The ids of the table's rows (stdout), in order. */
const ids = (stdout: string) =>
  stdout
    .split('\n')
    .slice(1)
    .filter(Boolean)
    .map((line) => line.split(' ')[0])

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-sessions-limit-')))
  home = join(root, 'home')
  cwd = join(root, 'work')
  mkdirSync(cwd, { recursive: true })
  const ctx = new Context()
  const mount = async (p: unknown, config?: unknown) => await ctx.plugin(p as Plugin, config as never)
  await mount(SessionStore)
  await mount(JsonlPersistence, { root: join(home, 'sessions'), fsync: false, batchWindowMs: 1 })
  // Session i was last updated at minute i: the higher the number, the more recent.
  for (let i = 0; i < HERE + ELSEWHERE; i++) {
    const where = i < HERE ? cwd : join(root, 'elsewhere')
    let t = 1_700_000_000_000 + i * 60_000
    const session = new Session({ cwd: where, id: id(i), clock: () => (t += 10) })
    session.append('turn/start', { turn: 0 })
    session.append('user/message', { content: [{ type: 'text', text: `task ${i}` }], source: { kind: 'human' } })
    session.append('turn/end', { turn: 0, reason: 'completed' })
    await ctx.sessionPersistence.create({ id: session.id, cwd: where, createdAt: 1_700_000_000_000 + i * 60_000 })
    await ctx.sessionPersistence.append(session.id, session.events)
    await ctx.sessionPersistence.close(session.id)
  }
  await ctx.fiber.dispose?.()
})

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true })
})

const newest = (count: number, below = HERE) => Array.from({ length: count }, (_, k) => id(below - 1 - k))

describe('dsh sessions: the default limit', () => {
  it("shows this directory's 50 most recent sessions and says how many more there are", async () => {
    const run = await runDsh(['sessions'], { cwd, env: env() })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/^ID\s+UPDATED\s+TURNS\s+TITLE\n/)
    expect(ids(run.stdout)).toEqual(newest(50))
    expect(run.stderr).toBe(
      `dsh: the 50 most recent of ${HERE} sessions of ${cwd} (--limit N shows N, --all lists every stored session)\n`,
    )
  })

  it('--limit N shows at most N; a limit above the count shows every row and no footer', async () => {
    const two = await runDsh(['sessions', '--limit', '2'], { cwd, env: env() })
    expect(two.code, two.stderr).toBe(0)
    expect(ids(two.stdout)).toEqual(newest(2))
    expect(two.stderr).toMatch(/^dsh: the 2 most recent of 53 sessions of /)
    const every = await runDsh(['sessions', '--limit', '60'], { cwd, env: env() })
    expect(every.code, every.stderr).toBe(0)
    expect(ids(every.stdout)).toEqual(newest(HERE))
    expect(every.stderr).toBe('')
  })

  it('--all lists every stored session; --all --limit N the N most recent of them', async () => {
    const all = await runDsh(['sessions', '--all'], { cwd, env: env() })
    expect(all.code, all.stderr).toBe(0)
    expect(ids(all.stdout)).toEqual(newest(HERE + ELSEWHERE, HERE + ELSEWHERE))
    expect(all.stderr).toBe('')
    const three = await runDsh(['sessions', '--all', '--limit', '3'], { cwd, env: env() })
    expect(ids(three.stdout)).toEqual(newest(3, HERE + ELSEWHERE))
    expect(three.stderr).toBe(`dsh: the 3 most recent of ${HERE + ELSEWHERE} stored sessions (--limit N shows N)\n`)
  })

  it('JSON lists every row unless --limit is given (no footer can say rows are missing)', async () => {
    const json = await runDsh(['sessions', '--output-format', 'json'], { cwd, env: env() })
    expect(json.code, json.stderr).toBe(0)
    expect(JSON.parse(json.stdout).map((r: { id: string }) => r.id)).toEqual(newest(HERE))
    const two = await runDsh(['sessions', '--output-format', 'json', '--limit', '2'], { cwd, env: env() })
    expect(JSON.parse(two.stdout).map((r: { id: string }) => r.id)).toEqual(newest(2))
    expect(two.stderr).toBe('')
  })

  it('--help names the default; a bad --limit is one line and exit 2', async () => {
    const help = await runDsh(['sessions', '--help'], { cwd, env: env() })
    expect(help.code).toBe(0)
    expect(help.stdout).toContain("this directory's 50 most recent sessions")
    for (const bad of ['0', 'x', '2.5']) {
      const run = await runDsh(['sessions', '--limit', bad], { cwd, env: env() })
      expect(run.code).toBe(2)
      expect(run.stderr.split('\n')[0]).toBe(`dsh sessions: --limit must be a positive integer, not '${bad}'`)
    }
  })

  it('without --all the store reads this directory only (the others are not checked or recomputed)', async () => {
    const store = join(home, 'sessions')
    // With no index every row must be computed from its session: the listing appends what it computed.
    rmSync(join(store, INDEX_FILE))
    const run = await runDsh(['sessions'], { cwd, env: env() })
    expect(run.code, run.stderr).toBe(0)
    expect(ids(run.stdout)).toEqual(newest(50))
    expect([...readIndex(store).rows.keys()].sort()).toEqual(newest(HERE).sort())
    const all = await runDsh(['sessions', '--all'], { cwd, env: env() })
    expect(all.code, all.stderr).toBe(0)
    expect(readIndex(store).rows.size).toBe(HERE + ELSEWHERE)
  })
})
