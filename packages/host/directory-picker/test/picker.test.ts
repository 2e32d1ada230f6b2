import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import WebServer from '@dsh/webserver'
import ApiGateway from '@dsh/api-gateway'
import DirectoryPicker, { type DirectoryPickerConfig } from '../src/index.ts'

let dir: string
const cleanup: Array<() => unknown> = []

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-picker-'))
  for (const name of ['src', 'Docs', 'build10', 'build9', '.git']) mkdirSync(join(dir, name))
  for (const name of ['README.md', 'a.txt', '.env']) writeFileSync(join(dir, name), 'x')
  symlinkSync(join(dir, 'src'), join(dir, 'link-to-src'))
  symlinkSync(join(dir, 'missing'), join(dir, 'dangling'))
})

afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
  rmSync(dir, { recursive: true, force: true })
})

async function boot(config: Partial<DirectoryPickerConfig> = {}, http = false) {
  const ctx = new Context()
  const fibers: Array<{ dispose(): unknown }> = []
  if (http) {
    fibers.push(await ctx.plugin(WebServer, { port: 0 } as never))
    fibers.push(await ctx.plugin(ApiGateway, { sessions: false, heartbeatMs: 0 } as never))
  }
  const picker = await ctx.plugin(DirectoryPicker, config)
  fibers.push(picker)
  cleanup.push(async () => {
    for (const fiber of fibers.reverse()) await fiber.dispose()
  })
  return { ctx, picker }
}

describe('ctx.directoryPicker.list', () => {
  it('lists one level: directories first (symlinks followed), natural name order, hidden entries only on request', async () => {
    const { ctx } = await boot()
    const listing = await ctx.directoryPicker.list({ path: dir })
    expect(listing.path).toBe(dir)
    expect(listing.parent).toBe(tmpdir())
    expect(listing.entries.map((e) => [e.name, e.kind])).toEqual([
      ['build9', 'directory'],
      ['build10', 'directory'],
      ['Docs', 'directory'],
      ['link-to-src', 'directory'],
      ['src', 'directory'],
      ['a.txt', 'file'],
      ['dangling', 'other'],
      ['README.md', 'file'],
    ])
    expect(listing.entries.find((e) => e.name === 'link-to-src')).toMatchObject({
      symlink: true,
      path: join(dir, 'link-to-src'),
    })
    expect(listing).toMatchObject({ truncated: false, total: 8 })

    const hidden = await ctx.directoryPicker.list({ path: dir, showHidden: true })
    expect(hidden.entries.filter((e) => e.hidden).map((e) => e.name)).toEqual(['.git', '.env'])
    const dirs = await ctx.directoryPicker.list({ path: dir + '/src/..', directoriesOnly: true })
    expect(dirs.path).toBe(dir)
    expect(dirs.entries.every((e) => e.kind === 'directory')).toBe(true)
  })

  it('bounds the count: limit, the configured maximum, and the scan cap', async () => {
    const { ctx } = await boot({ maxLimit: 3 })
    const limited = await ctx.directoryPicker.list({ path: dir, limit: 2 })
    expect(limited.entries.map((e) => e.name)).toEqual(['build9', 'build10'])
    expect(limited).toMatchObject({ truncated: true, total: 8 })
    expect((await ctx.directoryPicker.list({ path: dir, limit: 100 })).entries).toHaveLength(3)

    const capped = await boot({ scanLimit: 4 })
    const listing = await capped.ctx.directoryPicker.list({ path: dir, showHidden: true })
    expect(listing.truncated).toBe(true)
    expect(listing.total).toBeLessThanOrEqual(4)
  })

  it('defaults to the home directory and reports the root with no parent', async () => {
    const { ctx } = await boot()
    expect((await ctx.directoryPicker.list({ limit: 1 })).path).toBe(homedir())
    expect((await ctx.directoryPicker.list({ path: '/', limit: 1 })).parent).toBeNull()
  })

  it('a missing path, a file and a relative path are one clear error each', async () => {
    const { ctx } = await boot()
    await expect(ctx.directoryPicker.list({ path: join(dir, 'nope') })).rejects.toMatchObject({
      code: 'PATH_NOT_FOUND',
      field: 'path',
      message: `path: ${join(dir, 'nope')} does not exist`,
    })
    await expect(ctx.directoryPicker.list({ path: join(dir, 'a.txt') })).rejects.toMatchObject({
      code: 'NOT_A_DIRECTORY',
      field: 'path',
    })
    await expect(ctx.directoryPicker.list({ path: 'src' })).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
      field: 'path',
    })
  })
})

describe('ctx.directoryPicker.createDirectory', () => {
  it('creates one child directory and refuses what is not a single new name', async () => {
    const { ctx } = await boot()
    expect(await ctx.directoryPicker.createDirectory(dir, 'new project')).toEqual({ path: join(dir, 'new project') })
    expect(statSync(join(dir, 'new project')).isDirectory()).toBe(true)
    await expect(ctx.directoryPicker.createDirectory(dir, 'new project')).rejects.toMatchObject({
      code: 'ALREADY_EXISTS',
      status: 409,
      field: 'name',
    })
    for (const bad of ['', '.', '..', 'a/b', 'a\\b', ' padded', 'tab\there']) {
      await expect(ctx.directoryPicker.createDirectory(dir, bad), JSON.stringify(bad)).rejects.toMatchObject({
        code: 'INVALID_PARAMS',
        field: 'name',
      })
    }
    await expect(ctx.directoryPicker.createDirectory(join(dir, 'nope'), 'x')).rejects.toMatchObject({
      code: 'PATH_NOT_FOUND',
      field: 'parent',
    })
    await expect(ctx.directoryPicker.createDirectory(join(dir, 'a.txt'), 'x')).rejects.toMatchObject({
      code: 'NOT_A_DIRECTORY',
      field: 'parent',
    })
    expect(existsSync(join(dir, 'nope'))).toBe(false)
  })
})

describe('host.* methods over HTTP', () => {
  it('serves host.listDirectory and host.createDirectory to loopback callers, refuses others, and unregisters on unload', async () => {
    const { ctx, picker } = await boot({}, true)
    const url = (ctx as unknown as { webServer: { url: string } }).webServer.url
    const post = async (method: string, params: unknown) => {
      const res = await fetch(`${url}/api/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: url },
        body: JSON.stringify(params),
      })
      return { status: res.status, body: (await res.json()) as any }
    }
    const listed = await post('host.listDirectory', { path: dir, limit: 2 })
    expect(listed).toMatchObject({
      status: 200,
      body: { result: { path: dir, truncated: true, total: 8, entries: [{ name: 'build9' }, { name: 'build10' }] } },
    })
    expect(await post('host.createDirectory', { parent: dir, name: 'made' })).toEqual({
      status: 200,
      body: { result: { path: join(dir, 'made') } },
    })
    expect(await post('host.listDirectory', { path: join(dir, 'gone') })).toMatchObject({
      status: 400,
      body: { error: { code: 'PATH_NOT_FOUND', field: 'path' } },
    })
    expect(await post('host.createDirectory', { parent: dir })).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_PARAMS', field: 'name' } },
    })
    expect(await post('host.listDirectory', { limit: 0 })).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_PARAMS', field: 'limit' } },
    })
    const api = (
      ctx as unknown as {
        api: { call(name: string, params: unknown, call: { loopback: boolean; signal: AbortSignal }): Promise<unknown> }
      }
    ).api
    await expect(
      api.call('host.listDirectory', { path: dir }, { loopback: false, signal: new AbortController().signal }),
    ).rejects.toMatchObject({ code: 'FORBIDDEN', status: 403 })
    await expect(
      api.call(
        'host.createDirectory',
        { parent: dir, name: 'remote' },
        { loopback: false, signal: new AbortController().signal },
      ),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' })
    expect(existsSync(join(dir, 'remote'))).toBe(false)
    await picker.dispose()
    expect(await post('host.listDirectory', { path: dir })).toMatchObject({
      status: 404,
      body: { error: { code: 'UNKNOWN_METHOD' } },
    })
  })
})
