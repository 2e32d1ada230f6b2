import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import SessionStore from '@dsh/session'
import SandboxPolicyService from '@dsh/sandbox-policy'
import ToolRegistry from '@dsh/tools'
import * as ToolFs from '@dsh/tool-fs'
import { FsError } from '@dsh/fs'
import ApprovalService, { type ApprovalAnswer, type ApprovalRequest } from '@dsh/user-approval'
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
  const error = await work.then(
    () => undefined,
    (e) => e,
  )
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
      {
        callId: 'w1',
        name: 'write',
        arguments: JSON.stringify({ file_path: join(outside, 'tool.txt'), content: 'x' }),
      },
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
    await denied(
      local.fs.writeFile(join(home, 'profiles', 'default', 'cordis.patch.yml'), 'x', {
        session: id,
        createParents: true,
      }),
    )
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

describe('project control files', () => {
  it('are neither created nor changed nor removed, present or not, through links too; the rest of the project stays writable', async () => {
    const project = join(base, 'project')
    const tree = join(base, 'project-tree')
    mkdirSync(join(project, '.claude'), { recursive: true })
    const git = (cwd: string, ...args: string[]) =>
      execFileSync('git', ['-C', cwd, ...args], {
        encoding: 'utf8',
        env: {
          PATH: process.env.PATH,
          HOME: base,
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_AUTHOR_NAME: 't',
          GIT_AUTHOR_EMAIL: 't@t',
          GIT_COMMITTER_NAME: 't',
          GIT_COMMITTER_EMAIL: 't@t',
        },
      })
    git(project, 'init', '-q')
    git(project, 'commit', '-q', '--allow-empty', '-m', 'first')
    git(project, 'worktree', 'add', '-q', tree)
    writeFileSync(join(project, '.claude', 'settings.json'), '{}\n')
    symlinkSync(join(project, '.claude'), join(project, 'claude-link'))
    const config = readFileSync(join(project, '.git', 'config'), 'utf8')
    const id = ctx.sessions.create({ cwd: project }).id
    const options = { session: id, createParents: true }
    const refused = await denied(
      ctx.fs.writeFile(join(project, '.mcp.json'), '{"mcpServers":{"x":{"command":"sh"}}}', options),
    )
    expect(refused.message).toContain('a project control file')
    await denied(ctx.fs.writeFile(join(project, '.claude', 'settings.local.json'), '{}', options))
    await denied(ctx.fs.edit(join(project, '.claude', 'settings.json'), () => '{"hooks":{}}', { session: id }))
    await denied(ctx.fs.writeFile(join(project, 'claude-link', 'settings.json'), '{"hooks":{}}', options))
    await denied(ctx.fs.writeFile(join(project, '.codex', 'hooks.json'), '{}', options))
    await denied(ctx.fs.mkdir(join(project, '.dsh'), { recursive: true, session: id } as never))
    await denied(ctx.fs.writeFile(join(project, '.env'), 'DEEPSEEK_BASE_URL=http://evil\n', options))
    await denied(
      ctx.fs.writeFile(join(project, '.git', 'hooks', 'pre-commit'), '#!/bin/sh\ntouch /tmp/pwned\n', options),
    )
    await denied(
      ctx.fs.edit(join(project, '.git', 'config'), (text) => `${text}[core]\n\tfsmonitor = /bin/evil\n`, {
        session: id,
      }),
    )
    await denied(ctx.fs.writeFile(join(project, '.git', 'commondir'), '/tmp/evil\n', options))
    // Removing a directory that holds a control file removes the file.
    const holder = await denied(ctx.fs.remove(join(project, '.git'), { session: id, recursive: true }))
    expect(holder.message).toContain(`it holds ${join(project, '.git')}`)
    // A linked worktree: its .git pointer file, and the worktree's own git directory in the main repository.
    const worktree = ctx.sessions.create({ cwd: tree }).id
    await denied(ctx.fs.writeFile(join(tree, '.git'), `gitdir: ${base}/evil\n`, { session: worktree }))
    await denied(
      ctx.fs.writeFile(join(project, '.git', 'worktrees', 'project-tree', 'config.worktree'), '[core]\n', {
        session: worktree,
      }),
    )
    expect(readFileSync(join(project, '.git', 'config'), 'utf8')).toBe(config)
    for (const path of [
      '.mcp.json',
      '.env',
      '.codex',
      '.dsh',
      '.git/hooks/pre-commit',
      '.git/commondir',
      '.claude/settings.local.json',
    ])
      expect(existsSync(join(project, path))).toBe(false)
    expect(readFileSync(join(project, '.claude', 'settings.json'), 'utf8')).toBe('{}\n')
    // The rest of the project, git's own bookkeeping included, stays writable.
    await ctx.fs.writeFile(join(project, 'notes.txt'), 'ok\n', options)
    await ctx.fs.writeFile(join(project, '.git', 'info', 'exclude'), 'build/\n', options)
    await ctx.fs.writeFile(join(project, '.github', 'workflows', 'ci.yml'), 'on: push\n', options)
    // danger-full-access is no sandbox at all.
    ctx.sandboxPolicy.setMode(id, 'danger-full-access')
    await ctx.fs.writeFile(join(project, '.mcp.json'), '{}\n', options)
    expect(readFileSync(join(project, '.mcp.json'), 'utf8')).toBe('{}\n')
  })

  it('the write tool tells the model why', async () => {
    const project = join(base, 'project-tool')
    mkdirSync(project)
    const id = ctx.sessions.create({ cwd: project }).id
    if (!ctx.get('tools')) {
      await ctx.plugin(ToolRegistry, {} as never)
      await ctx.plugin(ToolFs, {} as never)
    }
    const result = await ctx.tools.execute(
      {
        callId: 'w2',
        name: 'write',
        arguments: JSON.stringify({ file_path: join(project, '.mcp.json'), content: '{}' }),
      },
      { cwd: project, sessionId: id },
    )
    expect(result.error?.code).toBe(SANDBOX_DENIED)
    const text = result.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
    expect(text).toContain('project control file')
    expect(existsSync(join(project, '.mcp.json'))).toBe(false)
  })
})

describe('escalation through the write and edit tools', () => {
  /** A tree with the approval service and one answerer that records each request and answers it. */
  async function boot(answer: (request: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>) {
    const tree = new Context()
    await tree.plugin(SessionStore)
    await tree.plugin(SandboxPolicyService, { tempDirs: [temp] })
    await tree.plugin(SandboxedFileSystem, { durable: false })
    await tree.plugin(ApprovalService, {} as never)
    await tree.plugin(ToolRegistry, {} as never)
    await tree.plugin(ToolFs, {} as never)
    const asked: ApprovalRequest[] = []
    tree.approval.registerAnswerer({ name: 'test', answer: (request) => (asked.push(request), answer(request)) })
    const id = tree.sessions.create({ cwd: ws }).id
    const call = async (name: string, args: object) => {
      const result = await tree.tools.execute(
        { callId: `c${asked.length}`, name, arguments: JSON.stringify(args) },
        { cwd: ws, sessionId: id },
      )
      return {
        code: result.error?.code,
        text: result.message.content.map((b) => (b.type === 'text' ? b.text : '')).join(''),
      }
    }
    return { tree, asked, call, id }
  }
  const why = { justification: 'the build reads its config from there' }

  it('over a confining fs the tools offer sandbox_escalation; the denial says how to use it', async () => {
    const { tree, asked, call } = await boot(() => ({ decision: 'allowed-once' }))
    expect(tree.tools.get('write')?.parameters.properties).toHaveProperty('sandbox_escalation')
    expect(tree.tools.get('edit')?.parameters.properties).toHaveProperty('sandbox_escalation')
    const plain = await call('write', { file_path: join(outside, 'plain.txt'), content: 'x' })
    expect(plain.code).toBe(SANDBOX_DENIED)
    expect(plain.text).toContain('"sandbox_escalation": {"justification": "<why>"}')
    // No escalation asked for: nobody is asked, nothing is written.
    expect(asked).toEqual([])
    expect(existsSync(join(outside, 'plain.txt'))).toBe(false)
  })

  it('an allowed answer writes exactly that file once; the next change outside asks again', async () => {
    const { asked, call, id } = await boot(() => ({ decision: 'allowed-once' }))
    const target = join(outside, 'allowed.txt')
    const written = await call('write', { file_path: target, content: 'one\n', sandbox_escalation: why })
    expect(written.code).toBeUndefined()
    expect(readFileSync(target, 'utf8')).toBe('one\n')
    expect(asked).toHaveLength(1)
    expect(asked[0]).toMatchObject({
      kind: 'write',
      sessionId: id,
      action: { path: target, operation: 'write', sandbox: 'none' },
    })
    expect(asked[0].title).toBe(`Write ${target} outside the sandbox's writable roots`)
    expect(asked[0].detail).toContain('Reason given: the build reads its config from there')
    // The edit tool needs the file read first (freshness) only when a policy row says so; here it edits directly.
    const edited = await call('edit', {
      file_path: target,
      old_string: 'one',
      new_string: 'two',
      sandbox_escalation: why,
    })
    expect(edited.code).toBeUndefined()
    expect(readFileSync(target, 'utf8')).toBe('two\n')
    expect(asked.map((r) => r.action)).toEqual([
      { path: target, operation: 'write', sandbox: 'none' },
      { path: target, operation: 'edit', sandbox: 'none' },
    ])
    // Each request names the tool call it was asked inside (timeout-policy pauses its deadline).
    expect(asked.map((r) => r.callId)).toEqual(['c0', 'c1'])
  })

  it('a refusal, no answer at all, or a failing approval path writes nothing', async () => {
    const target = join(outside, 'refused.txt')
    const rejected = await boot(() => ({ decision: 'rejected', message: 'keep it in the repo' }))
    const r1 = await rejected.call('write', { file_path: target, content: 'x', sandbox_escalation: why })
    expect(r1.code).toBe(SANDBOX_DENIED)
    expect(r1.text).toContain(`the user refused to let you write ${target} outside the sandbox`)
    expect(r1.text).toContain('The user said: keep it in the repo')
    const failing = await boot(() => {
      throw new Error('answerer crashed')
    })
    const r2 = await failing.call('write', { file_path: target, content: 'x', sandbox_escalation: why })
    expect(r2.code).toBe(SANDBOX_DENIED)
    expect(existsSync(target)).toBe(false)
    const empty = await rejected.call('write', {
      file_path: target,
      content: 'x',
      sandbox_escalation: { justification: ' ' },
    })
    expect(empty.code).not.toBeUndefined()
    expect(existsSync(target)).toBe(false)
  })

  it('control files and the dsh home are refused before anyone is asked', async () => {
    const { asked, call } = await boot(() => ({ decision: 'allowed-once' }))
    const control = await call('write', { file_path: join(ws, '.mcp.json'), content: '{}', sandbox_escalation: why })
    expect(control.code).toBe(SANDBOX_DENIED)
    expect(control.text).toContain('project control file')
    expect(existsSync(join(ws, '.mcp.json'))).toBe(false)
    expect(asked).toEqual([])
  })
})
