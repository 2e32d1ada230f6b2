// End-to-end: the envd stream of a long command drops mid-command (the stand-in cuts its connection
// after the first output, the process still running remotely), through `dsh -p --world e2b` with
// the mock model. The tool result says so in one sentence instead of hanging, the sandbox is not
// taken for lost, and the next command runs in the same sandbox.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'

let standin: E2bStandin
let server: MockServer
beforeAll(async () => {
  standin = await startE2bStandin()
  server = await startMockServer({
    steps: [
      {
        toolCalls: [
          { name: 'bash', arguments: { command: 'echo first; sleep 600; echo long-marker', description: 'long' } },
        ],
      },
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo next works', description: 'next' } }] },
      { text: 'Done.' },
    ] as never,
  })
})
afterAll(async () => {
  await server?.close()
  await standin?.close()
})

const toolResult = (i: number) =>
  (server.requests[i].body as { messages: { role: string; content: string }[] }).messages
    .filter((m) => m.role === 'tool')
    .at(-1)?.content ?? ''

describe('a dropped envd stream', () => {
  it('ends the command with one sentence, and the next command runs in the same sandbox', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-e2b-drop-'))
    writeFileSync(join(cwd, '.gitignore'), 'home/\n')
    const drop = standin.dropStream('long-marker')
    const mark = standin.requests.length
    const run = await runDsh(['-p', '--world', 'e2b', 'run the long thing'], {
      cwd,
      env: {
        DSH_HOME: join(cwd, 'home'),
        DEEPSEEK_BASE_URL: server.baseURL,
        DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
        ...standin.env,
      },
      timeoutMs: 60_000,
    })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain('Done.')
    const dropped = await drop.dropped
    const id = dropped.sandboxId
    // The output up to the drop, then one sentence saying what happened (not "could not start").
    expect(toolResult(1)).toMatch(
      new RegExp(
        `^first\\n\\[lost after it started: the connection to the E2B sandbox ${id} dropped while the command ran \\([^)]*\\), so its exit status is unknown; the output above is what arrived before the drop, the command was stopped there, and the next command reconnects\\]$`,
      ),
    )
    expect(toolResult(2)).toContain('next works')
    const mine = standin.requests.slice(mark)
    // The same sandbox: a dropped stream is not a lost sandbox, so nothing was recreated.
    const created = mine.filter((r) => r.method === 'POST' && r.path === '/sandboxes').map((r) => r.sandboxId)
    expect(created).toEqual([id])
    // The orphaned remote command was stopped through envd (SendSignal) after the drop.
    const dropIndex = mine.indexOf(dropped)
    expect(mine.slice(dropIndex + 1).some((r) => r.sandboxId === id && r.path === '/process.Process/SendSignal')).toBe(
      true,
    )
  }, 90_000)
})
