// Session ids that are not one safe path segment are refused at every boundary that opens a stored
// session, by the real bins: `dsh --resume` (headless) and `session/resume` of dsh-jsonrpc-agent
// through the SDK client. (ACP `session/load` of dsh-acp is acp-app's session-id.e2e.test.ts: this
// package is a dependency of acp-app, so its tests do not import acp-app's harness.)
//
// The fixture makes the attack real: a complete session stored OUTSIDE the sessions root, at
// $DSH_HOME/outside, whose header names the id "../../outside" — exactly what
// `<root>/<cwd-key>/../../outside` resolves to. Without the id gate every front end loads it (and
// appends to it).
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { Context } from 'cordis'
import { completeTurn, eventLog } from '@dsh/session-persistence/contract'
import JsonlPersistence from '../src/index.ts'
import { runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { Harness, HarnessError } from '@dsh/sdk-client'

vi.setConfig({ testTimeout: 60_000 })

const jsonrpcBin = fileURLToPath(new URL('../../../sdk/server/bin/dsh-jsonrpc-agent.mjs', import.meta.url))
const EVIL = '../../outside'

let mock: MockServer | undefined
const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const undo of cleanups.splice(0)) await undo().catch(() => {})
  await mock?.close()
  mock = undefined
})

/** A workspace whose $DSH_HOME holds one real session inside the root and its copy outside it. */
async function fixture() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-ids-')))
  const home = join(root, 'home')
  const cwd = join(root, 'work')
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
  mock = await startMockServer({ steps: [{ text: 'loaded the outside session' }] as never })
  const env = {
    DSH_HOME: home,
    HOME: home,
    DEEPSEEK_BASE_URL: mock.baseURL,
    DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
  }
  return { home, cwd, outside, before: snapshot(), snapshot, env }
}

describe('a session id with ../ is refused at every boundary', () => {
  it('headless: dsh --resume ../../outside is one clear line, exit 1, and the outside session is untouched', async () => {
    const f = await fixture()
    const run = await runDsh(['--profile', 'headless', '--resume', EVIL, 'hi'], { cwd: f.cwd, env: f.env })
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr.trim().split('\n')).toHaveLength(1)
    expect(run.stderr).toMatch(/^dsh: .*invalid session id "\.\.\/\.\.\/outside"/)
    expect(mock!.requests).toHaveLength(0)
    expect(f.snapshot()).toEqual(f.before)
    expect(existsSync(join(f.outside, 'writer.lock'))).toBe(false)
  })

  it('SDK: session/resume through @dsh/sdk-client against dsh-jsonrpc-agent answers INVALID_PARAMS (-32602)', async () => {
    const f = await fixture()
    const harness = await Harness.start({ bin: jsonrpcBin, cwd: f.cwd, env: { PATH: process.env.PATH, ...f.env } })
    cleanups.push(() => harness.close())
    const error = await harness.resumeSession(EVIL).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(HarnessError)
    expect((error as HarnessError).code).toBe('INVALID_PARAMS')
    expect((error as HarnessError).details.rpcCode).toBe(-32602)
    expect((error as Error).message).toMatch(/invalid session id "\.\.\/\.\.\/outside"/)
    // The server is still usable, and a valid id still resumes.
    const ok = await harness.resumeSession('victim')
    expect(ok.id).toBe('victim')
    expect(f.snapshot()).toEqual(f.before)
    expect(existsSync(join(f.outside, 'writer.lock'))).toBe(false)
  })
})
