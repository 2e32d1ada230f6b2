// The e2b world against the local stand-in: one owner, the subprocess and fs seams served from
// its sandbox, the sandbox killed when the tree unloads, and the faults a remote machine has.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'
import type { ProcessExit } from '@dsh/subprocess'
import E2bService, { type E2bConfig } from '../src/index.ts'
import E2bSubprocessService from '@dsh/subprocess-e2b'
import E2bFileSystem from '@dsh/fs-e2b'

let standin: E2bStandin
const cwd = '/work/project'

beforeAll(async () => {
  standin = await startE2bStandin()
})
afterAll(async () => {
  await standin.close()
})

async function world(config: Partial<E2bConfig> = {}) {
  const ctx = new Context()
  const fibers = [
    await ctx.plugin(E2bService, {
      apiUrl: standin.url,
      sandboxUrl: standin.url,
      cwd,
      retryDelayMs: 10,
      upload: { enabled: false, maxBytes: 1 << 20, exclude: [] },
      ...config,
    }),
    await ctx.plugin(E2bSubprocessService, {}),
    await ctx.plugin(E2bFileSystem),
  ]
  await new Promise<void>((resolve) => ctx.inject(['e2b', 'subprocess', 'fs'], () => resolve()))
  closers.set(ctx, async () => {
    for (const fiber of fibers.reverse()) await fiber.dispose()
  })
  return ctx
}

const closers = new Map<Context, () => Promise<void>>()
const close = (ctx: Context) => (closers.get(ctx) as () => Promise<void>)()

function text(exit: ProcessExit): string {
  const merged = exit.output.merged
  return merged ? new TextDecoder().decode(merged.head) : ''
}

const run = (ctx: Context, command: string, extra: Record<string, unknown> = {}) =>
  ctx.subprocess.spawn({ file: 'bash', args: ['-c', command], cwd, kill: { graceMs: 200 }, stderr: 'stdout', ...extra })

describe('the e2b world', () => {
  it('runs commands and file calls in one sandbox, and kills it at the end', async () => {
    process.env.E2B_API_KEY = standin.apiKey
    const ctx = await world()
    const exit = await run(ctx, 'pwd; echo made > made.txt; echo oops >&2; exit 4').exited
    expect(text(exit)).toBe(`${cwd}\noops\n`)
    expect(exit.code).toBe(4)
    const id = ctx.e2b.sandboxId as string
    const root = standin.rootOf(id)
    expect(readFileSync(join(root, cwd, 'made.txt'), 'utf8')).toBe('made\n')
    // The host's /work/project is not touched; fs sees the sandbox's file.
    expect(existsSync(join(cwd, 'made.txt'))).toBe(false)
    expect((await ctx.fs.readText(join(cwd, 'made.txt'))).text).toBe('made\n')
    await ctx.fs.writeFile(join(cwd, 'src/new.ts'), 'export {}\n', { createParents: true })
    expect(text(await run(ctx, 'cat src/new.ts').exited)).toBe('export {}\n')
    await ctx.fs.edit(join(cwd, 'src/new.ts'), (s) => s.replace('{}', '{ x }'))
    expect(readFileSync(join(root, cwd, 'src/new.ts'), 'utf8')).toBe('export { x }\n')
    expect((await ctx.fs.list(cwd)).map((e) => e.name)).toEqual(['made.txt', 'src'])
    await expect(ctx.fs.readText(join(cwd, 'absent'))).rejects.toMatchObject({ code: 'NOT_FOUND' })
    // One sandbox for everything, created by one request.
    expect(standin.requests.filter((r) => r.method === 'POST' && r.path === '/sandboxes')).toHaveLength(1)
    await close(ctx)
    // Unloading the owner killed the sandbox it created.
    expect(standin.get(id)).toBeUndefined()
  })

  it('streams output, feeds stdin and terminates on abort', async () => {
    process.env.E2B_API_KEY = standin.apiKey
    const ctx = await world()
    const cat = ctx.subprocess.spawn({ file: 'cat', cwd, kill: { graceMs: 200 }, stdin: 'pipe' })
    const seen: string[] = []
    cat.onOutput((chunk) => seen.push(new TextDecoder().decode(chunk.data)))
    cat.write('ping\n')
    await expect.poll(() => seen.join('')).toBe('ping\n')
    cat.closeStdin()
    expect((await cat.exited).code).toBe(0)
    const abort = new AbortController()
    const sleeper = run(ctx, 'echo started; sleep 30', { signal: abort.signal })
    await new Promise<void>((resolve) => sleeper.onOutput(() => resolve()))
    abort.abort()
    const exit = await sleeper.exited
    expect(exit.terminated).toBe('aborted')
    expect(exit.signal).toMatch(/SIGTERM|SIGKILL/)
    await close(ctx)
  })

  it('says so when the sandbox is killed under a command, then recreates it', async () => {
    process.env.E2B_API_KEY = standin.apiKey
    const ctx = await world()
    const long = run(ctx, 'echo begun; sleep 30')
    await new Promise<void>((resolve) => long.onOutput(() => resolve()))
    const first = ctx.e2b.sandboxId as string
    standin.kill(first)
    const exit = await long.exited
    expect(exit.spawnError?.code).toBe('E2B_SANDBOX_LOST')
    expect(exit.spawnError?.message).toContain(`sandbox ${first} stopped`)
    expect(text(exit)).toBe('begun\n')
    const again = await run(ctx, 'echo fresh').exited
    expect(text(again)).toBe('fresh\n')
    expect(ctx.e2b.sandboxId).not.toBe(first)
    await close(ctx)
  })

  it('fails once with one line when the key is missing or wrong, without retrying', async () => {
    delete process.env.E2B_API_KEY
    const ctx = await world()
    const before = standin.requests.length
    const missing = await run(ctx, 'true').exited
    expect(missing.spawnError?.message).toMatch(/^the e2b world needs E2B_API_KEY/)
    expect(missing.spawnError?.message).not.toContain('\n')
    await expect(ctx.fs.readText(join(cwd, 'x'))).rejects.toThrow(/needs E2B_API_KEY/)
    expect(standin.requests.length).toBe(before)
    await close(ctx)

    process.env.E2B_API_KEY = 'e2b_00000000000000000000'
    const wrong = await world()
    const start = standin.requests.length
    const refused = await run(wrong, 'true').exited
    expect(refused.spawnError?.message).toMatch(/E2B refused E2B_API_KEY/)
    expect((await run(wrong, 'true').exited).spawnError?.message).toMatch(/E2B refused/)
    // One create attempt: the refusal is remembered, not retried.
    expect(standin.requests.slice(start).filter((r) => r.path === '/sandboxes')).toHaveLength(1)
    await close(wrong)
  })

  it('uploads the workspace per .gitignore, never credentials, and refuses one over the cap', async () => {
    process.env.E2B_API_KEY = standin.apiKey
    const local = mkdtempSync(join(tmpdir(), 'dsh-e2b-upload-'))
    mkdirSync(join(local, 'src/deep'), { recursive: true })
    mkdirSync(join(local, 'build'))
    mkdirSync(join(local, '.git'))
    writeFileSync(join(local, '.gitignore'), 'build/\n*.log\n')
    writeFileSync(join(local, 'src/.gitignore'), 'secret.txt\n')
    writeFileSync(join(local, 'src/deep/a.ts'), 'export const a = 1\n')
    writeFileSync(join(local, 'src/secret.txt'), 'no')
    writeFileSync(join(local, 'build/out.js'), 'no')
    writeFileSync(join(local, 'debug.log'), 'no')
    writeFileSync(join(local, '.env'), 'DEEPSEEK_API_KEY=sk-no')
    writeFileSync(join(local, '.git/config'), 'no')
    writeFileSync(join(local, 'run.sh'), '#!/bin/sh\necho ran\n', { mode: 0o755 })
    const ctx = await world({ upload: { enabled: true, from: local, maxBytes: 1 << 20, exclude: [] } })
    const listed = text(await run(ctx, 'find . -type f | sort; ./run.sh').exited)
    expect(listed).toBe('./.gitignore\n./run.sh\n./src/.gitignore\n./src/deep/a.ts\nran\n')
    await close(ctx)

    writeFileSync(join(local, 'big.bin'), Buffer.alloc(4096))
    const capped = await world({ upload: { enabled: true, from: local, maxBytes: 2048, exclude: [] } })
    const before = standin.requests.filter((r) => r.path === '/sandboxes').length
    const refused = await run(capped, 'true').exited
    expect(refused.spawnError?.message).toMatch(
      /^the workspace is 0\.0 MiB after \.gitignore, over the upload cap of 0\.0 MiB/,
    )
    expect((await run(capped, 'true').exited).spawnError?.code).toBe('E2B_UPLOAD_TOO_LARGE')
    // Refused before any sandbox was created: nothing billed.
    expect(standin.requests.filter((r) => r.path === '/sandboxes').length).toBe(before)
    await close(capped)
  })

  it('retries a create answered 429 or 500 a bounded number of times', async () => {
    process.env.E2B_API_KEY = standin.apiKey
    const ctx = await world({ retries: 2 })
    standin.faults.push(
      { method: 'POST', path: '/sandboxes', status: 500, times: 1 },
      { method: 'POST', path: '/sandboxes', status: 429, times: 1 },
    )
    expect(text(await run(ctx, 'echo ok').exited)).toBe('ok\n')
    standin.faults.push({ method: 'POST', path: '/sandboxes', status: 503, times: 5 })
    const bounded = await world({ retries: 1 })
    const start = standin.requests.length
    const exit = await run(bounded, 'true').exited
    expect(exit.spawnError?.message).toMatch(/could not create an E2B sandbox: 503/)
    expect(standin.requests.slice(start).filter((r) => r.path === '/sandboxes')).toHaveLength(2)
    standin.faults.length = 0
    await close(ctx)
    await close(bounded)
  })
})
