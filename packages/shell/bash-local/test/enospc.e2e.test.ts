// Issue #35 through the real headless bin: a command whose output fills the disk that holds the
// spill files ends at its timeout with a note saying the complete output could not be kept (before
// the fix the run hung forever: the spill stream's ENOSPC left the exit record waiting). The disk
// is a real 256 KiB tmpfs over $DSH_HOME/shell-output (bash-sandbox's spill dir), mounted in a
// private mount namespace of the dsh process, so this needs root (as on CI) and Linux.
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { DSH_BIN } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-enospc-e2e-')))
let server: MockServer | undefined
afterAll(async () => {
  await server?.close()
  rmSync(root, { recursive: true, force: true })
})

function tmpfsUnavailable(): string | undefined {
  if (process.platform !== 'linux') return 'needs Linux mount namespaces'
  if (process.getuid?.() !== 0) return 'needs root to mount a tmpfs in a private mount namespace'
  const probe = spawnSync(
    'unshare',
    ['-m', '--propagation', 'private', 'sh', '-c', 'mount -t tmpfs -o size=64k dsh-probe "$0"', root],
    { encoding: 'utf8' },
  )
  if (probe.error || probe.status !== 0)
    return `unshare -m cannot mount a tmpfs here: ${probe.error?.message ?? probe.stderr.trim()}`
  return undefined
}
const skipReason = tmpfsUnavailable()
if (skipReason) console.warn(`skipping the ENOSPC e2e test: ${skipReason}`)

it.skipIf(skipReason !== undefined)(
  'output that fills the spill disk ends at the bash timeout and says the spill failed',
  { timeout: 120_000 },
  async () => {
    const cwd = join(root, 'work')
    const home = join(root, 'home')
    const spill = join(home, 'shell-output')
    mkdirSync(cwd)
    mkdirSync(spill, { recursive: true })
    server = await startMockServer({
      steps: [
        {
          toolCalls: [
            { id: 'c1', name: 'bash', arguments: { command: 'yes', description: 'endless output', timeoutMs: 2000 } },
          ],
        },
        { expect: { lastRole: 'tool' }, text: 'done' },
      ] as never,
    })
    const child = spawn(
      'unshare',
      [
        '-m',
        '--propagation',
        'private',
        'sh',
        '-c',
        'mount -t tmpfs -o size=256k dsh-full "$0" && exec "$@"',
        spill,
        process.execPath,
        DSH_BIN,
        '--profile',
        'headless',
        'flood',
      ],
      {
        cwd,
        env: {
          PATH: process.env.PATH,
          HOME: root,
          DSH_HOME: home,
          DEEPSEEK_BASE_URL: server.baseURL,
          DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    // A hung run (the old behaviour) is ended here and fails the expectations below.
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.on('close', (c, s) => resolve([c, s])),
    )
    clearTimeout(timer)
    expect({ code, signal, stdout }, stderr).toEqual({ code: 0, signal: null, stdout: 'done\n' })
    const messages = (server.requests[1].body as { messages: Array<{ role: string; content: string }> }).messages
    const result = messages.at(-1)!.content
    expect(result).toMatch(
      /\[timed out after 2000 ms; the command and its child processes were stopped with SIG(TERM|KILL)\]/,
    )
    expect(result).toMatch(
      /\[note: the complete output could not be kept: cannot write the spill file .*\/shell-output\/[^/]+\/bash-[^/]+\.log: ENOSPC: no space left on device/,
    )
    expect(result).toContain('y\ny\ny\n')
  },
)
