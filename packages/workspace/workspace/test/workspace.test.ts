import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, type Message as LogMessage } from 'cordis'
import JsonStorage from '@dsh/storage-json'
import WebServer from '@dsh/webserver'
import ApiGateway from '@dsh/api-gateway'
import Workspaces, { normalizeWorkspacePath, workspacesCreate, type WorkspaceChangedEvent } from '../src/index.ts'

let dir: string
const cleanup: Array<() => unknown> = []

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-workspace-'))
  mkdirSync(join(dir, 'projects', 'alpha'), { recursive: true })
  mkdirSync(join(dir, 'projects', 'beta'), { recursive: true })
  mkdirSync(join(dir, 'projects', 'gamma'), { recursive: true })
  writeFileSync(join(dir, 'projects', 'notes.txt'), 'a file')
})

afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
  rmSync(dir, { recursive: true, force: true })
})

const project = (name: string) => join(dir, 'projects', name)
const storageRoot = () => join(dir, 'home', 'storage')

async function boot(options: { http?: boolean } = {}) {
  const ctx = new Context()
  const logs: LogMessage[] = []
  ctx.logger.exporter({ levels: { default: 3 }, export: (m) => void logs.push(m) })
  const events: WorkspaceChangedEvent[] = []
  ctx.on('workspace/changed', (event) => void events.push(event))
  const fibers = [await ctx.plugin(JsonStorage, { root: storageRoot() })]
  if (options.http) {
    fibers.push(await ctx.plugin(WebServer, { port: 0 } as never))
    fibers.push(await ctx.plugin(ApiGateway, { sessions: false, heartbeatMs: 0 } as never))
  }
  const workspaces = await ctx.plugin(Workspaces, {})
  fibers.push(workspaces)
  cleanup.push(async () => {
    for (const fiber of fibers.reverse()) await fiber.dispose()
  })
  const warnings = () =>
    logs.filter((m) => m.type === 'warn' || m.type === 'error').map((m) => m.args.map(String).join(' '))
  return { ctx, events, warnings, workspaces }
}

describe('normalizeWorkspacePath', () => {
  it('expands ~, normalizes, and refuses relative paths', () => {
    expect(normalizeWorkspacePath('~/src/')).toBe(join(homedir(), 'src'))
    expect(normalizeWorkspacePath('/a/b/../c/')).toBe('/a/c')
    expect(() => normalizeWorkspacePath('src/dsh')).toThrow(/path: "src\/dsh" is not absolute/)
    expect(() => normalizeWorkspacePath('')).toThrow(/give the absolute path/)
  })
})

describe('ctx.workspaces', () => {
  it('creates from a directory, lists in order, renames, reorders, removes; every change is one event with the whole list', async () => {
    const { ctx, events } = await boot()
    const a = await ctx.workspaces.create({ path: project('alpha') })
    expect(a).toMatchObject({ created: true, workspace: { name: 'alpha', path: project('alpha') } })
    expect(a.workspace.id).toMatch(/^ws_[0-9a-f]{16}$/)
    const b = (await ctx.workspaces.create({ path: project('beta') + '/', name: '  Beta project ' })).workspace
    const c = (await ctx.workspaces.create({ path: project('gamma') })).workspace
    expect(b.name).toBe('Beta project')
    expect((await ctx.workspaces.list()).map((w) => w.name)).toEqual(['alpha', 'Beta project', 'gamma'])

    expect((await ctx.workspaces.rename(a.workspace.id, 'Alpha')).name).toBe('Alpha')
    expect((await ctx.workspaces.reorder([c.id, a.workspace.id])).map((w) => w.id)).toEqual([
      c.id,
      a.workspace.id,
      b.id,
    ])
    expect(await ctx.workspaces.remove(b.id)).toMatchObject({ id: b.id })
    expect(await ctx.workspaces.get(b.id)).toBeUndefined()
    expect((await ctx.workspaces.get(c.id))?.path).toBe(project('gamma'))

    expect(events.map((e) => [e.reason, e.workspace?.name, e.workspaces.length])).toEqual([
      ['created', 'alpha', 1],
      ['created', 'Beta project', 2],
      ['created', 'gamma', 3],
      ['renamed', 'Alpha', 3],
      ['reordered', undefined, 3],
      ['removed', 'Beta project', 2],
    ])
    const stored = JSON.parse(readFileSync(join(storageRoot(), 'workspace.json'), 'utf8'))
    expect(Object.keys(stored.entries).sort()).toEqual([a.workspace.id, c.id].sort())
  })

  it('the same directory twice is one workspace (created: false, no event)', async () => {
    const { ctx, events } = await boot()
    const first = await ctx.workspaces.create({ path: project('alpha') })
    const again = await ctx.workspaces.create({ path: join(project('alpha'), '..', 'alpha') })
    expect(again).toEqual({ workspace: first.workspace, created: false })
    expect(events).toHaveLength(1)
  })

  it('refuses a missing path, a file, a relative path and a bad name with one clear error each, storing nothing', async () => {
    const { ctx, events } = await boot()
    await expect(ctx.workspaces.create({ path: project('nope') })).rejects.toMatchObject({
      code: 'PATH_NOT_FOUND',
      status: 400,
      field: 'path',
      message: `path: ${project('nope')} does not exist`,
    })
    await expect(ctx.workspaces.create({ path: join(project('notes.txt'), 'below') })).rejects.toMatchObject({
      code: 'PATH_NOT_FOUND',
    })
    await expect(ctx.workspaces.create({ path: project('notes.txt') })).rejects.toMatchObject({
      code: 'NOT_A_DIRECTORY',
      field: 'path',
      message: `path: ${project('notes.txt')} is a file, not a directory`,
    })
    await expect(ctx.workspaces.create({ path: 'projects/alpha' })).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
      field: 'path',
    })
    await expect(ctx.workspaces.create({ path: project('alpha'), name: '   ' })).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
      field: 'name',
    })
    await expect(ctx.workspaces.create({ path: project('alpha'), name: 'a\nb' })).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
      message: expect.stringContaining('control characters'),
    })
    expect(await ctx.workspaces.list()).toEqual([])
    expect(events).toEqual([])
  })

  it('unknown ids and bad reorders are errors that change nothing', async () => {
    const { ctx } = await boot()
    const a = (await ctx.workspaces.create({ path: project('alpha') })).workspace
    const b = (await ctx.workspaces.create({ path: project('beta') })).workspace
    await expect(ctx.workspaces.rename('ws_missing', 'x')).rejects.toMatchObject({
      code: 'WORKSPACE_NOT_FOUND',
      status: 404,
      field: 'id',
    })
    await expect(ctx.workspaces.remove('ws_missing')).rejects.toMatchObject({ code: 'WORKSPACE_NOT_FOUND' })
    await expect(ctx.workspaces.reorder([b.id, b.id])).rejects.toMatchObject({ code: 'INVALID_PARAMS', field: 'ids.1' })
    await expect(ctx.workspaces.reorder([b.id, 'ws_missing'])).rejects.toMatchObject({
      code: 'WORKSPACE_NOT_FOUND',
      field: 'ids.1',
    })
    expect((await ctx.workspaces.list()).map((w) => w.id)).toEqual([a.id, b.id])
  })

  it('concurrent creates of one directory make one workspace', async () => {
    const { ctx } = await boot()
    const results = await Promise.all([1, 2, 3, 4].map(() => ctx.workspaces.create({ path: project('alpha') })))
    expect(results.filter((r) => r.created)).toHaveLength(1)
    expect(await ctx.workspaces.list()).toHaveLength(1)
  })

  it('survives a restart: the same list in the same order', async () => {
    const first = await boot()
    const a = (await first.ctx.workspaces.create({ path: project('alpha') })).workspace
    const b = (await first.ctx.workspaces.create({ path: project('beta') })).workspace
    await first.ctx.workspaces.reorder([b.id])
    const second = await boot()
    expect((await second.ctx.workspaces.list()).map((w) => w.id)).toEqual([b.id, a.id])
  })

  it('a malformed workspace file is one warning at startup; the host runs and new workspaces work', async () => {
    mkdirSync(storageRoot(), { recursive: true })
    writeFileSync(join(storageRoot(), 'workspace.json'), 'this is { not json')
    const { ctx, warnings } = await boot()
    expect(warnings()).toHaveLength(1)
    expect(warnings()[0]).toMatch(/workspace\.json: malformed storage file, not valid JSON/)
    expect(await ctx.workspaces.list()).toEqual([])
    await ctx.workspaces.create({ path: project('alpha') })
    expect(await ctx.workspaces.list()).toHaveLength(1)
    expect(warnings()).toHaveLength(1)
  })

  it('a stored workspace with a broken record is one warning; the others load', async () => {
    mkdirSync(storageRoot(), { recursive: true })
    const good = { name: 'alpha', path: project('alpha'), createdAt: 1, position: 1 }
    writeFileSync(
      join(storageRoot(), 'workspace.json'),
      JSON.stringify({ version: 1, entries: { ws_good: good, ws_bad: { name: 'beta' } } }),
    )
    const { ctx, warnings } = await boot()
    expect((await ctx.workspaces.list()).map((w) => w.id)).toEqual(['ws_good'])
    expect(warnings()).toEqual([expect.stringMatching(/1 stored entry ignored .*key "ws_bad", field "path"/)])
  })
})

describe('workspaces over HTTP', () => {
  async function http() {
    const booted = await boot({ http: true })
    const url = (booted.ctx as unknown as { webServer: { url: string } }).webServer.url
    const post = async (method: string, params: unknown) => {
      const res = await fetch(`${url}/api/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: url },
        body: JSON.stringify(params),
      })
      return {
        status: res.status,
        body: (await res.json()) as { result?: any; error?: { code: string; message: string; field?: string } },
      }
    }
    return { ...booted, url, post }
  }

  it('serves workspaces.* with JSON errors naming the field, and publishes workspace/changed on the host stream', async () => {
    const { url, post, workspaces } = await http()
    const abort = new AbortController()
    cleanup.push(() => abort.abort())
    const stream = await fetch(`${url}/api/events/host`, { signal: abort.signal })
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader()
    const frames: any[] = []
    let buffer = ''
    const nextFrames = async (count: number) => {
      while (frames.length < count) {
        const { value, done } = await reader.read()
        if (done) throw new Error('host stream closed')
        buffer += value
        let cut: number
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const data = buffer
            .slice(0, cut)
            .split('\n')
            .find((line) => line.startsWith('data: '))
          buffer = buffer.slice(cut + 2)
          if (data) frames.push(JSON.parse(data.slice(6)))
        }
      }
      return frames
    }
    await nextFrames(1) // hello

    const created = await post('workspaces.create', { path: project('alpha') })
    expect(created.status).toBe(200)
    expect(created.body.result).toMatchObject({ created: true, workspace: { name: 'alpha', path: project('alpha') } })
    const id = created.body.result.workspace.id
    expect((await nextFrames(2))[1]).toMatchObject({
      type: 'workspace/changed',
      reason: 'created',
      workspace: { id },
      workspaces: [{ id }],
    })

    expect(await post('workspaces.rename', { id, name: 'Alpha' })).toMatchObject({
      status: 200,
      body: { result: { workspace: { id, name: 'Alpha' } } },
    })
    expect((await nextFrames(3))[2]).toMatchObject({ type: 'workspace/changed', reason: 'renamed' })
    expect(await post('workspaces.list', {})).toMatchObject({
      status: 200,
      body: { result: { workspaces: [{ id, name: 'Alpha' }] } },
    })
    expect(await post('workspaces.reorder', { ids: [id] })).toMatchObject({
      status: 200,
      body: { result: { workspaces: [{ id }] } },
    })

    // Bad input: each one JSON error naming the problem.
    expect(await post('workspaces.create', { path: project('missing') })).toEqual({
      status: 400,
      body: { error: { code: 'PATH_NOT_FOUND', message: `path: ${project('missing')} does not exist`, field: 'path' } },
    })
    expect(await post('workspaces.create', { path: project('notes.txt') })).toMatchObject({
      status: 400,
      body: { error: { code: 'NOT_A_DIRECTORY', field: 'path' } },
    })
    expect(await post('workspaces.create', {})).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_PARAMS', field: 'path' } },
    })
    expect(await post('workspaces.rename', { id: 'ws_nope', name: 'x' })).toMatchObject({
      status: 404,
      body: { error: { code: 'WORKSPACE_NOT_FOUND', field: 'id' } },
    })
    expect(await post('workspaces.reorder', { ids: 'abc' })).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_PARAMS', field: 'ids' } },
    })

    expect(await post('workspaces.remove', { id })).toMatchObject({
      status: 200,
      body: { result: { workspace: { id } } },
    })
    expect((await nextFrames(4))[3]).toMatchObject({ type: 'workspace/changed', reason: 'removed', workspaces: [] })

    // Unloading the workspace plugin removes its methods.
    await workspaces.dispose()
    expect(await post('workspaces.list', {})).toMatchObject({
      status: 404,
      body: { error: { code: 'UNKNOWN_METHOD' } },
    })
  })

  it('the contract objects are importable from the browser-safe ./contract export', async () => {
    const contract = await import('@dsh/workspace/contract')
    expect(contract.workspacesCreate).toBe(workspacesCreate)
    expect(contract.workspaceMethods.map((m) => m.name)).toEqual([
      'workspaces.list',
      'workspaces.create',
      'workspaces.rename',
      'workspaces.reorder',
      'workspaces.remove',
      'workspaces.worlds',
    ])
  })
})
