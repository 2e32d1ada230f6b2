import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context, type Message as LogMessage } from 'cordis'
import Schema from 'schemastery'
import JsonStorage, { resolveStorageRoot, type JsonStorageConfig } from '../src/index.ts'

const Workspace = Schema.object({ name: Schema.string().required(), path: Schema.string().required() })

let home: string
let root: string
const fibers: { dispose(): unknown }[] = []

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-storage-json-'))
  root = join(home, 'storage')
})

afterEach(async () => {
  for (const fiber of fibers.splice(0)) await fiber.dispose()
  rmSync(home, { recursive: true, force: true })
})

async function boot(config: Partial<JsonStorageConfig> = {}) {
  const ctx = new Context()
  const logs: LogMessage[] = []
  ctx.logger.exporter({ levels: { default: 3 }, export: (m) => void logs.push(m) })
  const fiber = await ctx.plugin(JsonStorage, { home, ...config })
  fibers.push(fiber)
  const warnings = () =>
    logs.filter((m) => m.type === 'warn' || m.type === 'error').map((m) => m.args.map(String).join(' '))
  return { ctx, fiber, warnings }
}

const file = (domain: string) => JSON.parse(readFileSync(join(root, `${domain}.json`), 'utf8'))

describe('resolveStorageRoot', () => {
  it('defaults to $DSH_HOME/storage', () => {
    expect(resolveStorageRoot({}, { DSH_HOME: '/x/home' })).toBe('/x/home/storage')
    expect(resolveStorageRoot({ home: '/y' }, {})).toBe('/y/storage')
    expect(resolveStorageRoot({ root: '/z/data' }, { DSH_HOME: '/x' })).toBe('/z/data')
  })
})

describe('storage-json', () => {
  it('writes one versioned JSON file per domain (private mode) and reads it back in a new process-like boot', async () => {
    const { ctx } = await boot()
    const ws = ctx.storage.domain('workspace', Workspace)
    expect(await ws.entries()).toEqual([])
    expect(existsSync(root)).toBe(false)
    await ws.set('w1', { name: 'dsh', path: '/src/dsh' })
    await ctx.storage.domain('prefs', Schema.dict(Schema.any())).set('ui', { theme: 'dark' })
    expect(file('workspace')).toEqual({ version: 1, entries: { w1: { name: 'dsh', path: '/src/dsh' } } })
    expect(statSync(join(root, 'workspace.json')).mode & 0o777).toBe(0o600)
    expect(readdirSync(root).sort()).toEqual(['prefs.json', 'workspace.json'])

    const again = await boot()
    expect(await again.ctx.storage.domain('workspace', Workspace).entries()).toEqual([
      ['w1', { name: 'dsh', path: '/src/dsh' }],
    ])
  })

  it('a malformed file is one warning naming it, is moved aside (not lost), and other domains still load', async () => {
    mkdirSync(root, { recursive: true })
    writeFileSync(join(root, 'workspace.json'), '{"version": 1, "entries": {"w1": ')
    writeFileSync(join(root, 'prefs.json'), JSON.stringify({ version: 1, entries: { ui: { theme: 'dark' } } }))
    const { ctx, warnings } = await boot()
    const ws = ctx.storage.domain('workspace', Workspace)
    expect(await ws.entries()).toEqual([])
    expect(await ctx.storage.domain('prefs', Schema.dict(Schema.any())).get('ui')).toEqual({ theme: 'dark' })
    expect(warnings()).toHaveLength(1)
    expect(warnings()[0]).toMatch(
      /workspace\.json: malformed storage file, not valid JSON .*moved it to .*workspace\.json\.corrupt-.* and started "workspace" empty/,
    )
    const aside = readdirSync(root).find((name) => name.startsWith('workspace.json.corrupt-'))!
    expect(readFileSync(join(root, aside), 'utf8')).toBe('{"version": 1, "entries": {"w1": ')
    await ws.set('w2', { name: 'x', path: '/x' })
    expect(file('workspace').entries).toEqual({ w2: { name: 'x', path: '/x' } })
    expect(warnings()).toHaveLength(1)
  })

  it('names the shape problem of a parseable but wrong file', async () => {
    mkdirSync(root, { recursive: true })
    writeFileSync(join(root, 'a.json'), '[1, 2]')
    writeFileSync(join(root, 'b.json'), JSON.stringify({ version: 9, entries: {} }))
    const { ctx, warnings } = await boot()
    await ctx.storage.domain('a', Schema.any()).entries()
    await ctx.storage.domain('b', Schema.any()).entries()
    expect(warnings()[0]).toContain('the top level is not a JSON object')
    expect(warnings()[1]).toContain('unsupported format version 9 (expected 1)')
  })

  it('a stored entry failing the schema is one warning, the rest loads, and the entry survives the next write', async () => {
    mkdirSync(root, { recursive: true })
    writeFileSync(
      join(root, 'workspace.json'),
      JSON.stringify({
        version: 1,
        entries: { w1: { name: 'ok', path: '/ok' }, w2: { name: 'broken' }, w3: { name: 'fine', path: '/fine' } },
      }),
    )
    const { ctx, warnings } = await boot()
    const ws = ctx.storage.domain('workspace', Workspace)
    expect((await ws.entries()).map(([id]) => id)).toEqual(['w1', 'w3'])
    expect(warnings()).toEqual([
      expect.stringMatching(/workspace\.json: 1 stored entry ignored .*key "w2", field "path"/),
    ])
    await ws.delete('w1')
    expect(file('workspace').entries).toEqual({ w2: { name: 'broken' }, w3: { name: 'fine', path: '/fine' } })
  })

  it('a writer killed at any moment leaves the last complete file; acknowledged writes survive; its temp file is cleaned up', async () => {
    const writer = fileURLToPath(new URL('./fixtures/writer.mjs', import.meta.url))
    const child = spawn(process.execPath, [writer, root], { stdio: ['ignore', 'pipe', 'pipe'] })
    let acknowledged = -1
    let stderr = ''
    child.stderr.on('data', (chunk) => (stderr += chunk))
    await new Promise<void>((resolve, reject) => {
      let out = ''
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        // Every complete line, in order: on a loaded machine the last acknowledgement and
        // "stalled" can arrive in one chunk.
        const lines = out.split('\n')
        out = lines.pop() ?? ''
        for (const line of lines) {
          if (line === 'stalled') {
            // The fourth write has put half its bytes on disk: kill it there.
            child.kill('SIGKILL')
            resolve()
            return
          }
          acknowledged = Number(line)
        }
      })
      child.on('exit', (code) => (code !== null ? reject(new Error(`writer exited ${code}: ${stderr}`)) : undefined))
    })
    await new Promise((resolve) => child.once('close', resolve))
    const stored = file('crash')
    expect(stored.version).toBe(1)
    expect(acknowledged).toBe(2)
    expect(stored.entries.a.n).toBe(2)
    // Both keys of one update land together.
    expect(stored.entries.b.n).toBe(stored.entries.a.n)
    // The half-written temp file of the dead writer is there, and the next load removes it.
    expect(readdirSync(root).filter((name) => name.endsWith('.tmp'))).toEqual([
      expect.stringMatching(new RegExp(`^\\.crash\\.json\\.${child.pid}\\.`)),
    ])
    const { ctx, warnings } = await boot()
    const crash = ctx.storage.domain('crash', Schema.object({ n: Schema.natural(), pad: Schema.string() }))
    expect((await crash.get('a'))?.n).toBe(stored.entries.a.n)
    expect(warnings()).toEqual([])
    expect(readdirSync(root).filter((name) => name.endsWith('.tmp'))).toEqual([])
  })

  it('keeps a live process temp file alone', async () => {
    mkdirSync(root, { recursive: true })
    const mine = join(root, `.crash.json.${process.pid}.cafe.tmp`)
    const done = spawnSync(process.execPath, ['-e', '0'])
    expect(done.status).toBe(0)
    writeFileSync(mine, 'partial')
    const { ctx } = await boot()
    await ctx.storage.domain('crash', Schema.any()).entries()
    expect(existsSync(mine)).toBe(true)
  })

  it('a failed write rejects with WRITE_FAILED naming the file and leaves memory unchanged', async () => {
    const { ctx } = await boot()
    const ws = ctx.storage.domain('workspace', Workspace)
    await ws.set('w1', { name: 'a', path: '/a' })
    // The storage directory replaced by a regular file: the next write cannot create it.
    rmSync(root, { recursive: true })
    writeFileSync(root, 'not a directory')
    await expect(ws.set('w2', { name: 'b', path: '/b' })).rejects.toMatchObject({
      code: 'WRITE_FAILED',
      message: expect.stringContaining('workspace.json'),
    })
    expect((await ws.entries()).map(([id]) => id)).toEqual(['w1'])
    rmSync(root)
    await ws.set('w3', { name: 'c', path: '/c' })
    expect(Object.keys(file('workspace').entries)).toEqual(['w1', 'w3'])
  })
})
