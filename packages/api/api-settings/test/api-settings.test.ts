import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context, type Message as LogMessage } from 'cordis'
import Schema from 'schemastery'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import WebServer from '@dsh/webserver'
import ApiGateway from '@dsh/api-gateway'
import { MemorySettings } from '@dsh/settings'
import LocalCredentials from '@dsh/credentials-local'
import SettingsCatalog, { secretPaths } from '../src/index.ts'

const SECRET = 'sk-apisettings-9f8e7d6c5b4a-never-on-the-wire'
const NAME = `APISETTINGS_${process.pid}_KEY`

let root: string
let home: string
let app: { dispose(): unknown } | undefined
let ctx: Context
let port: number
let logs: LogMessage[]

const WebSettings = Schema.object({
  theme: Schema.union(['light', 'dark', 'system'] as const)
    .default('system')
    .description('Colour theme.'),
  fontSize: Schema.natural().min(8).max(40).default(14),
  proxy: Schema.object({ url: Schema.string().default(''), token: Schema.string().role('secret') }).default({
    url: '',
  } as never),
})

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'dsh-api-settings-'))
  home = join(root, 'home')
  mkdirSync(home)
  const fiber = new Context().plugin({ name: 'test-host', apply() {} })
  await fiber
  app = fiber
  ctx = fiber.ctx
  logs = []
  ctx.logger.exporter({ levels: { default: 5 }, export: (m) => void logs.push(m) })
  await ctx.plugin(WebServer, { port: 0 } as never)
  await ctx.plugin(ApiGateway, { sessions: false } as never)
  await ctx.plugin(MemorySettings, {
    initial: { web: { theme: 'dark', proxy: { url: 'http://proxy', token: 'tok-secret-123' } } },
  })
  await ctx.plugin(LocalCredentials, { home, cwd: root, projectEnv: false, checkAtStart: false })
  await ctx.plugin(SettingsCatalog, { exposeModel: false, credentials: [{ name: NAME, description: 'test key' }] })
  port = (ctx.get('webServer') as WebServer).port
})

afterEach(async () => {
  await app?.dispose()
  app = undefined
  delete process.env[NAME]
  // Nothing logged anywhere in the stack may contain a secret value.
  for (const m of logs) expect(JSON.stringify(m.args)).not.toContain(SECRET)
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

const settings = () => ctx.get('settings') as MemorySettings
const credentials = () => ctx.get('credentials') as LocalCredentials
const api = () => ctx.get('api') as ApiGateway

function catalog(): SettingsCatalog {
  return ctx.get('settingsCatalog') as SettingsCatalog
}

describe('settings.describe / settings.update', () => {
  it('describes exposed sections with their schema JSON and value; secret fields say only whether they are set', async () => {
    const exposure = ctx.plugin({
      name: 'web-prefs',
      inject: ['settingsCatalog'],
      apply: (c: Context) =>
        void (c.get('settingsCatalog') as SettingsCatalog).expose('web', WebSettings, { title: 'Appearance' }),
    })
    await exposure
    const { status, body, text } = await call('settings.describe', {})
    expect(status).toBe(200)
    expect(text).not.toContain('tok-secret-123')
    const [section] = body.result.sections
    expect(section).toMatchObject({
      namespace: 'web',
      title: 'Appearance',
      value: { theme: 'dark', fontSize: 14, proxy: { url: 'http://proxy' } },
      secrets: [{ path: 'proxy.token', set: true }],
    })
    // The schema JSON rebuilds into a working schema (what a browser does with it).
    const rebuilt = Schema(section.schema)
    expect(rebuilt(undefined)).toMatchObject({ theme: 'system', fontSize: 14 })
    expect(() => rebuilt({ theme: 'neon' })).toThrow()
    expect(body.result.location).toBe('memory settings')

    // Unloading the exposing plugin removes the section.
    await exposure.dispose()
    expect((await call('settings.describe', {})).body.result.sections).toEqual([])
  })

  it('updates a section through ctx.settings after validating the merged result; a bad value names the field and writes nothing', async () => {
    catalog().expose('web', WebSettings)
    const ok = await call('settings.update', { namespace: 'web', patch: { fontSize: 18 } })
    expect(ok.status).toBe(200)
    expect(ok.body.result.value).toMatchObject({ theme: 'dark', fontSize: 18 })
    expect(settings().get('web')).toMatchObject({ theme: 'dark', fontSize: 18 })

    const bad = await call('settings.update', { namespace: 'web', patch: { fontSize: 200 } })
    expect(bad.status).toBe(400)
    expect(bad.body.error).toMatchObject({ code: 'INVALID_SETTINGS', field: 'web.fontSize' })
    expect(bad.body.error!.message).toContain('fontSize')
    expect(settings().get('web')).toMatchObject({ fontSize: 18 })

    const unknown = await call('settings.update', { namespace: 'nope', patch: {} })
    expect(unknown.status).toBe(404)
    expect(unknown.body.error).toMatchObject({ code: 'UNKNOWN_SECTION', field: 'namespace' })

    const badParams = await call('settings.update', { namespace: 'web' })
    expect(badParams.status).toBe(400)
    expect(badParams.body.error).toMatchObject({ code: 'INVALID_PARAMS', field: 'patch' })
  })
})

describe('credentials.describe / set / unset', () => {
  it('a secret value goes in and never comes out: set answers where, describe says configured, the file holds it, no response or log has it', async () => {
    const before = await call('credentials.describe', {})
    expect(before.body.result.credentials).toEqual([
      expect.objectContaining({ name: NAME, description: 'test key', configured: false, shadowed: [] }),
    ])

    const set = await call('credentials.set', { name: NAME, value: SECRET })
    expect(set.status).toBe(200)
    expect(set.text).not.toContain(SECRET)
    expect(set.body.result.credential).toMatchObject({ name: NAME, configured: true, source: 'credentials-file' })

    const after = await call('credentials.describe', { names: [NAME] })
    expect(after.text).not.toContain(SECRET)
    expect(after.body.result.credentials[0]).toMatchObject({ configured: true, source: 'credentials-file' })
    expect(await credentials().get(NAME)).toBe(SECRET)
    const stored = readdirSync(home)
      .map((f) => readFileSync(join(home, f), 'utf8'))
      .join('\n')
    expect(stored).toContain(SECRET)
    expect((await call('settings.describe', {})).text).not.toContain(SECRET)

    // An environment value shadows the file: describe names both places, still no value.
    process.env[NAME] = 'sk-from-env-xyz'
    const shadow = await call('credentials.describe', { names: [NAME] })
    expect(shadow.body.result.credentials[0]).toMatchObject({ source: 'env', shadowed: ['credentials-file'] })
    expect(shadow.text).not.toContain(SECRET)
    expect(shadow.text).not.toContain('sk-from-env-xyz')
    delete process.env[NAME]

    const unset = await call('credentials.unset', { name: NAME })
    expect(unset.status).toBe(200)
    expect(unset.body.result.credential).toMatchObject({ configured: false })
    expect(await credentials().get(NAME)).toBeUndefined()
  })

  it('refuses non-loopback callers, unknown names, bad names and empty values, each with one JSON error and no value in it', async () => {
    // A non-loopback caller (as the gateway sees one) through the same method table.
    await expect(
      api().call('credentials.set', { name: NAME, value: SECRET }, { loopback: false } as never),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' })
    await expect(api().call('credentials.unset', { name: NAME }, { loopback: false } as never)).rejects.toMatchObject({
      code: 'FORBIDDEN',
    })
    // The handler holds the line too, for a carrier that forgets the contract flag.
    await expect(catalog().setCredential(NAME, SECRET, false)).rejects.toMatchObject({ code: 'FORBIDDEN' })
    expect(await credentials().get(NAME)).toBeUndefined()

    const unknown = await call('credentials.set', { name: 'PATH', value: SECRET })
    expect(unknown.status).toBe(404)
    expect(unknown.body.error).toMatchObject({ code: 'UNKNOWN_CREDENTIAL', field: 'name' })
    expect(unknown.text).not.toContain(SECRET)

    const badName = await call('credentials.set', { name: 'no-dashes', value: SECRET })
    expect(badName.status).toBe(400)
    expect(badName.body.error).toMatchObject({ code: 'INVALID_PARAMS', field: 'name' })
    expect(badName.text).not.toContain(SECRET)

    const empty = await call('credentials.set', { name: NAME, value: '' })
    expect(empty.status).toBe(400)
    expect(empty.body.error).toMatchObject({ code: 'INVALID_VALUE', field: 'value' })

    const missingValue = await call('credentials.set', { name: NAME })
    expect(missingValue.body.error).toMatchObject({ code: 'INVALID_PARAMS', field: 'value' })
  })

  it('exposeCredential adds a known name for as long as the exposing plugin lives', async () => {
    const other = `APISETTINGS_${process.pid}_OTHER_KEY`
    const fiber = ctx.plugin({
      name: 'adapter',
      inject: ['settingsCatalog'],
      apply: (c: Context) =>
        void (c.get('settingsCatalog') as SettingsCatalog).exposeCredential(other, { description: 'other' }),
    })
    await fiber
    expect(catalog().credentialNames()).toEqual([NAME, other].sort())
    await fiber.dispose()
    expect(catalog().credentialNames()).toEqual([NAME])
  })
})

describe('the model section', () => {
  it('is exposed by default: settings.describe shows it, settings.update validates against its schema', async () => {
    await app?.dispose()
    const fiber = new Context().plugin({ name: 'test-host-model', apply() {} })
    await fiber
    app = fiber
    ctx = fiber.ctx
    await ctx.plugin(WebServer, { port: 0 } as never)
    await ctx.plugin(ApiGateway, { sessions: false } as never)
    await ctx.plugin(MemorySettings, {})
    await ctx.plugin(SettingsCatalog, {})
    port = (ctx.get('webServer') as WebServer).port
    const described = await call('settings.describe', {})
    expect(described.body.result.sections).toEqual([
      expect.objectContaining({ namespace: 'model', title: 'Default model', value: {} }),
    ])
    const ok = await call('settings.update', {
      namespace: 'model',
      patch: { provider: 'deepseek-official', model: 'deepseek-chat', reasoningEffort: 'high' },
    })
    expect(ok.body.result.value).toEqual({
      provider: 'deepseek-official',
      model: 'deepseek-chat',
      reasoningEffort: 'high',
    })
    const bad = await call('settings.update', { namespace: 'model', patch: { reasoningEffort: 'extreme' } })
    expect(bad.body.error).toMatchObject({ code: 'INVALID_SETTINGS', field: 'model.reasoningEffort' })
    expect(settings().get('model')).toMatchObject({ reasoningEffort: 'high' })
    // The default credentials list names the DeepSeek key.
    expect(catalog().credentialNames()).toEqual(['DEEPSEEK_API_KEY'])
  })
})

describe('secretPaths', () => {
  it('finds role: secret fields, nested', () => {
    expect(secretPaths(WebSettings)).toEqual(['proxy.token'])
    expect(secretPaths(Schema.string())).toEqual([])
  })
})
