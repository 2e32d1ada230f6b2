import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context, type Message as LogMessage } from 'cordis'
import Schema from 'schemastery'
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, renameSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { SettingsError, SettingsValidationError, type SettingsChange } from '@dsh/settings'
import FileSettings, { resolveSettingsPath, type FileSettingsConfig } from '../src/index.ts'

let home: string
let file: string
const fibers: { dispose(): unknown }[] = []

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-settings-'))
  file = join(home, 'settings.yaml')
})

afterEach(async () => {
  for (const fiber of fibers.splice(0)) await fiber.dispose()
  rmSync(home, { recursive: true, force: true })
})

async function boot(config: Partial<FileSettingsConfig> = {}) {
  const ctx = new Context()
  const logs: LogMessage[] = []
  ctx.logger.exporter({ levels: { default: 3 }, export: (m) => void logs.push(m) })
  const events: SettingsChange[] = []
  ctx.on('settings/changed', (change) => void events.push(change))
  const fiber = await ctx.plugin(FileSettings, { home, debounceMs: 20, ...config })
  fibers.push(fiber)
  return { ctx, logs, events, fiber }
}

/** Polls until `check` passes (file events arrive asynchronously); fails after a generous bound. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`gave up waiting for ${what}`)
}

const text = () => readFileSync(file, 'utf8')
const errors = (logs: LogMessage[]) => logs.filter((m) => m.type === 'error').map((m) => m.args.map(String).join(' '))

/** Writes like an editor that saves through a temp file and rename. */
function externalWrite(content: string) {
  const temp = join(home, 'editor.swp')
  writeFileSync(temp, content)
  renameSync(temp, file)
}

describe('resolveSettingsPath', () => {
  it('defaults to $DSH_HOME/settings.yaml, then ~/.dsh', () => {
    expect(resolveSettingsPath({}, { DSH_HOME: '/x/home' })).toBe('/x/home/settings.yaml')
    expect(resolveSettingsPath({ path: '/etc/dsh.yaml' }, { DSH_HOME: '/x' })).toBe('/etc/dsh.yaml')
    expect(resolveSettingsPath({ home: '/y' }, {})).toBe('/y/settings.yaml')
    expect(resolveSettingsPath({}, {})).toMatch(/\.dsh\/settings\.yaml$/)
    expect(resolveSettingsPath({ path: '~/conf/dsh.yaml' }, {})).toBe(join(homedir(), 'conf/dsh.yaml'))
  })
})

describe('settings-file', () => {
  it('treats a missing file as an empty document and creates it on the first update', async () => {
    const { ctx } = await boot()
    expect(ctx.settings.namespaces()).toEqual([])
    await ctx.settings.update('web', { port: 3080 })
    expect(text()).toBe('web:\n  port: 3080\n')
    expect(ctx.settings.get('web')).toEqual({ port: 3080 })
  })

  it('keeps comments, formatting and unrelated sections across updates', async () => {
    const original = [
      '# my dsh settings',
      '',
      '# the web server',
      'web:',
      '  port: 3080 # not 80',
      '  # hosts I trust',
      '  trusted: [a.example, b.example]',
      '',
      '# owned by a plugin that is not loaded',
      'ghost:',
      '  keep: "me"   # quoted on purpose',
      '',
    ].join('\n')
    writeFileSync(file, original)
    const { ctx } = await boot()
    await ctx.settings.update('web', { port: 4000, extra: { on: true } })
    await ctx.settings.update('locale', { preference: 'zh' })
    const after = text()
    expect(after).toContain('# my dsh settings')
    expect(after).toContain('# the web server')
    expect(after).toContain('  port: 4000 # not 80')
    expect(after).toContain('  # hosts I trust\n  trusted: [a.example, b.example]')
    expect(after).toContain('# owned by a plugin that is not loaded\nghost:\n  keep: "me" # quoted on purpose')
    expect(after).toContain('locale:\n  preference: zh')
    expect(ctx.settings.get('ghost')).toEqual({ keep: 'me' })
    expect(ctx.settings.get('web')).toEqual({ port: 4000, trusted: ['a.example', 'b.example'], extra: { on: true } })
  })

  it('deletes keys patched with undefined and removes sections with replace(undefined)', async () => {
    writeFileSync(file, 'a:\n  x: 1 # one\n  y: 2\nb:\n  z: 3\n')
    const { ctx } = await boot()
    await ctx.settings.update('a', { x: undefined })
    await ctx.settings.replace('b', undefined)
    expect(text()).toBe('a:\n  y: 2\n')
    await ctx.settings.replace('c', { list: [1, 2] })
    expect(ctx.settings.get('c')).toEqual({ list: [1, 2] })
  })

  it('re-reads the file before writing so unobserved external edits survive', async () => {
    writeFileSync(file, 'a:\n  v: 1\n')
    const { ctx } = await boot({ watch: false })
    writeFileSync(file, '# added by hand\na:\n  v: 1\nb:\n  w: 2\n')
    await ctx.settings.update('a', { v: 5 })
    expect(text()).toBe('# added by hand\na:\n  v: 5\nb:\n  w: 2\n')
    expect(ctx.settings.get('b')).toEqual({ w: 2 })
  })

  it('writes atomically, leaving no temp or lock files and keeping the file mode', async () => {
    writeFileSync(file, 'a: {}\n')
    chmodSync(file, 0o600)
    const { ctx } = await boot()
    await ctx.settings.update('a', { v: 1 })
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(readdirSync(home)).toEqual(['settings.yaml'])
  })

  it('hot-reloads an external edit and notifies listeners with cause "reload"', async () => {
    writeFileSync(file, 'web:\n  port: 1\n')
    const { ctx, events } = await boot()
    const seen: unknown[] = []
    ctx.settings.onChange('web', (value) => void seen.push(value))
    externalWrite('web:\n  port: 2\nnew:\n  a: true\n')
    await until(() => seen.length > 0 && ctx.settings.get('new') !== undefined, 'the reload')
    expect(seen.at(-1)).toEqual({ port: 2 })
    expect(
      events
        .filter((e) => e.cause === 'reload')
        .map((e) => e.namespace)
        .sort(),
    ).toEqual(['new', 'web'])
    // An in-place write (no rename) is seen too.
    writeFileSync(file, 'web:\n  port: 3\n')
    await until(() => (ctx.settings.get('web') as { port: number }).port === 3, 'the second reload')
    expect(ctx.settings.get('new')).toBeUndefined()
  })

  it('does not re-publish its own writes', async () => {
    const { ctx, events } = await boot()
    await ctx.settings.update('a', { v: 1 })
    externalWrite('a:\n  v: 1\nmarker: {}\n')
    await until(() => ctx.settings.get('marker') !== undefined, 'the marker edit')
    expect(events.map((e) => `${e.namespace}:${e.cause}`)).toEqual(['a:update', 'marker:reload'])
  })

  it('keeps the last good settings when a reload finds a malformed file, and logs one error with the line', async () => {
    writeFileSync(file, 'web:\n  port: 1\n')
    const { ctx, logs } = await boot()
    externalWrite('web:\n  port: 2\n  list: [1, 2\nother: x\n')
    await until(() => errors(logs).length > 0, 'the error')
    // A second event with the same bad content is not reported again.
    externalWrite('web:\n  port: 2\n  list: [1, 2\nother: x\n')
    // Re-read the same bad text through the reload path now, rather than hoping the watcher did.
    await (ctx.settings as FileSettings).refresh()
    expect(errors(logs)).toHaveLength(1)
    expect(errors(logs)[0]).toContain(`${file}:4`)
    expect(errors(logs)[0]).toContain('keeping the last good settings')
    expect(ctx.settings.get('web')).toEqual({ port: 1 })
    expect((ctx.settings as FileSettings).problem?.code).toBe('MALFORMED')
    externalWrite('web:\n  port: 9\n')
    await until(() => (ctx.settings.get('web') as { port: number }).port === 9, 'the fix')
    expect((ctx.settings as FileSettings).problem).toBeUndefined()
  })

  it('fails to load a malformed file, naming the file, line and problem', async () => {
    const broken = 'web:\n  port: 1\n  port: 2\n'
    writeFileSync(file, broken)
    const root = new Context()
    const fiber = root.plugin(FileSettings, { path: file, watch: false })
    const failure = await Promise.resolve(fiber).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(failure).toBeInstanceOf(SettingsError)
    expect((failure as SettingsError).code).toBe('MALFORMED')
    expect((failure as SettingsError).message).toMatch(
      new RegExp(`^${file.replace(/[.]/g, '\\.')}:3:\\d+: malformed settings file: .*DUPLICATE_KEY`),
    )
    expect(root.get('settings')).toBeUndefined()
    expect(text()).toBe(broken)
    writeFileSync(file, '- a\n- b\n')
    const list = root.plugin(FileSettings, { path: file, watch: false })
    await expect(list).rejects.toThrow(
      `${file}:1: malformed settings file: the top level must be a mapping of namespace sections`,
    )
  })

  it('refuses to overwrite a file that broke after load, and recovers when it is fixed', async () => {
    writeFileSync(file, 'web:\n  port: 1\n')
    const { ctx, logs } = await boot()
    const broken = 'web:\n  port: 1\n  port: 2\n'
    externalWrite(broken)
    await until(() => errors(logs).length > 0, 'the error')
    expect(errors(logs)[0]).toContain(`${file}:3`)
    expect(errors(logs)[0]).toContain('DUPLICATE_KEY')
    const failure = await ctx.settings.update('web', { port: 3 }).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(SettingsError)
    expect((failure as SettingsError).message).toContain('nothing was written')
    expect(text()).toBe(broken)
    externalWrite('web:\n  port: 2\n')
    await until(() => (ctx.settings.get('web') as { port: number }).port === 2, 'the fix')
  })

  it('validates one section by its schema without affecting the others', async () => {
    writeFileSync(file, 'web:\n  port: eighty\nshell:\n  timeoutMs: 5\n')
    const { ctx, logs } = await boot()
    const web = ctx.settings.section('web', Schema.object({ port: Schema.natural().default(3080) }))
    const shell = ctx.settings.section('shell', Schema.object({ timeoutMs: Schema.natural().default(1000) }))
    expect(web.value).toEqual({ port: 3080 })
    expect(web.error).toBeInstanceOf(SettingsValidationError)
    expect(web.error!.message).toContain(file)
    expect(web.error!.message).toContain('section "web"')
    expect(web.error!.message).toContain('field "web.port"')
    expect(shell.value).toEqual({ timeoutMs: 5 })
    expect(logs.filter((m) => m.type === 'warn').map((m) => m.args.join(' '))).toEqual([
      expect.stringContaining('web.port'),
    ])
    // A typed write that would break the schema is refused before touching the file.
    await expect(shell.update({ timeoutMs: -1 })).rejects.toThrow(SettingsValidationError)
    expect(text()).toContain('timeoutMs: 5')
  })

  it('serializes concurrent updates in one process without losing any', async () => {
    const { ctx } = await boot()
    await Promise.all(Array.from({ length: 40 }, (_, i) => ctx.settings.update('many', { [`k${i}`]: i })))
    const section = ctx.settings.get('many') as Record<string, number>
    expect(Object.keys(section)).toHaveLength(40)
    expect((await boot({ watch: false })).ctx.settings.get('many')).toEqual(section)
  })

  it('does not lose writes between two instances sharing the file (writer lock + re-read)', async () => {
    const a = await boot({ watch: false })
    const b = await boot({ watch: false })
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).ctx.settings.update('shared', { [`k${i}`]: i })),
    )
    const fresh = await boot({ watch: false })
    expect(Object.keys(fresh.ctx.settings.get('shared') as object).sort()).toHaveLength(20)
  })

  it('fails an update with a clear error when another writer holds the lock', async () => {
    const { ctx } = await boot({ watch: false, lockTimeoutMs: 50 })
    writeFileSync(`${file}.lock`, '1\n')
    await expect(ctx.settings.update('a', { v: 1 })).rejects.toThrow(/writer lock/)
    rmSync(`${file}.lock`)
    await ctx.settings.update('a', { v: 1 })
  })

  it('creates a missing directory for the file on the first update', async () => {
    const path = join(home, 'nested', 'dir', 'settings.yaml')
    const { ctx } = await boot({ path, watch: false })
    await ctx.settings.update('a', { v: 1 })
    expect(readFileSync(path, 'utf8')).toBe('a:\n  v: 1\n')
  })

  it('keeps a .json settings file as JSON', async () => {
    const path = join(home, 'settings.json')
    writeFileSync(path, '{"a": {"v": 1}}')
    const { ctx } = await boot({ path })
    await ctx.settings.update('b', { w: [1] })
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ a: { v: 1 }, b: { w: [1] } })
  })

  it('stops reacting to edits once unloaded', async () => {
    const { ctx, fiber } = await boot()
    const service = ctx.settings as FileSettings
    await fiber.dispose()
    // Positive control: a live instance on the same file, with a longer debounce, sees the edit
    // only after the unloaded one would have.
    const witness = await boot({ debounceMs: 200 })
    externalWrite('late:\n  v: 1\n')
    await until(() => witness.ctx.settings.get('late') !== undefined, 'the witness to see the edit')
    expect(service.namespaces()).toEqual([])
    await expect(service.update('a', { v: 1 })).rejects.toThrow(/no longer loaded/)
  })
})
