// The file tools run in the dsh process, outside the sandbox: in a confining mode they must not
// hand the model what a confined command cannot see, dsh's environment (the API key) and memory
// under /proc, or a credential file reached through a /proc detour.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, mkdirSync, mkdtempSync, openSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import SessionStore from '@dsh/session'
import SandboxPolicyService from '@dsh/sandbox-policy'
import ToolRegistry from '@dsh/tools'
import * as ToolFs from '@dsh/tool-fs'
import { FsError } from '@dsh/fs'
import SandboxedFileSystem, { SANDBOX_DENIED } from '../src/index.ts'

const PLANTED = 'sk-planted-fs-sandbox-0123456789'
let base: string
let ws: string
let home: string
let ctx: Context
let session: string
let child: ChildProcess
let fd: number

beforeAll(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-fs-proc-')))
  ws = join(base, 'ws')
  home = join(base, 'home')
  mkdirSync(ws)
  mkdirSync(home)
  writeFileSync(join(home, '.credentials.yaml'), `deepseek: ${PLANTED}\n`)
  writeFileSync(join(ws, 'ok.txt'), 'fine\n')
  // A process outside the sandbox whose environment holds a key, as dsh's own does.
  child = spawn('sleep', ['600'], { env: { PATH: process.env.PATH, DEEPSEEK_API_KEY: PLANTED }, stdio: 'ignore' })
  await new Promise((resolve) => child.once('spawn', resolve))
  fd = openSync(join(home, '.credentials.yaml'), 'r')
  symlinkSync('/proc/self/environ', join(ws, 'env-link'))
  symlinkSync(`/proc/${child.pid}`, join(ws, 'proc-dir'))
  symlinkSync(`/proc/self/fd/${fd}`, join(ws, 'fd-link'))
  ctx = new Context()
  await ctx.plugin(SessionStore)
  ctx.provide('homePaths', { home } as never)
  await ctx.plugin(SandboxPolicyService, { tempDirs: [] })
  await ctx.plugin(SandboxedFileSystem, { durable: false })
  await ctx.plugin(ToolRegistry, {} as never)
  await ctx.plugin(ToolFs, {} as never)
  session = ctx.sessions.create({ cwd: ws }).id
})
afterAll(() => {
  child?.kill('SIGKILL')
  if (fd !== undefined) closeSync(fd)
  rmSync(base, { recursive: true, force: true })
})

async function refusal(path: string, id = session): Promise<FsError> {
  const error = await ctx.fs.readText(path, { session: id }).then(
    (read) => new Error(`read ${path}: ${read.text.slice(0, 80)}`),
    (e: unknown) => e,
  )
  expect(error, path).toBeInstanceOf(FsError)
  expect((error as FsError).code, path).toBe(SANDBOX_DENIED)
  expect((error as FsError).message).not.toContain(PLANTED)
  return error as FsError
}

/** Swaps `link` to `target` right after the path check, as a concurrent process could. */
class RacingFileSystem extends SandboxedFileSystem {
  swap?: { link: string; target: string }
  protected override async statPath(path: string) {
    const stat = await super.statPath(path)
    if (this.swap && path === this.swap.link) {
      rmSync(this.swap.link)
      symlinkSync(this.swap.target, this.swap.link)
      this.swap = undefined
    }
    return stat
  }
}

it('a link swapped to /proc after the path check is refused on the opened descriptor', async () => {
  const local = new Context()
  await local.plugin(SessionStore)
  local.provide('homePaths', { home } as never)
  await local.plugin(SandboxPolicyService, { tempDirs: [] })
  await local.plugin(RacingFileSystem, { durable: false })
  const id = local.sessions.create({ cwd: ws }).id
  const link = join(ws, 'swapped')
  symlinkSync(join(ws, 'ok.txt'), link)
  const racing = local.fs as RacingFileSystem
  racing.swap = { link, target: `/proc/${child.pid}/environ` }
  const error = await racing.readText(link, { session: id }).then(
    (read) => new Error(`read: ${read.text.slice(0, 80)}`),
    (e: unknown) => e,
  )
  expect(racing.swap).toBeUndefined()
  expect((error as FsError).code).toBe(SANDBOX_DENIED)
  expect((error as FsError).message, (error as FsError).message).toContain(`/proc/${child.pid}/environ`)
  expect((error as FsError).message).not.toContain(PLANTED)
  rmSync(link)
})

describe('per-process /proc entries in a confining mode', () => {
  it('are refused, by every spelling: self, thread-self, a pid, a task, mem, cmdline, fd, root, /dev/fd', async () => {
    const pid = child.pid!
    const direct = await refusal(`/proc/${pid}/environ`)
    expect(direct.message).toContain('per-process /proc entry')
    expect(direct.message).toContain('workspace-write mode')
    for (const path of [
      '/proc/self/environ',
      '/proc/thread-self/environ',
      `/proc/${process.pid}/environ`,
      `/proc/${pid}/task/${pid}/environ`,
      '/proc/self/mem',
      '/proc/self/cmdline',
      `/proc/self/fd/${fd}`,
      `/dev/fd/${fd}`,
      `/proc/self/root${join(home, '.credentials.yaml')}`,
      `/proc/${pid}/cwd/../../..${join(home, '.credentials.yaml')}`,
    ]) {
      await refusal(path)
    }
  })

  it('are refused through symlinks in the workspace (to the file, to the process directory, to an open descriptor)', async () => {
    await refusal(join(ws, 'env-link'))
    await refusal(join(ws, 'proc-dir', 'environ'))
    const viaFd = await refusal(join(ws, 'fd-link'))
    expect(viaFd.message).toMatch(/per-process|credentials/)
  })

  it('cannot be listed', async () => {
    const error = await (ctx.fs as SandboxedFileSystem).list('/proc/self/fd').then(
      () => undefined,
      (e: unknown) => e,
    )
    expect((error as FsError).code).toBe(SANDBOX_DENIED)
  })

  it('leave the rest of /proc and the workspace readable', async () => {
    expect((await ctx.fs.readText('/proc/version', { session })).text).toMatch(/Linux/)
    expect((await ctx.fs.readText(join(ws, 'ok.txt'), { session })).text).toBe('fine\n')
  })

  it('the read tool answers SANDBOX_DENIED and the key never reaches its result', async () => {
    for (const path of [`/proc/${child.pid}/environ`, join(ws, 'proc-dir', 'environ'), '/proc/self/environ']) {
      const result = await ctx.tools.execute(
        { callId: 'r', name: 'read', arguments: JSON.stringify({ file_path: path }) },
        { cwd: ws, sessionId: session },
      )
      const text = result.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
      expect(result.error?.code, path).toBe(SANDBOX_DENIED)
      expect(text).toContain('the sandbox refused to read')
      expect(text).not.toContain(PLANTED)
    }
  })

  it('read-only mode refuses them too; danger-full-access has no sandbox at all', async () => {
    const ro = ctx.sessions.create({ cwd: ws }).id
    ctx.sandboxPolicy.setMode(ro, 'read-only')
    await refusal(`/proc/${child.pid}/environ`, ro)
    const open = ctx.sessions.create({ cwd: ws }).id
    ctx.sandboxPolicy.setMode(open, 'danger-full-access')
    expect((await ctx.fs.readText(`/proc/${child.pid}/environ`, { session: open })).text).toContain(PLANTED)
  })
})
