// `dsh-jsonrpc-agent` in the e2b world through `--world e2b` (the world-e2b layer, as for `dsh --world e2b`),
// driven by the SDK client (`Harness` of @dsh/sdk-client), with E2B played by @dsh/e2b-standin and
// the model by @dsh/llm-mock-server: the session's edit and bash run in the sandbox, the turn's
// change is offered through the SDK's approval path and applied when the client allows it, and at
// shutdown the sandbox is killed.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'
import { Harness } from '@dsh/sdk-client'

vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 })

const BIN = fileURLToPath(new URL('../node_modules/@dsh/sdk-server/bin/dsh-jsonrpc-agent.mjs', import.meta.url))

let standin: E2bStandin
let server: MockServer
beforeAll(async () => {
  standin = await startE2bStandin()
  server = await startMockServer({
    steps: [
      { toolCalls: [{ name: 'read', arguments: { file_path: 'notes.txt' } }] },
      {
        toolCalls: [{ name: 'edit', arguments: { file_path: 'notes.txt', old_string: 'beta', new_string: 'gamma' } }],
      },
      { toolCalls: [{ name: 'bash', arguments: { command: 'cat notes.txt', description: 'check' } }] },
      { text: 'Edited in the sandbox.' },
    ] as never,
  })
})
afterAll(async () => {
  await server?.close()
  await standin?.close()
})

describe('dsh-jsonrpc-agent --world e2b', () => {
  it('runs the session in a sandbox, applies its change when the client allows it, and kills it at shutdown', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-e2b-sdk-'))
    writeFileSync(join(cwd, 'notes.txt'), 'alpha\nbeta\n')
    writeFileSync(join(cwd, '.gitignore'), 'home/\n')
    const before = new Set(standin.sandboxes().map((x) => x.record.id))
    const asked: string[] = []
    const harness = await Harness.start({
      bin: BIN,
      // The SDK's approval path: the turn's change is offered, and this client allows it.
      onApproval: (request) => {
        asked.push(`${request.request.kind}: ${request.request.title}`)
        expect(request.request.labels).toEqual({
          'allowed-once': `Apply it to ${cwd}`,
          rejected: 'Keep the patch file only',
        })
        return 'allowed-once'
      },
      args: ['--world', 'e2b'],
      cwd,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DSH_HOME: join(cwd, 'home'),
        DEEPSEEK_BASE_URL: server.baseURL,
        DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
        ...standin.env,
      },
    })
    try {
      const session = await harness.createSession()
      const result = await session.prompt('replace beta with gamma')
      expect(result).toMatchObject({ reason: 'completed', text: 'Edited in the sandbox.' })
      const bash = (server.requests[3].body as { messages: { role: string; content: string }[] }).messages
        .filter((m) => m.role === 'tool')
        .at(-1)?.content
      expect(bash).toContain('alpha\ngamma')
      const mine = standin.sandboxes().filter((x) => !before.has(x.record.id))
      expect(mine).toHaveLength(1)
      const id = mine[0].record.id
      expect(readFileSync(join(standin.rootOf(id), cwd, 'notes.txt'), 'utf8')).toBe('alpha\ngamma\n')
      // Asked once, before the prompt's answer; allowed, so the local file has the change.
      expect(asked).toEqual([expect.stringMatching(/^e2b-apply: Apply the E2B sandbox's change to \S+ \(notes\.txt\)/)])
      expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('alpha\ngamma\n')
      await harness.close()
      expect(standin.get(id)).toBeUndefined()
      // The applied change is not saved again at the end (it was settled).
      expect(existsSync(join(cwd, 'home', 'e2b-patches', `${id}.patch`))).toBe(false)
    } finally {
      await harness.close()
    }
  })
})

describe('dsh-jsonrpc-agent --world: help and bad names', () => {
  const run = (args: string[]) =>
    promisify(execFile)(process.execPath, [BIN, ...args], { env: { ...process.env, DSH_HOME: '/nonexistent' } }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    )
  it('lists --world in --help', async () => {
    const r = await run(['--help'])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/--world NAME +where commands and files live: local \| e2b/)
  })
  it('refuses an unknown world in one line, exit 2, and a missing name', async () => {
    const bad = await run(['--world', 'mars'])
    expect(bad.code).toBe(2)
    expect(bad.stderr.split('\n')[0]).toBe(
      'dsh-jsonrpc-agent: --world: unknown world "mars" (known: local, e2b)' + ' (see --help)',
    )
    const bare = await run(['--world'])
    expect(bare.code).toBe(2)
    expect(bare.stderr).toContain('--world needs a world name (local, e2b)')
  })
})
