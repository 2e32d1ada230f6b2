// dsh's private temp directory (job spills, bash-local spills) lies under /tmp, which confined
// commands may write: with real bwrap, a confined command may still read what is kept there but
// neither change, remove nor add to it.
import { afterAll, beforeAll, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import SessionStore from '@dsh/session'
import SandboxPolicyService from '@dsh/sandbox-policy'
import LocalSandbox from '@dsh/sandbox-local'
import { existingProcessTempDir, processTempDir } from '@dsh/spill-files'

let base: string
let ctx: Context

beforeAll(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-temp-guard-')))
  mkdirSync(join(base, 'ws'))
  ctx = new Context()
  await ctx.plugin(SessionStore)
  ctx.provide('homePaths', { home: join(base, 'home') } as never)
  await ctx.plugin(SandboxPolicyService, {})
  await ctx.plugin(LocalSandbox, { spawnServer: false, probeCache: false })
})
afterAll(() => {
  existingProcessTempDir() !== undefined && processTempDir().remove()
  rmSync(base, { recursive: true, force: true })
})

it('the private temp directory is read-only to a confined command (real bwrap)', async () => {
  const info = await ctx.sandbox.describe()
  expect(info.runner, JSON.stringify(info.rejected)).toBe('bwrap')
  const dir = processTempDir()
  const spill = dir.createFile(`guard-${process.pid}.log`)
  writeSync(spill.fd, 'job output\n')
  closeSync(spill.fd)
  expect(existingProcessTempDir()).toBe(dir.path)
  const session = ctx.sessions.create({ cwd: join(base, 'ws') }).id
  const policy = ctx.sandboxPolicy.resolve({ sessionId: session })
  expect(policy.mode).toBe('workspace-write')
  expect(policy.writableRoots).toContain(realpathSync('/tmp'))
  const script = [
    `cat ${spill.path}`,
    `echo planted > ${spill.path} && echo overwrote`,
    `rm -f ${spill.path} && [ ! -e ${spill.path} ] && echo removed`,
    `echo x > ${join(dir.path, 'planted.log')} && echo added`,
    `echo ok > ${join(base, 'ws', 'inside.txt')} && echo workspace-writable`,
    'true',
  ].join('; ')
  const invocation = await ctx.sandbox.wrap({
    argv: ['/bin/sh', '-c', script],
    cwd: join(base, 'ws'),
    policy,
    launcher: false,
  })
  const out = execFileSync(invocation.argv[0]!, invocation.argv.slice(1), {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  })
  expect(out).toContain('job output')
  expect(out).toContain('workspace-writable')
  expect(out).not.toMatch(/overwrote|removed|added/)
  expect(readFileSync(spill.path, 'utf8')).toBe('job output\n')
  expect(existsSync(join(dir.path, 'planted.log'))).toBe(false)
  rmSync(spill.path)
})
