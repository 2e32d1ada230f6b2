// End-to-end (issue 14, items 12 and 14): the real `dsh --profile headless` bin, the DeepSeek
// adapter talking to @dsh/llm-mock-server over 127.0.0.1, the real JSONL session files under a
// temp DSH_HOME, and a throwing plugin loaded from a --patch layer.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

let server: MockServer | undefined
const roots: string[] = []
afterEach(async () => {
  await server?.close()
  server = undefined
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

function world() {
  const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-trust-'))
  roots.push(root)
  const home = join(root, 'home')
  const cwd = join(root, 'work')
  mkdirSync(cwd, { recursive: true })
  // Plain JSONL session files (instead of zstd frames) so the test can read them directly.
  const plain = join(root, 'plain.patch.yml')
  writeFileSync(plain, '- id: session-persistence-jsonl\n  config:\n    compression: none\n')
  return { root, home, cwd, plain }
}

/** Every file under `dir` (recursively). */
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : [path]
  })
}

/** The stored events of a session, read from its JSONL file(s) under $DSH_HOME/sessions. */
function storedEvents(home: string, sessionId: string): Array<{ type: string; seq: number; data: any }> {
  const logs = files(join(home, 'sessions')).filter((f) => f.includes(sessionId) && f.endsWith('.jsonl'))
  expect(logs.length).toBeGreaterThan(0)
  const events = logs
    .flatMap((f) => readFileSync(f, 'utf8').split('\n').filter(Boolean))
    .map((line) => JSON.parse(line))
    .flatMap((record) =>
      Array.isArray(record?.events) ? record.events : record?.type && typeof record.seq === 'number' ? [record] : [],
    )
  return events.sort((a: { seq: number }, b: { seq: number }) => a.seq - b.seq)
}

const lastResult = (stdout: string) => JSON.parse(stdout.trim().split('\n').at(-1)!)

describe('item 12: an oversized tool-call argument does not make the session unresumable', () => {
  it('replays a 10 MB argument as a bounded excerpt plus a marker, in the same turn and after --resume; the file keeps it whole', {
    timeout: 120_000,
  }, async () => {
    const { home, cwd, plain } = world()
    const huge = 'z'.repeat(10 * 1024 * 1024)
    server = await startMockServer({
      steps: [
        { toolCalls: [{ id: 'c_huge', name: 'bulk_upload', arguments: { payload: huge } }] },
        { text: 'that tool does not exist' },
        { text: 'resumed fine' },
      ],
    })
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' }
    const first = await runDsh(['--profile', 'headless', '--patch', plain, '--output-format', 'json', 'upload it'], {
      cwd,
      env,
    })
    expect(first.stderr).toBe('')
    expect(first.code).toBe(0)
    const { sessionId } = lastResult(first.stdout)

    const second = await runDsh(
      ['--profile', 'headless', '--patch', plain, '--output-format', 'json', '--resume', sessionId, 'and now?'],
      { cwd, env },
    )
    expect(second.stderr).toBe('')
    expect(second.code).toBe(0)
    expect(lastResult(second.stdout)).toMatchObject({ result: 'resumed fine', reason: 'completed' })

    expect(server.requests).toHaveLength(3)
    // Requests 2 (same turn) and 3 (after resume) replay the call bounded: far under the 10 MB.
    for (const request of server.requests.slice(1)) {
      const body = JSON.stringify(request.body)
      expect(body.length).toBeLessThan(200_000)
      const messages = (
        request.body as {
          messages: Array<{ role: string; tool_calls?: Array<{ id: string; function: { arguments: string } }> }>
        }
      ).messages
      const call = messages.flatMap((m) => m.tool_calls ?? []).find((c) => c.id === 'c_huge')!
      const replayed = JSON.parse(call.function.arguments)
      expect(replayed.dsh_arguments_omitted).toMatch(
        /^These arguments were 10,485,77\d characters long, over the 100,000-character replay limit/,
      )
      expect(replayed.excerpt).toBe(`{"payload":"${'z'.repeat(1000 - 12)}`)
    }
    // The session file still holds the full argument.
    const message = storedEvents(home, sessionId).find((e) => e.type === 'assistant/message')!
    expect(message.data.message.content[0].arguments.length).toBe(huge.length + 14)
  })
})

describe('item 14: plugin failures end the turn as plugin errors, never as provider errors', () => {
  it('a session listener throwing on assistant/chunk: one model request, PLUGIN_ERROR naming the plugin, the step closed', {
    timeout: 60_000,
  }, async () => {
    const { root, home, cwd, plain } = world()
    writeFileSync(
      join(root, 'chunk-bomb.mjs'),
      `export const name = 'chunk-bomb'
export function apply(ctx) {
  ctx.on('session/event', (_session, event) => {
    if (event.type === 'assistant/chunk') throw new Error('chunk-bomb exploded')
  })
}
`,
    )
    const patch = join(root, 'bomb.patch.yml')
    writeFileSync(patch, '- insert:\n  - id: chunk-bomb\n    name: ./chunk-bomb.mjs\n')
    // A second step would answer a retry; it must never be requested.
    server = await startMockServer({ steps: [{ text: 'the first answer' }, { text: 'a paid retry' }] })
    const run = await runDsh(
      ['--profile', 'headless', '--patch', plain, '--patch', patch, '--output-format', 'json', 'hello'],
      {
        cwd,
        env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' },
      },
    )
    expect(server.requests).toHaveLength(1)
    expect(run.code).toBe(1)
    const result = lastResult(run.stdout)
    expect(result).toMatchObject({ reason: 'error' })
    expect(run.stderr).toContain('PLUGIN_ERROR')
    expect(run.stderr).toContain('plugin "chunk-bomb" failed')
    expect(run.stderr).not.toContain('TRANSPORT')

    const events = storedEvents(home, result.sessionId)
    const types = events.map((e) => e.type)
    // The step that received the chunk is closed right after it; no retry step follows.
    const chunkAt = types.indexOf('assistant/chunk')
    expect(chunkAt).toBeGreaterThan(0)
    expect(types.slice(chunkAt)).toEqual(['assistant/chunk', 'step/end', 'turn/end'])
    expect(events.filter((e) => e.type === 'step/start')).toHaveLength(1)
    expect(events.at(-2)!.data).toMatchObject({ finish: 'error' })
    expect(events.at(-1)!.data).toMatchObject({ reason: 'error', error: { code: 'PLUGIN_ERROR' } })
    expect(events.at(-1)!.data.error.message).toMatch(
      /^plugin "chunk-bomb" failed in session\/event listener on "assistant\/chunk": chunk-bomb exploded/,
    )
  })
})
