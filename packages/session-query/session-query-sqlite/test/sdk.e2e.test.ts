// `session/search` of dsh-jsonrpc-agent (the session-query row of bundle-base) through the TypeScript
// SDK client: a phrase of a running session, then of a stored one in a new server process; syntax
// stays literal and bad text is INVALID_PARAMS.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { Harness } from '@dsh/sdk-client'

vi.setConfig({ testTimeout: 90_000 })

const bin = fileURLToPath(new URL('../../../sdk/server/bin/dsh-jsonrpc-agent.mjs', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'dsh-sdk-search-'))
let mock: MockServer | undefined
const open: Harness[] = []

afterAll(async () => {
  await Promise.all(open.map((h) => h.close()))
  await mock?.close()
  rmSync(root, { recursive: true, force: true })
})

async function start() {
  mock ??= await startMockServer({ steps: [{ text: 'Noted the zanzibar-quokka plan.' }] as never })
  const harness = await Harness.start({
    bin,
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: root,
      DSH_HOME: join(root, 'home'),
      DEEPSEEK_BASE_URL: mock.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
    },
  })
  open.push(harness)
  return harness
}

describe('session/search over the SDK', () => {
  it('finds live and stored sessions; literal syntax; bad text is INVALID_PARAMS', async () => {
    const first = await start()
    const session = await first.createSession()
    await session.prompt('remember the zanzibar-quokka plan')
    const live = await first.searchSessions('zanzibar-quokka')
    expect(live.map((h) => [h.sessionId, h.live])).toEqual([[session.id, true]])
    expect(live[0].matches).toBeGreaterThanOrEqual(2)
    await first.close()

    const second = await start()
    const stored = await second.searchSessions('ZANZIBAR-QUOKKA', { cwd: root, limit: 5 })
    expect(stored.map((h) => [h.sessionId, h.live])).toEqual([[session.id, false]])
    expect(await second.searchSessions('"); DROP TABLE fts; --')).toEqual([])
    expect(await second.searchSessions('zanzibar', { cwd: '/somewhere/else' })).toEqual([])
    await expect(second.searchSessions('zz')).rejects.toMatchObject({ code: 'INVALID_PARAMS' })
  })
})
