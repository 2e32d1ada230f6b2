// ACP `session/load` refuses a session id that is not one safe path segment, in the real `dsh-acp`
// bin driven by the official ACP client. The fixture makes the attack real: a complete session
// stored OUTSIDE the sessions root, at $DSH_HOME/outside, whose header names the id "../../outside"
// (what `<root>/<cwd-key>/../../outside` resolves to). Without the id gate session/load loads it
// and appends to it. (The headless and SDK boundaries are in session-persistence-jsonl's
// boundaries.e2e.test.ts.)
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { Context } from 'cordis'
import { completeTurn, eventLog } from '@dsh/session-persistence/contract'
import JsonlPersistence from '@dsh/session-persistence-jsonl'
import { initialize, startAcp, workspace, type AcpProcess } from '@dsh/cli-testkit/acp'

vi.setConfig({ testTimeout: 60_000 })

const EVIL = '../../outside'
const running: AcpProcess[] = []
afterEach(async () => {
  for (const p of running.splice(0)) await p.close().catch(() => {})
})

/** A workspace whose $DSH_HOME holds one real session inside the root and its copy outside it. */
async function fixture() {
  const { home, cwd } = workspace()
  mkdirSync(cwd, { recursive: true })
  const ctx = new Context()
  await ctx.plugin(JsonlPersistence, { root: join(home, 'sessions'), batchWindowMs: 1 })
  const p = ctx.sessionPersistence as JsonlPersistence
  const log = eventLog(cwd)
  await p.create({ id: 'victim', cwd })
  completeTurn(log, 0)
  await p.append('victim', log.session.events)
  await p.close('victim')
  const inside = (await p.sessionDir('victim'))!
  await (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
  const outside = join(home, 'outside')
  cpSync(inside, outside, { recursive: true })
  const header = JSON.parse(readFileSync(join(outside, 'header.json'), 'utf8'))
  writeFileSync(join(outside, 'header.json'), JSON.stringify({ ...header, id: EVIL }))
  const snapshot = () =>
    Object.fromEntries(readdirSync(outside).map((f) => [f, readFileSync(join(outside, f)).toString('base64')]))
  // session/load asks no model: the key only lets the profile boot.
  const env = { DSH_HOME: home, HOME: home, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' }
  return { cwd, outside, before: snapshot(), snapshot, env }
}

describe('a session id with ../ is refused by ACP', () => {
  it('session/load through the official ACP client against dsh-acp answers invalid params (-32602)', async () => {
    const f = await fixture()
    const acp = await startAcp(f.env, f.cwd)
    running.push(acp)
    await initialize(acp.agent)
    const error = await acp.agent
      .request('session/load', { sessionId: EVIL, cwd: f.cwd, mcpServers: [] })
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ code: -32602 })
    expect(String((error as Error).message) + JSON.stringify((error as { data?: unknown }).data ?? '')).toMatch(
      /invalid session id/,
    )
    expect(acp.updates).toEqual([])
    await acp.agent.request('session/load', { sessionId: 'victim', cwd: f.cwd, mcpServers: [] })
    expect(f.snapshot()).toEqual(f.before)
    expect(existsSync(join(f.outside, 'writer.lock'))).toBe(false)
  })
})
