// Issue #35: long output is spilled through @dsh/spill-files. A command whose output fills the
// disk ends (its timeout fires, the result says the spill failed) instead of hanging the run on
// the spill stream's ENOSPC, and a per-session cap bounds what is spilled at all.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import LocalSubprocessService from '@dsh/subprocess-local'
import BashLocalExecutor, { DEFAULT_SPILL_DIR } from '../src/index.ts'

const scratch = mkdtempSync(join(tmpdir(), 'dsh-bash-spill-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** A real full disk: a 256 KiB tmpfs mounted in a private mount namespace (root: CI and this machine). */
function tmpfsUnavailable(): string | undefined {
  if (process.platform !== 'linux') return 'needs Linux mount namespaces'
  if (process.getuid?.() !== 0) return 'needs root to mount a tmpfs in a private mount namespace'
  const probe = spawnSync(
    'unshare',
    ['-m', '--propagation', 'private', 'sh', '-c', `mount -t tmpfs -o size=64k dsh-probe "$0"`, scratch],
    { encoding: 'utf8' },
  )
  if (probe.error || probe.status !== 0)
    return `unshare -m cannot mount a tmpfs here: ${probe.error?.message ?? probe.stderr.trim()}`
  return undefined
}
const skipReason = tmpfsUnavailable()
if (skipReason) console.warn(`skipping the ENOSPC test: ${skipReason}`)

describe('bash-local spill', () => {
  it.skipIf(skipReason !== undefined)(
    'a command that fills the spill disk ends at its timeout and the result says the spill failed',
    async () => {
      const disk = mkdtempSync(join(scratch, 'disk-'))
      const fixture = join(import.meta.dirname, 'fixtures', 'flood-child.ts')
      const child = spawn(
        'unshare',
        [
          '-m',
          '--propagation',
          'private',
          'sh',
          '-c',
          'mount -t tmpfs -o size=256k dsh-full "$0" && exec "$@"',
          disk,
          process.execPath,
          '--conditions',
          'development',
          '--import',
          'tsx',
          fixture,
          disk,
          'yes',
          '1500',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      )
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (chunk) => (stdout += chunk))
      child.stderr.on('data', (chunk) => (stderr += chunk))
      // Before the fix the run never ended: the spill stream's close was awaited after its ENOSPC.
      const watchdog = setTimeout(() => child.kill('SIGKILL'), 15_000)
      const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
        child.on('close', (c, s) => resolve([c, s])),
      )
      clearTimeout(watchdog)
      expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: '' })
      const result = JSON.parse(stdout)
      expect(result.status).toBe('timeout')
      expect(result.totalBytes).toBeGreaterThan(256 * 1024)
      expect(result.tail).toBe('y\n')
      expect(result.spillPath).toBeNull()
      expect(result.notes).toEqual([
        expect.stringMatching(
          /^the complete output could not be kept: cannot write the spill file .*\/bash-[^/]+\.log: ENOSPC: no space left on device/,
        ),
      ])
    },
  )

  it('stops spilling at the per-session cap, says so, and keeps head and tail', async () => {
    const ctx = new Context()
    await ctx.plugin(LocalSubprocessService, {} as never)
    const spillDir = join(scratch, 'capped')
    await ctx.plugin(BashLocalExecutor, {
      killGraceMs: 200,
      output: { maxBytes: 4096, headBytes: 1024, tailBytes: 1024 },
      spillDir,
      spillMaxBytes: 10_000,
    } as never)
    const run = async (command: string) => {
      const spec = await ctx.shell.resolve({ command, cwd: scratch })
      return { spec, result: await ctx.shell.run(spec) }
    }
    const first = await run('head -c 6000 /dev/zero | tr "\\0" a')
    expect(first.spec.notes).toEqual([])
    expect(statSync(first.result.output.spillPath!).size).toBe(6000)
    const second = await run('head -c 6000 /dev/zero | tr "\\0" b; echo END')
    expect(second.result.status).toBe('exited')
    expect(second.result.output.tail.endsWith('bEND\n')).toBe(true)
    expect(second.result.output.spillPath).toBeUndefined()
    expect(second.spec.notes).toEqual([
      expect.stringMatching(
        new RegExp(
          `^the complete output could not be kept: the spill cap of 10000 bytes for ${spillDir} was reached: ${spillDir}/bash-[^ ]+\\.log holds only the first 4000 bytes of the output$`,
        ),
      ),
    ])
    const files = readdirSync(spillDir).map((name) => readFileSync(join(spillDir, name), 'utf8'))
    const cut = files.find((text) => text.startsWith('b'))!
    expect(cut).toMatch(/^b{4000}\n\[dsh: the spill cap of 10000 bytes for this session was reached/)
    ctx.registry.delete(BashLocalExecutor)
  })

  it('spills by default into a private directory of the process, not the guessable shared path', async () => {
    const ctx = new Context()
    await ctx.plugin(LocalSubprocessService, {} as never)
    await ctx.plugin(BashLocalExecutor, {
      killGraceMs: 200,
      output: { maxBytes: 4096, headBytes: 1024, tailBytes: 1024 },
    } as never)
    const spec = await ctx.shell.resolve({ command: 'head -c 8000 /dev/zero | tr "\\0" c', cwd: scratch })
    const result = await ctx.shell.run(spec)
    const path = result.output.spillPath!
    expect(path.startsWith(DEFAULT_SPILL_DIR)).toBe(false)
    expect(path.startsWith(join(tmpdir(), `dsh-${process.pid}-`))).toBe(true)
    expect(statSync(join(path, '..')).mode & 0o777).toBe(0o700)
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(readFileSync(path, 'utf8')).toBe('c'.repeat(8000))
  })
})
