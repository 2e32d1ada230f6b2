// A language server runs inside the session's sandbox when the sandbox seam is mounted: a server
// started for a project (which may load code the project ships) writes only where the policy
// allows. Real bwrap, real processes. The "server" is a shell that tries one write inside the
// workspace (the positive control: it did run) and one outside, then exits; the request fails.
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import LspService from '@dsh/lsp'
import LocalSandbox from '@dsh/sandbox-local'
import SandboxPolicyService from '@dsh/sandbox-policy'
import SubprocessLocal from '@dsh/subprocess-local'
import * as LspStdio from '../src/index.ts'

const bwrap = ['/usr/bin/bwrap', '/bin/bwrap'].some((path) => existsSync(path))
const dirs: string[] = []
const fibers: { dispose(): unknown }[] = []
afterEach(async () => {
  for (const fiber of fibers.splice(0)) await fiber.dispose()
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function tempDir(prefix: string): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)))
  dirs.push(dir)
  return dir
}

async function boot(workspace: string, outside: string, sandboxed: boolean): Promise<Context> {
  const ctx = new Context()
  const mount = async (plugin: unknown, config: object) => {
    const fiber = ctx.plugin(plugin as never, config as never)
    await fiber
    fibers.push(fiber)
  }
  await mount(SubprocessLocal, { watchdog: false })
  if (sandboxed) {
    await mount(LocalSandbox, { runner: 'bwrap', probeCache: false, prewarmDelayMs: 0 })
    // No temp dirs: the workspace (itself under the temp dir) is the only writable root.
    await mount(SandboxPolicyService, { fallbackRoot: workspace, tempDirs: [], announce: false })
  }
  await mount(LspService, {})
  const script = `echo in > ${join(workspace, 'inside')}; echo out > ${join(outside, 'escaped')}; exit 3`
  await mount(LspStdio, {
    servers: { probe: { command: 'sh', args: ['-c', script], extensions: ['.ts'], rootMarkers: ['tsconfig.json'] } },
    requestTimeoutMs: 20_000,
  })
  return ctx
}

describe.skipIf(!bwrap)('a language server under the sandbox', () => {
  it('writes only where the policy allows', async () => {
    const workspace = tempDir('dsh-lsp-ws-')
    const outside = tempDir('dsh-lsp-out-')
    writeFileSync(join(workspace, 'tsconfig.json'), '{}')
    writeFileSync(join(workspace, 'a.ts'), 'export const a = 1\n')
    const ctx = await boot(workspace, outside, true)
    await expect(ctx.lsp.hover(join(workspace, 'a.ts'), { line: 0, character: 13 })).rejects.toThrow(/did not start/)
    expect(existsSync(join(workspace, 'inside'))).toBe(true)
    expect(existsSync(join(outside, 'escaped'))).toBe(false)
  })

  it('runs unconfined without the sandbox seam (the control)', async () => {
    const workspace = tempDir('dsh-lsp-ws-')
    const outside = tempDir('dsh-lsp-out-')
    writeFileSync(join(workspace, 'tsconfig.json'), '{}')
    writeFileSync(join(workspace, 'a.ts'), 'export const a = 1\n')
    const ctx = await boot(workspace, outside, false)
    await expect(ctx.lsp.hover(join(workspace, 'a.ts'), { line: 0, character: 13 })).rejects.toThrow(/did not start/)
    expect(existsSync(join(workspace, 'inside'))).toBe(true)
    expect(existsSync(join(outside, 'escaped'))).toBe(true)
  })
})
