import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import SessionStore from '@dsh/session'
import SandboxPolicyService from '@dsh/sandbox-policy'
import ToolRegistry from '@dsh/tools'
import * as ToolFs from '@dsh/tool-fs'
import { FsError } from '@dsh/fs'
import SandboxedFileSystem, { SANDBOX_DENIED, realLocation } from '../src/index.ts'

let base: string
let ws: string
let temp: string
let outside: string
let ctx: Context
let session: string

beforeAll(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-fs-sandbox-')))
  ws = join(base, 'ws')
  temp = join(base, 'tmp')
  outside = join(base, 'outside')
  for (const dir of [ws, temp, outside]) mkdirSync(dir)
  writeFileSync(join(outside, 'secret.txt'), 'top secret\n')
  writeFileSync(join(ws, 'file.txt'), 'hello\n')
  symlinkSync(outside, join(ws, 'escape'))
  symlinkSync(join(outside, 'secret.txt'), join(ws, 'secret-link'))
  symlinkSync(join(base, 'nowhere'), join(ws, 'dangling'))
  ctx = new Context()
  await ctx.plugin(SessionStore)
  await ctx.plugin(SandboxPolicyService, { tempDirs: [temp] })
  await ctx.plugin(SandboxedFileSystem, { durable: false })
  session = ctx.sessions.create({ cwd: ws }).id
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

async function denied(work: Promise<unknown>): Promise<FsError> {
  const error = await work.then(() => undefined, (e) => e)
  expect(error).toBeInstanceOf(FsError)
  expect(error.code).toBe(SANDBOX_DENIED)
  return error
}

describe('workspace-write', () => {
  it('writes, edits and removes inside the workspace and temp dirs', async () => {
    await ctx.fs.writeFile(join(ws, 'new/deep/a.txt'), 'a', { session, createParents: true })
    await ctx.fs.edit(join(ws, 'file.txt'), (text) => text.replace('hello', 'bye'), { session })
    await ctx.fs.writeFile(join(temp, 't.txt'), 't', { session })
    await (ctx.fs as SandboxedFileSystem).mkdir(join(ws, 'made'), { recursive: true, session })
    await denied(ctx.fs.mkdir(join(outside, 'made'), { recursive: true }))
    await ctx.fs.remove(join(ws, 'new'), { session, recursive: true })
    expect(readFileSync(join(ws, 'file.txt'), 'utf8')).toBe('bye\n')
    expect(existsSync(join(ws, 'new'))).toBe(false)
  })

  it('denies $HOME, /etc, a .. escape, symlink escapes and a dangling parent link', async () => {
    const home = join(homedir(), '.dsh-fs-sandbox-probe')
    const error = await denied(ctx.fs.writeFile(home, 'x', { session }))
    expect(error.message).toContain('workspace-write mode')
    expect(error.message).toContain(`only files under ${ws}, ${temp} may be changed`)
    await denied(ctx.fs.writeFile('/etc/dsh-fs-sandbox-probe', 'x', { session }))
    await denied(ctx.fs.writeFile(join(ws, '../outside/dotdot.txt'), 'x', { session }))
    const link = await denied(ctx.fs.writeFile(join(ws, 'escape/via-link.txt'), 'x', { session, createParents: true }))
    expect(link.message).toContain(`(really ${join(outside, 'via-link.txt')})`)
    await denied(ctx.fs.edit(join(ws, 'secret-link'), () => 'pwned', { session }))
    await denied(ctx.fs.remove(join(ws, 'escape/secret.txt'), { session }))
    await denied(ctx.fs.writeFile(join(ws, 'dangling/child.txt'), 'x', { session, createParents: true }))
    expect(existsSync(home)).toBe(false)
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('top secret\n')
    expect(existsSync(join(outside, 'via-link.txt'))).toBe(false)
    expect(existsSync(join(base, 'nowhere'))).toBe(false)
  })

  it('reads are always allowed, outside the workspace too', async () => {
    expect((await ctx.fs.readText(join(ws, 'secret-link'), { session })).text).toBe('top secret\n')
    expect((await ctx.fs.readText('/etc/hostname', { session })).text.length).toBeGreaterThan(0)
  })
})

describe('other modes', () => {
  it('read-only denies every mutation; danger-full-access allows them', async () => {
    const ro = ctx.sessions.create({ cwd: ws }).id
    ctx.sandboxPolicy.setMode(ro, 'read-only')
    const error = await denied(ctx.fs.writeFile(join(ws, 'ro.txt'), 'x', { session: ro }))
    expect(error.message).toContain('no file may be changed')
    await denied(ctx.fs.edit(join(ws, 'file.txt'), (t) => t, { session: ro }))
    await denied(ctx.fs.remove(join(ws, 'file.txt'), { session: ro }))
    const full = ctx.sessions.create({ cwd: ws }).id
    ctx.sandboxPolicy.setMode(full, 'danger-full-access')
    await ctx.fs.writeFile(join(outside, 'free.txt'), 'free', { session: full })
    expect(readFileSync(join(outside, 'free.txt'), 'utf8')).toBe('free')
  })

  it('a call without a session is fenced by the deployment default over the fallback root', async () => {
    await denied(ctx.fs.writeFile(join(outside, 'anon.txt'), 'x'))
  })
})

describe('through the write tool', () => {
  it('the model gets a SANDBOX_DENIED error it can act on', async () => {
    await ctx.plugin(ToolRegistry, {} as never)
    await ctx.plugin(ToolFs, {} as never)
    const result = await ctx.tools.execute(
      { callId: 'w1', name: 'write', arguments: JSON.stringify({ file_path: join(outside, 'tool.txt'), content: 'x' }) },
      { cwd: ws, sessionId: session },
    )
    expect(result.error?.code).toBe(SANDBOX_DENIED)
    const text = result.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
    expect(text).toContain('the sandbox refused to write')
    expect(existsSync(join(outside, 'tool.txt'))).toBe(false)
  })
})

it('realLocation keeps missing tail components and resolves the existing prefix', () => {
  expect(realLocation(join(ws, 'escape', 'a', 'b'))).toBe(join(outside, 'a', 'b'))
  expect(realLocation(join(ws, 'dangling', 'x'))).toBeUndefined()
  expect(realLocation(join(ws, 'dangling'))).toBe(join(ws, 'dangling'))
})

describe('the dsh home', () => {
  it('is read-only and its credential files unreadable, even when it lies in a writable temp dir', async () => {
    const home = join(temp, 'dsh-home')
    mkdirSync(join(home, 'profiles', 'default'), { recursive: true })
    writeFileSync(join(home, '.credentials.yaml'), 'deepseek: sk-secret\n')
    writeFileSync(join(home, '.env'), 'DEEPSEEK_API_KEY=sk-env\n')
    writeFileSync(join(home, 'settings.yaml'), 'theme: plain\n')
    const local = new Context()
    await local.plugin(SessionStore)
    local.provide('homePaths', { home } as never)
    await local.plugin(SandboxPolicyService, { tempDirs: [temp] })
    await local.plugin(SandboxedFileSystem, { durable: false })
    const id = local.sessions.create({ cwd: ws }).id
    const patch = await denied(local.fs.writeFile(join(home, 'cordis.patch.yml'), '- insert: []\n', { session: id }))
    expect(patch.message).toContain(`it lies in ${home}`)
    await denied(local.fs.writeFile(join(home, 'profiles', 'default', 'cordis.patch.yml'), 'x', { session: id, createParents: true }))
    await denied(local.fs.edit(join(home, 'settings.yaml'), () => 'theme: evil\n', { session: id }))
    await denied(local.fs.remove(join(home, 'settings.yaml'), { session: id }))
    // Through a symlink in the workspace, too.
    symlinkSync(home, join(ws, 'home-link'))
    await denied(local.fs.writeFile(join(ws, 'home-link', 'cordis.patch.yml'), 'x', { session: id }))
    const secret = await denied(local.fs.readText(join(home, '.credentials.yaml'), { session: id }))
    expect(secret.message).not.toContain('sk-secret')
    await denied(local.fs.readText(join(ws, 'home-link', '.env'), { session: id }))
    expect((await local.fs.readText(join(home, 'settings.yaml'), { session: id })).text).toBe('theme: plain\n')
    expect(existsSync(join(home, 'cordis.patch.yml'))).toBe(false)
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toBe('theme: plain\n')
    // danger-full-access is no sandbox at all.
    local.sandboxPolicy.setMode(id, 'danger-full-access')
    expect((await local.fs.readText(join(home, '.env'), { session: id })).text).toContain('sk-env')
    rmSync(join(ws, 'home-link'))
  })
})
