// The exit status of the real `dsh-jsonrpc-agent` bin, which ends through the surface kit's
// `appExit`/`ExitCode` like the other faces: `ok` (0) for a shutdown request and for the end of
// stdin, `failed` (1) when its protocol input cannot be read (said in one line on stderr) or a row
// of its composition fails at boot, `usage` (2) for a command-line mistake.
import { spawn } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, vi } from 'vitest'
import { ExitCode } from '@dsh/surface-kit'

vi.setConfig({ testTimeout: 60_000 })

const bin = fileURLToPath(new URL('../bin/dsh-jsonrpc-agent.mjs', import.meta.url))

interface Run {
  code: number | null
  out: string
  err: string
}

/**
 * Runs the bin. `stdin` is a file descriptor to hand it, or `frames`: the lines it writes once the
 * server answered `initialize` (then, with `end`, closes stdin).
 */
function run(opts: { args?: string[]; stdin?: number; frames?: string[]; end?: boolean } = {}): Promise<Run> {
  const root = mkdtempSync(join(tmpdir(), 'dsh-sdk-exit-'))
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...(opts.args ?? [])], {
      cwd: root,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DSH_HOME: join(root, 'home'), DEEPSEEK_API_KEY: 'sk-x' },
      stdio: [opts.stdin ?? 'pipe', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    let sent = false
    child.stdout?.on('data', (d) => {
      out += d
      // The answer to initialize: the server is serving; now the frames of the case.
      if (!sent && out.includes('"id":1')) {
        sent = true
        for (const frame of opts.frames ?? []) child.stdin?.write(`${frame}\n`)
        if (opts.end) child.stdin?.end()
      }
    })
    child.stderr?.on('data', (d) => (err += d))
    child.on('close', (code) => resolve({ code, out, err }))
    child.stdin?.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1 } })}\n`,
    )
  })
}

describe('dsh-jsonrpc-agent exit status', () => {
  it('ok after a shutdown request, answered first', async () => {
    const done = await run({ frames: [JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'shutdown' })] })
    expect(done.code).toBe(ExitCode.ok)
    expect(done.out).toContain('"id":2,"result":{}')
  })

  it('ok when the client closes stdin', async () => {
    expect((await run({ end: true })).code).toBe(ExitCode.ok)
  })

  it('failed, in one line, when the protocol input cannot be read', async () => {
    // A file open for writing only as stdin: every read fails (EBADF). Not a client that went away.
    const dir = mkdtempSync(join(tmpdir(), 'dsh-sdk-exit-dir-'))
    const fd = openSync(join(dir, 'write-only'), 'a')
    try {
      const broken = await run({ stdin: fd })
      expect(broken.code).toBe(ExitCode.failed)
      expect(broken.err.trim().split('\n')).toContainEqual(
        expect.stringMatching(/^dsh-jsonrpc-agent: cannot read the protocol input: EBADF/),
      )
    } finally {
      closeSync(fd)
    }
  })

  it('failed when a row of the composition fails at boot; usage for a bad option', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-sdk-exit-row-'))
    writeFileSync(
      join(dir, 'boom.mjs'),
      "export const name = 'boom'\nexport function apply() { throw new Error('boom at apply') }\n",
    )
    writeFileSync(join(dir, 'boom.patch.yml'), '- insert:\n    - id: boom\n      name: ./boom.mjs\n')
    const failed = await run({ args: ['--patch', join(dir, 'boom.patch.yml')], stdin: 0 })
    expect(failed.code).toBe(ExitCode.failed)
    expect(failed.err).toContain('boom at apply')
    expect((await run({ args: ['--frob'] })).code).toBe(ExitCode.usage)
  })
})
