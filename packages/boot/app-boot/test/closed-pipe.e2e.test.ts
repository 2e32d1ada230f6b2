// Every dsh bin, started with a stdout whose reader is already gone (`dsh-plugin --help | true`),
// ends quietly: exit 0 (or 141 for a run cut short), nothing on stderr. The shared launcher
// handles EPIPE for every bin that ends in it; dsh and dsh-jsonrpc-agent install their own
// listener before their first print.
import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const REPO = fileURLToPath(new URL('../../../../', import.meta.url))

const BINS = [
  'packages/boot/cli/bin/dsh.mjs',
  'packages/acp/acp-app/bin/dsh-acp.mjs',
  'packages/sdk/server/bin/dsh-jsonrpc-agent.mjs',
  'packages/boot/plugin-manager/bin/dsh-plugin.mjs',
  'packages/mcp/mcp-client/bin/dsh-mcp.mjs',
  'packages/interaction/project-trust/bin/dsh-trust.mjs',
]

/** Runs `bin --help` with stdout a pipe whose read end is closed before the bin prints. */
function helpIntoClosedPipe(
  bin: string,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  const root = mkdtempSync(join(tmpdir(), 'dsh-closed-pipe-'))
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(REPO, bin), '--help'], {
      cwd: root,
      env: { PATH: process.env.PATH!, HOME: root, DSH_HOME: join(root, 'home') },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child.stdout.destroy()
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code, signal, stderr }))
  })
}

describe('a bin whose stdout reader went away', () => {
  for (const bin of BINS) {
    it(`${bin.split('/').pop()} --help ends quietly`, async () => {
      const r = await helpIntoClosedPipe(bin)
      expect(r.stderr).toBe('')
      expect(r.signal).toBeNull()
      expect([0, 141]).toContain(r.code)
    }, 60_000)
  }
})
