// plugins.describe / setEnabled / configure against the real `dsh web` and the mock model: a
// disabled tool is gone from the next request and stays gone after a restart; a bad config is
// refused with the field named and nothing is written.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import { startWebApp, type WebApp } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 })

let app: WebApp
const layer = () => join(app.home, '.dsh', 'profiles', 'web', 'cordis.patch.yml')
const toolsOf = (i: number) =>
  ((app.mock.requests[i].body as { tools?: { function: { name: string } }[] }).tools ?? []).map((t) => t.function.name)

async function prompt(text: string): Promise<void> {
  const before = app.mock.requests.length
  const { session } = await app.call('sessions.create', { cwd: app.cwd })
  await app.call('sessions.prompt', { sessionId: session.sessionId, text })
  await vi.waitFor(() => expect(app.mock.requests.length).toBe(before + 1), { timeout: 30_000, interval: 100 })
}

async function callError(method: string, params: unknown): Promise<string> {
  try {
    await app.call(method, params)
  } catch (error) {
    return (error as Error).message
  }
  throw new Error(`${method} succeeded`)
}

beforeAll(async () => {
  const fixture = fileURLToPath(new URL('./fixtures/secret-plugin.mjs', import.meta.url))
  app = await startWebApp({
    steps: [{ text: 'one' }, { text: 'two' }, { text: 'three' }],
    patch: `- insert:\n    - id: secret-fixture\n      name: ${JSON.stringify(fixture)}\n      config: { label: first, token: tok-never-sent-123 }\n`,
  })
})

afterAll(async () => {
  await app?.close()
})

describe('plugin rows through the API', () => {
  it('describes a row with its schema and composed config', async () => {
    const detail = await app.call('plugins.describe', { id: 'timeout-policy' })
    expect(detail.row).toMatchObject({
      id: 'timeout-policy',
      package: '@dsh/timeout-policy',
      enabled: true,
      state: 'active',
    })
    expect(detail.editable).toBe(true)
    expect(detail.config).toMatchObject({ defaultMs: 0 })
    expect(detail.layer).toBe(layer())
    expect((await app.call('plugins.describe', { id: 'api-gateway' })).toggleable).toBe(false)
    expect(await callError('plugins.describe', { id: 'nope' })).toMatch(/404 UNKNOWN_ROW/)
  })

  it('a disabled tool row is gone from the next request, and stays disabled after a restart', async () => {
    await prompt('first')
    expect(toolsOf(0)).toContain('bash')
    const detail = await app.call('plugins.setEnabled', { id: 'tool-bash', enabled: false })
    expect(detail.row).toMatchObject({ enabled: false, state: 'disabled' })
    expect(parse(readFileSync(layer(), 'utf8'))).toContainEqual({ id: 'tool-bash', disabled: true })
    await prompt('second')
    expect(toolsOf(1)).not.toContain('bash')
    expect(toolsOf(1).length).toBeGreaterThan(0)
    await app.restart()
    const rows = (await app.call('plugins.list', {})).plugins as { id: string; enabled: boolean }[]
    expect(rows.find((r) => r.id === 'tool-bash')?.enabled).toBe(false)
    const back = await app.call('plugins.setEnabled', { id: 'tool-bash', enabled: true })
    expect(back.row).toMatchObject({ enabled: true, state: 'active' })
    await prompt('third')
    expect(toolsOf(2)).toContain('bash')
  })

  it('refuses a bad config naming the field and writes nothing; a good one is applied and kept', async () => {
    const before = existsSync(layer()) ? readFileSync(layer(), 'utf8') : ''
    expect(
      await callError('plugins.configure', { id: 'timeout-policy', config: { defaultMs: -5, perTool: {} } }),
    ).toMatch(/400 INVALID_CONFIG: .*field config\.defaultMs/)
    expect(existsSync(layer()) ? readFileSync(layer(), 'utf8') : '').toBe(before)
    const ok = await app.call('plugins.configure', {
      id: 'timeout-policy',
      config: { defaultMs: 120000, perTool: { bash: 5000 } },
    })
    expect(ok.config).toEqual({ defaultMs: 120000, perTool: { bash: 5000 } })
    expect(ok.row.state).toBe('active')
    expect(parse(readFileSync(layer(), 'utf8'))).toContainEqual({
      id: 'timeout-policy',
      config: { defaultMs: 120000, perTool: { bash: 5000 } },
    })
    expect(await callError('plugins.setEnabled', { id: 'api-gateway', enabled: false })).toMatch(/409 PROTECTED_ROW/)
  })

  it('plugins.list marks the rows the app cannot run without, and a switch of one is refused', async () => {
    const { plugins } = await app.call('plugins.list', {})
    const row = (id: string) => plugins.find((r: { id: string }) => r.id === id)
    expect(row('api-gateway')).toMatchObject({ toggleable: false, lockedReason: 'dsh web cannot run without this row' })
    expect(row('storage')).toMatchObject({ toggleable: false })
    // An ordinary row carries no lock (absent means switchable, as from hosts before the field).
    expect(row('tool-bash')).toBeDefined()
    expect(row('tool-bash').toggleable).toBeUndefined()
    const refused = await callError('plugins.setEnabled', { id: 'storage', enabled: false })
    expect(refused).toMatch(/409 PROTECTED_ROW/)
    expect(refused).toContain(
      'row "storage" cannot be switched off or changed here: dsh web cannot run without this row',
    )
    expect(row('storage').enabled).toBe(true)
    expect((await app.call('plugins.list', {})).plugins.find((r: { id: string }) => r.id === 'storage').enabled).toBe(
      true,
    )
  })

  it('never sends a secret field, and keeps it when a saved config leaves it out', async () => {
    const res = await fetch(`${app.url}/api/plugins.describe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: app.url },
      body: JSON.stringify({ id: 'secret-fixture' }),
    })
    const text = await res.text()
    expect(text).not.toContain('tok-never-sent-123')
    const detail = JSON.parse(text).result
    expect(detail.config).toEqual({ label: 'first' })
    expect(detail.secrets).toEqual([{ path: 'token', set: true }])
    const saved = await app.call('plugins.configure', { id: 'secret-fixture', config: { label: 'second' } })
    expect(saved.config).toEqual({ label: 'second' })
    expect(parse(readFileSync(layer(), 'utf8'))).toContainEqual({
      id: 'secret-fixture',
      config: { label: 'second', token: 'tok-never-sent-123' },
    })
  })

  it('a config the schema accepts but the plugin refuses at start is undone, in the tree and the file', async () => {
    const before = readFileSync(layer(), 'utf8')
    const message = await callError('plugins.configure', {
      id: 'llm-pi-ai',
      config: { routes: { broken: { provider: 'no-such-provider' } } },
    })
    expect(message).toMatch(
      /409 APPLY_FAILED: plugins\.configure: row "llm-pi-ai" failed to start \(.*no-such-provider.*\); the change was undone/,
    )
    expect(readFileSync(layer(), 'utf8')).toBe(before)
    // The profile's file watcher (hot reload) may see the short-lived edit too; it settles on the
    // restored file.
    await vi.waitFor(
      async () => {
        const detail = await app.call('plugins.describe', { id: 'llm-pi-ai' })
        expect(detail.row.state).toBe('active')
        expect(detail.config).toEqual({ routes: {} })
      },
      { timeout: 10_000, interval: 200 },
    )
  })
})
