import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { Context, type Message as LogMessage } from 'cordis'
import { createServer, type Server } from 'node:http'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import WebServer from '@dsh/webserver'
import ApiGateway from '@dsh/api-gateway'
import { MemorySettings } from '@dsh/settings'
import { LlmService } from '@dsh/llm'
import LocalCredentials from '@dsh/credentials-local'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import * as ApiModels from '../src/index.ts'

const GOOD = 'sk-good-4d3c2b1a-models-test'
const BAD = 'sk-bad-9a8b7c6d-models-test'

let root: string
let app: { dispose(): unknown } | undefined
let ctx: Context
let port: number
let logs: LogMessage[]
let mock: MockServer
let gate: Server
let gateURL: string

/** A provider's model listing that accepts only GOOD (the real OpenAI error shape for the rest). */
function startGate(): Promise<void> {
  gate = createServer((req, res) => {
    if (req.url !== '/v1/models') return void res.writeHead(404).end()
    if (req.headers.authorization !== `Bearer ${GOOD}`) {
      res.writeHead(401, { 'content-type': 'application/json' })
      return void res.end(
        JSON.stringify({
          error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' },
        }),
      )
    }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ object: 'list', data: [{ id: 'gate-large' }, { id: 'gate-small' }] }))
  })
  return new Promise((resolve) =>
    gate.listen(0, '127.0.0.1', () => {
      gateURL = `http://127.0.0.1:${(gate.address() as { port: number }).port}/v1`
      resolve()
    }),
  )
}

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'dsh-api-models-'))
  mkdirSync(join(root, 'home'))
  mock = await startMockServer({ steps: [{ text: 'from the endpoint' }] })
  await startGate()
  const fiber = new Context().plugin({ name: 'test-host', apply() {} })
  await fiber
  app = fiber
  ctx = fiber.ctx
  logs = []
  ctx.logger.exporter({ levels: { default: 5 }, export: (m) => void logs.push(m) })
  await ctx.plugin(WebServer, { port: 0 } as never)
  await ctx.plugin(ApiGateway, { sessions: false } as never)
  await ctx.plugin(MemorySettings, { initial: {} })
  await ctx.plugin(LlmService)
  await ctx.plugin(LocalCredentials, { home: join(root, 'home'), cwd: root, projectEnv: false, checkAtStart: false })
  await ctx.plugin(ApiModels, {
    deepseek: { route: 'deepseek-official', keyName: 'DSH_TEST_DEEPSEEK_KEY', baseURL: gateURL },
  } as never)
  port = (ctx.get('webServer') as WebServer).port
})

afterEach(async () => {
  await app?.dispose()
  app = undefined
  await mock.close()
  await new Promise((resolve) => gate.close(resolve))
  for (const m of logs) {
    expect(JSON.stringify(m.args)).not.toContain(GOOD)
    expect(JSON.stringify(m.args)).not.toContain(BAD)
  }
  rmSync(root, { recursive: true, force: true })
})

async function call(
  method: string,
  params: unknown,
): Promise<{
  status: number
  text: string
  body: { result?: any; error?: { code: string; message: string; field?: string } }
}> {
  const res = await fetch(`http://127.0.0.1:${port}/api/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(params),
  })
  const text = await res.text()
  return { status: res.status, text, body: JSON.parse(text) }
}

const credentialsFile = () => {
  try {
    return readFileSync(join(root, 'home', '.credentials.yaml'), 'utf8')
  } catch {
    return ''
  }
}

describe('models.catalog', () => {
  it('lists DeepSeek and the pi-ai providers with their key names, never a value', async () => {
    const { status, body } = await call('models.catalog', {})
    expect(status).toBe(200)
    const providers = body.result.providers as ApiModels.WireProvider[]
    expect(providers[0]).toMatchObject({
      id: 'deepseek-official',
      kind: 'deepseek',
      keyName: 'DSH_TEST_DEEPSEEK_KEY',
      keyConfigured: false,
    })
    const openai = providers.find((p) => p.id === 'openai')!
    expect(openai).toMatchObject({ kind: 'pi-ai', keyName: 'OPENAI_API_KEY', routed: false, managed: false })
    expect(providers.find((p) => p.id === 'anthropic')?.keyName).toMatch(/^ANTHROPIC_/)
    // One row per provider: pi-ai's own DeepSeek entry is not listed beside the native one.
    expect(providers.filter((p) => p.label === 'DeepSeek').map((p) => p.id)).toEqual(['deepseek-official'])
    const ids = providers.map((p) => p.id)
    expect(ids.length).toBe(new Set(ids).size)
  })
})

describe('models.setKey', () => {
  it('stores a key the provider accepts, and says it was verified', async () => {
    const { status, body, text } = await call('models.setKey', { provider: 'deepseek-official', value: GOOD })
    expect(status).toBe(200)
    expect(body.result).toMatchObject({ verified: true, provider: { id: 'deepseek-official', keyConfigured: true } })
    expect(text).not.toContain(GOOD)
    expect(await (ctx.get('credentials') as LocalCredentials).get('DSH_TEST_DEEPSEEK_KEY')).toBe(GOOD)
  })

  it('refuses a key the provider rejects and keeps the one that was there', async () => {
    await call('models.setKey', { provider: 'deepseek-official', value: GOOD })
    const before = credentialsFile()
    const { status, body, text } = await call('models.setKey', { provider: 'deepseek-official', value: BAD })
    expect(status).toBe(400)
    expect(body.error).toMatchObject({ code: 'KEY_REJECTED', field: 'value' })
    expect(body.error!.message).toContain('Incorrect API key provided')
    expect(text).not.toContain(BAD)
    expect(credentialsFile()).toBe(before)
    expect(await (ctx.get('credentials') as LocalCredentials).get('DSH_TEST_DEEPSEEK_KEY')).toBe(GOOD)
  })

  it('stores an unverifiable key with a note (provider unreachable)', async () => {
    await new Promise((resolve) => gate.close(resolve))
    gate.closeAllConnections()
    const { status, body } = await call('models.setKey', { provider: 'deepseek-official', value: GOOD })
    expect(status).toBe(200)
    expect(body.result.verified).toBe(false)
    expect(body.result.note).toMatch(/^not verified: /)
    await startGate()
  })

  it('gives a pi-ai provider its route once its key is set', async () => {
    // The openai catalog's own endpoint is not reachable here: the key is stored unverified.
    const { body } = await call('models.setKey', { provider: 'groq', value: 'gsk-some-key' })
    expect(body.result.provider).toMatchObject({ id: 'groq', routed: true, managed: true, keyConfigured: true })
    expect((ctx.get('llm') as LlmService).listProviders()).toContain('groq')
    expect((ctx.get('settings') as MemorySettings).get(ApiModels.SETTINGS_NAMESPACE)).toEqual({ routes: { groq: {} } })
  }, 30_000)

  it('forgets a stored key', async () => {
    await call('models.setKey', { provider: 'deepseek-official', value: GOOD })
    const { body } = await call('models.forgetKey', { provider: 'deepseek-official' })
    expect(body.result.provider).toMatchObject({ id: 'deepseek-official', keyConfigured: false })
    expect(credentialsFile()).not.toContain(GOOD)
  })

  it('answers bad input with the field named', async () => {
    expect((await call('models.setKey', { provider: 'nope', value: GOOD })).body.error).toMatchObject({
      code: 'UNKNOWN_PROVIDER',
      field: 'provider',
    })
    expect(
      (await call('models.setKey', { provider: 'deepseek-official', value: 'two words' })).body.error,
    ).toMatchObject({ code: 'INVALID_PARAMS', field: 'value' })
  })
})

describe('models.addEndpoint', () => {
  it('declares an OpenAI-compatible route that answers at once, and removes it', async () => {
    const { status, body } = await call('models.addEndpoint', {
      name: 'mock',
      baseURL: mock.baseURL,
      models: [{ id: 'mock-coder', contextWindow: 32000 }],
    })
    expect(status).toBe(200)
    expect(body.result.provider).toMatchObject({
      id: 'mock',
      kind: 'openai-compatible',
      routed: true,
      managed: true,
      models: ['mock-coder'],
    })
    const llm = ctx.get('llm') as LlmService
    let text = ''
    for await (const chunk of llm.stream({
      provider: 'mock',
      model: 'mock-coder',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    } as never)) {
      if (chunk.kind === 'text-delta') text += chunk.text
    }
    expect(text).toBe('from the endpoint')
    expect((mock.requests[0].body as { model: string }).model).toBe('mock-coder')
    expect((await call('models.removeProvider', { name: 'mock' })).body.result).toEqual({ removed: true })
    expect(llm.listProviders()).not.toContain('mock')
  })

  it('keeps the endpoint key as a credential, refusing one the endpoint rejects', async () => {
    const rejected = await call('models.addEndpoint', {
      name: 'gate',
      baseURL: gateURL,
      apiKey: BAD,
      models: [{ id: 'gate-large' }],
    })
    expect(rejected.body.error).toMatchObject({ code: 'KEY_REJECTED' })
    expect((ctx.get('settings') as MemorySettings).get(ApiModels.SETTINGS_NAMESPACE)).toBeUndefined()
    const ok = await call('models.addEndpoint', {
      name: 'gate',
      baseURL: gateURL,
      apiKey: GOOD,
      models: [{ id: 'gate-large' }],
    })
    expect(ok.body.result.provider).toMatchObject({ keyName: 'GATE_API_KEY', keyConfigured: true, routed: true })
    expect(await (ctx.get('credentials') as LocalCredentials).get('GATE_API_KEY')).toBe(GOOD)
    // Discovery with the stored key.
    expect((await call('models.discover', { provider: 'gate' })).body.result.models).toEqual([
      'gate-large',
      'gate-small',
    ])
  })

  it('refuses a bad endpoint naming the field, and a taken route name', async () => {
    const bad = await call('models.addEndpoint', { name: 'x', baseURL: 'ftp://example', models: [{ id: 'a' }] })
    expect(bad.body.error).toMatchObject({ code: 'INVALID_PARAMS', field: 'baseURL' })
    const dup = await call('models.addEndpoint', {
      name: 'x',
      baseURL: mock.baseURL,
      models: [{ id: 'a' }, { id: 'a' }],
    })
    expect(dup.body.error).toMatchObject({ field: 'models[1].id' })
    await call('models.setKey', { provider: 'groq', value: 'gsk-k' })
    const taken = await call('models.addEndpoint', {
      name: 'deepseek-official',
      baseURL: mock.baseURL,
      models: [{ id: 'a' }],
    })
    // deepseek-official is not registered in this test tree, so the name is free; a registered one is refused.
    expect(taken.status).toBe(200)
    ctx.plugin({
      name: 'other',
      inject: ['llm'],
      apply: (c: Context) =>
        void c.llm.registerAdapter({
          provider: 'other',
          stream: async function* () {},
          listModels: async () => [],
        } as never),
    })
    const refused = await call('models.addEndpoint', { name: 'other', baseURL: mock.baseURL, models: [{ id: 'a' }] })
    expect(refused.body.error).toMatchObject({ code: 'ROUTE_TAKEN', field: 'name' })
  }, 30_000)
})

describe('models.discover', () => {
  it("lists an endpoint's models, and says when it cannot", async () => {
    expect((await call('models.discover', { baseURL: mock.baseURL })).body.result.models).toEqual(['deepseek-v4-flash'])
    expect((await call('models.discover', { baseURL: gateURL, apiKey: BAD })).body.error).toMatchObject({
      code: 'KEY_REJECTED',
    })
    expect((await call('models.discover', { baseURL: 'http://127.0.0.1:1/v1' })).body.error).toMatchObject({
      code: 'DISCOVERY_FAILED',
      field: 'baseURL',
    })
  })

  it('unloading the plugin unregisters its routes', async () => {
    await call('models.addEndpoint', { name: 'mock', baseURL: mock.baseURL, models: [{ id: 'm' }] })
    const llm = ctx.get('llm') as LlmService
    expect(llm.listProviders()).toContain('mock')
    ctx.registry.delete(ApiModels as never)
    // The fibers dispose asynchronously: wait for the route to go, however long that takes.
    await vi.waitFor(() => expect(llm.listProviders()).not.toContain('mock'), { timeout: 10_000 })
  })
})
