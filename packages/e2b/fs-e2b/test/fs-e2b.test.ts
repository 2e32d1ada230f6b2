// @dsh/fs-e2b against the local E2B stand-in (real SDK, real envd wire format): the primitives
// mapped onto the sandbox's filesystem, their errors mapped to the seam's codes, the write's
// temp-and-rename, mode restore after it, and a sandbox that dies under a call.
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'
import E2bService from '@dsh/e2b'
import { FsError } from '@dsh/fs'
import E2bFileSystem from '../src/index.ts'

let standin: E2bStandin
const cwd = '/work/fs-e2b-project'

beforeAll(async () => {
  standin = await startE2bStandin()
  process.env.E2B_API_KEY = standin.apiKey
})
afterAll(async () => {
  await standin?.close()
})

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

/** The owner and the provider under test, in a fresh Cordis tree; disposed after the test. */
async function mount(): Promise<Context> {
  const ctx = new Context()
  const fibers = [
    await ctx.plugin(E2bService, {
      apiUrl: standin.url,
      sandboxUrl: standin.url,
      cwd,
      retryDelayMs: 10,
      upload: { enabled: false, maxBytes: 1 << 20, exclude: [] },
      patch: { enabled: false },
    }),
    await ctx.plugin(E2bFileSystem),
  ]
  closers.push(async () => {
    for (const fiber of fibers.reverse()) await fiber.dispose()
  })
  await new Promise<void>((resolve) => ctx.inject(['e2b', 'fs'], () => resolve()))
  return ctx
}

/** `mount()` with its sandbox started: the provider, the sandbox id and its host-side root. */
async function world() {
  const ctx = await mount()
  const sandbox = await ctx.e2b.sandbox()
  /** Host path of sandbox path `path` (the stand-in's root for this sandbox). */
  const host = (path: string) => join(standin.rootOf(sandbox.sandboxId), path)
  return { ctx, fs: ctx.fs, id: sandbox.sandboxId, host }
}

const p = (name: string) => `${cwd}/${name}`

const code = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: unknown) => (error instanceof FsError ? error.code : `not an FsError: ${String(error)}`),
  )

describe('fs-e2b', () => {
  it('reads, stats and lists the sandbox tree at the same absolute paths, not the host', async () => {
    const { fs, host } = await world()
    mkdirSync(host(p('dir/sub')), { recursive: true })
    writeFileSync(host(p('dir/a.txt')), 'alpha\n')
    chmodSync(host(p('dir/a.txt')), 0o640)
    symlinkSync('a.txt', host(p('dir/link')))
    const read = await fs.readText(p('dir/a.txt'))
    expect(read).toMatchObject({ path: p('dir/a.txt'), text: 'alpha\n' })
    const stat = await fs.stat(p('dir/a.txt'))
    expect(stat).toMatchObject({ kind: 'file', size: 6, mode: 0o640 })
    expect(stat.mtimeMs).toBe(Math.floor(statSync(host(p('dir/a.txt'))).mtimeMs))
    expect((await fs.stat(p('dir/sub'))).kind).toBe('directory')
    // A symlink is listed as itself and stat follows it.
    expect(await fs.list(p('dir'))).toEqual([
      { name: 'a.txt', kind: 'file' },
      { name: 'link', kind: 'symlink' },
      { name: 'sub', kind: 'directory' },
    ])
    expect((await fs.stat(p('dir/link'))).kind).toBe('file')
    expect(await fs.exists(p('dir/none'))).toBe(false)
    // The host's own folder of that name is not where any of this happened.
    expect(() => lstatSync(p('dir'))).toThrow()
  })

  it('maps missing, wrong-kind and non-empty paths to the seam codes', async () => {
    const { fs, host } = await world()
    mkdirSync(host(p('full')), { recursive: true })
    writeFileSync(host(p('full/x')), 'x')
    writeFileSync(host(p('plain')), 'plain')
    expect(await code(fs.stat(p('absent')))).toBe('NOT_FOUND')
    expect(await code(fs.readText(p('absent')))).toBe('NOT_FOUND')
    expect(await code(fs.list(p('absent')))).toBe('NOT_FOUND')
    expect(await code(fs.remove(p('absent')))).toBe('NOT_FOUND')
    expect(await code(fs.remove(p('absent'), { force: true }))).toBe('resolved')
    expect(await code(fs.readText(p('full')))).toBe('IS_DIRECTORY')
    // A file is not a directory: listing it, or a path below it.
    expect(await code(fs.list(p('plain')))).toBe('NOT_A_DIRECTORY')
    expect(await code(fs.stat(p('plain/below')))).toBe('NOT_A_DIRECTORY')
    expect(await code(fs.writeFile(p('plain/below'), 'x'))).toBe('NOT_A_DIRECTORY')
    // A non-empty directory needs `recursive`; nothing was removed by the refusal.
    expect(await code(fs.remove(p('full')))).toBe('NOT_EMPTY')
    expect(readFileSync(host(p('full/x')), 'utf8')).toBe('x')
    await fs.remove(p('full'), { recursive: true })
    expect(() => lstatSync(host(p('full')))).toThrow()
    await fs.remove(p('plain'))
    expect(() => lstatSync(host(p('plain')))).toThrow()
  })

  it('mkdir needs the parent without recursive, and refuses an existing path', async () => {
    const { fs, host } = await world()
    writeFileSync(host(p('file')), 'f')
    expect(await code(fs.mkdir(p('a/b')))).toBe('NOT_FOUND')
    expect(() => lstatSync(host(p('a')))).toThrow()
    expect(await code(fs.mkdir(p('file/b')))).toBe('NOT_A_DIRECTORY')
    await fs.mkdir(p('a/b/c'), { recursive: true })
    expect(statSync(host(p('a/b/c'))).isDirectory()).toBe(true)
    await fs.mkdir(p('a/b/c'), { recursive: true })
    expect(await code(fs.mkdir(p('a/b/c')))).toBe('EXISTS')
    expect(await code(fs.mkdir(p('file'), { recursive: true }))).toBe('EXISTS')
    await fs.mkdir(p('a/d'))
    expect(statSync(host(p('a/d'))).isDirectory()).toBe(true)
    // An empty directory goes without `recursive`.
    await fs.remove(p('a/d'))
    expect(() => lstatSync(host(p('a/d')))).toThrow()
  })

  it('writes to a temp file beside the target and renames it over, leaving nothing behind', async () => {
    const { fs, host } = await world()
    writeFileSync(host(p('target.txt')), 'old\n')
    const hold = standin.hold('POST', '/filesystem.Filesystem/Move')
    const writing = fs.writeFile(p('target.txt'), 'new\n')
    await hold.arrived
    // Uploaded, not yet renamed: the target still has the old bytes, the temp the new.
    expect(readFileSync(host(p('target.txt')), 'utf8')).toBe('old\n')
    const temps = readdirSync(host(cwd)).filter((name) => name !== 'target.txt')
    expect(temps).toEqual([expect.stringMatching(/^\.target\.txt\.[0-9a-f]{12}\.dsh-tmp$/)])
    expect(readFileSync(host(p(temps[0] as string)), 'utf8')).toBe('new\n')
    hold.release()
    const result = await writing
    expect(result).toMatchObject({ path: p('target.txt'), created: false, stat: { kind: 'file', size: 4 } })
    expect(readFileSync(host(p('target.txt')), 'utf8')).toBe('new\n')
    expect(readdirSync(host(cwd))).toEqual(['target.txt'])
  })

  it('removes its temp file when the rename fails, and the target keeps its bytes', async () => {
    const { fs, host } = await world()
    writeFileSync(host(p('kept.txt')), 'kept\n')
    standin.faults.push({ method: 'POST', path: '/filesystem.Filesystem/Move', status: 500, times: 1 })
    const error = await fs.writeFile(p('kept.txt'), 'lost\n').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(FsError)
    expect(error).toMatchObject({ code: 'IO', message: expect.stringContaining('injected fault 500') })
    expect(readFileSync(host(p('kept.txt')), 'utf8')).toBe('kept\n')
    expect(readdirSync(host(cwd))).toEqual(['kept.txt'])
  })

  it('needs the parent unless createParents, and creates it with it', async () => {
    const { fs, host } = await world()
    const before = standin.requests.length
    expect(await code(fs.writeFile(p('new/dir/f.txt'), 'x'))).toBe('NOT_FOUND')
    // Refused before any upload.
    expect(standin.requests.slice(before).filter((r) => r.path === '/files')).toEqual([])
    expect(() => lstatSync(host(p('new')))).toThrow()
    const made = await fs.writeFile(p('new/dir/f.txt'), 'x', { createParents: true })
    expect(made.created).toBe(true)
    expect(readFileSync(host(p('new/dir/f.txt')), 'utf8')).toBe('x')
  })

  it("restores an existing file's permission bits after the rename, and sets a new file's mode", async () => {
    const { fs, host } = await world()
    writeFileSync(host(p('run.sh')), 'echo 1\n')
    chmodSync(host(p('run.sh')), 0o755)
    const written = await fs.writeFile(p('run.sh'), 'echo 2\n')
    expect(written.stat.mode).toBe(0o755)
    expect(statSync(host(p('run.sh'))).mode & 0o7777).toBe(0o755)
    const edited = await fs.edit(p('run.sh'), (text) => text.replace('2', '3'))
    expect(edited.stat.mode).toBe(0o755)
    expect(readFileSync(host(p('run.sh')), 'utf8')).toBe('echo 3\n')
    await fs.writeFile(p('secret'), 's', { mode: 0o600 })
    expect(statSync(host(p('secret'))).mode & 0o7777).toBe(0o600)
    // The upload's own 0644 needs no chmod: no command is started for it.
    writeFileSync(host(p('plain.txt')), 'a')
    chmodSync(host(p('plain.txt')), 0o644)
    const before = standin.requests.length
    await fs.writeFile(p('plain.txt'), 'b')
    expect(standin.requests.slice(before).filter((r) => r.path.startsWith('/process.Process/'))).toEqual([])
  })

  it('replaces a symlink with a file on write (a documented limitation)', async () => {
    const { fs, host } = await world()
    writeFileSync(host(p('real.txt')), 'real')
    symlinkSync('real.txt', host(p('alias.txt')))
    await fs.writeFile(p('alias.txt'), 'via alias')
    expect(lstatSync(host(p('alias.txt'))).isSymbolicLink()).toBe(false)
    expect(readFileSync(host(p('real.txt')), 'utf8')).toBe('real')
  })

  it('fails a call under a killed sandbox with IO and the owner sentence, then serves a new one', async () => {
    const { ctx, fs, id } = await world()
    standin.kill(id)
    const error = await fs.readText(p('anything')).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(FsError)
    expect(error).toMatchObject({ code: 'IO', message: expect.stringContaining(`sandbox ${id} stopped`) })
    // The owner was told: the next call runs in a fresh sandbox.
    await fs.writeFile(p('after.txt'), 'fresh', { createParents: true })
    expect(ctx.e2b.sandboxId).not.toBe(id)
    expect((await fs.readText(p('after.txt'))).text).toBe('fresh')
  })

  it('fails with IO and the owner sentence when no sandbox can be had', async () => {
    const key = process.env.E2B_API_KEY
    delete process.env.E2B_API_KEY
    try {
      const ctx = await mount()
      const error = await ctx.fs.stat(p('x')).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(FsError)
      expect(error).toMatchObject({ code: 'IO', message: expect.stringContaining('needs E2B_API_KEY') })
    } finally {
      process.env.E2B_API_KEY = key
    }
  })

  it('reports any other envd failure as IO, not a raw SDK error', async () => {
    const { fs, host } = await world()
    writeFileSync(host(p('f.txt')), 'f')
    standin.faults.push({ method: 'GET', path: '/files', status: 500, times: 1 })
    expect(await code(fs.readText(p('f.txt')))).toBe('IO')
    standin.faults.push({ method: 'POST', path: '/filesystem.Filesystem/Stat', status: 500, times: 1 })
    expect(await code(fs.stat(p('f.txt')))).toBe('IO')
    expect((await fs.readText(p('f.txt'))).text).toBe('f')
  })
})
