// Issue #35: bash's startup file (BASH_ENV, sourced by every unconfined bash: an approved
// escalation, danger-full-access) lived in a 0700 dir under the system temp directory. Confined
// commands run as the same user and may write the temp dir (sandbox-policy's default tempDirs), so
// one could append to it and have the next approved, unconfined command run its payload. The file
// now lives under $DSH_HOME/run, which the sandbox keeps read-only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import SessionStore from '@dsh/session'
import LocalSubprocessService from '@dsh/subprocess-local'
import LocalSandbox from '@dsh/sandbox-local'
import SandboxPolicyService from '@dsh/sandbox-policy'
import ApprovalService from '@dsh/user-approval'
import SandboxedBashExecutor from '../src/index.ts'

let base: string
let saved: string | undefined
beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-bash-startup-')))
  saved = process.env.DSH_HOME
  process.env.DSH_HOME = join(base, 'home')
})
afterAll(() => {
  if (saved === undefined) delete process.env.DSH_HOME
  else process.env.DSH_HOME = saved
  rmSync(base, { recursive: true, force: true })
})

describe('the BASH_ENV startup file', () => {
  it('cannot be rewritten by a confined command to run code in the next unconfined one', async () => {
    const ws = join(base, 'ws')
    const outside = join(base, 'outside')
    mkdirSync(ws)
    mkdirSync(outside)
    const ctx = new Context()
    await ctx.plugin(SessionStore)
    await ctx.plugin(LocalSubprocessService, {} as never)
    await ctx.plugin(LocalSandbox, { runner: 'bwrap' as never })
    // The shipped default: the system temp directory is writable in workspace-write.
    await ctx.plugin(SandboxPolicyService, { tempDirs: [...new Set(['/tmp', tmpdir()])] })
    await ctx.plugin(SandboxedBashExecutor, {
      defaultTimeoutMs: 10_000,
      maxTimeoutMs: 20_000,
      killGraceMs: 200,
      spillDir: join(base, 'spill'),
    } as never)
    await ctx.plugin(ApprovalService, {} as never)
    ctx.approval.registerAnswerer({ name: 'test', answer: () => ({ decision: 'allowed-once' }) })
    const session = ctx.sessions.create({ cwd: ws })
    const sh = async (command: string, escalate = false) => {
      const spec = await ctx.shell.resolve({
        command,
        cwd: ws,
        sessionId: session.id,
        ...(escalate ? { sandboxEscalation: { justification: 'test' } } : {}),
      } as never)
      const result = await ctx.shell.run(spec)
      return { result, text: result.output.head + result.output.tail }
    }
    // An approved unconfined command sources the startup file; its path is in bash's environment
    // (the file unsets BASH_ENV, but /proc keeps the variable bash started with).
    const first = await sh(`tr '\\0' '\\n' < /proc/$$/environ | grep '^BASH_ENV='`, true)
    const file = first.text.trim().replace(/^BASH_ENV=/, '')
    expect(file).toMatch(/merge-stderr.*\.sh$/)
    // The confined command appends a payload to exactly that file.
    const attack = await sh(`echo 'touch ${outside}/pwned' >> ${file} && echo planted || echo refused`)
    expect(attack.result.sandbox).toMatchObject({ runner: 'bwrap', enforcement: 'enforced' })
    expect(attack.text).toContain('refused')
    expect((await sh('echo second', true)).text).toBe('second\n')
    expect(existsSync(join(outside, 'pwned'))).toBe(false)
  })
})
