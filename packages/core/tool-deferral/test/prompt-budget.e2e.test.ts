// The fixed prompt of each shipped front end (headless, tui, web) stays under the 3,000-token goal
// of issue 42 while every tool stays reachable. Each profile is the real bin against
// @dsh/llm-mock-server; its first request is what the model reads before the first user message
// (system prompt + tool schemas), counted as bench/prompt.mjs counts it (characters / 4, the
// @dsh/token-meter estimate). In the same turn the scripted model loads a deferred tool and calls
// it: the loaded tool's schema is in the next request and the call runs.
import { mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { killServer, TuiSession } from '@dsh/cli-testkit/tui'
import { type MockServer, type RecordedRequest, startMockServer } from '@dsh/llm-mock-server'
import { useWebApp, waitForSessionEvent } from '@dsh/web-testkit'

const GOAL_TOKENS = 3000

interface WireBody {
  messages: Array<{ role: string; content: unknown; tool_call_id?: string }>
  tools?: Array<{ function: { name: string; description: string } }>
}
const body = (r: RecordedRequest) => r.body as WireBody
const chats = (requests: RecordedRequest[]) =>
  requests.filter((r) => Array.isArray((r.body as WireBody | undefined)?.messages))
const toolNames = (r: RecordedRequest) => (body(r).tools ?? []).map((t) => t.function.name)
const catalogue = (r: RecordedRequest) =>
  (body(r).tools ?? [])
    .find((t) => t.function.name === 'load_tools')
    ?.function.description.split('\n')
    .flatMap((line) => /^- ([A-Za-z0-9_-]+): /.exec(line)?.[1] ?? []) ?? []
const toolMessage = (r: RecordedRequest, callId: string) =>
  String(body(r).messages.find((m) => m.role === 'tool' && m.tool_call_id === callId)?.content ?? '')

/** Tokens of the fixed prompt: the system message(s) plus the tool schemas as sent, characters / 4. */
function fixedTokens(request: RecordedRequest): number {
  const system = body(request)
    .messages.filter((m) => m.role === 'system')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n')
  return Math.ceil(system.length / 4) + Math.ceil(JSON.stringify(body(request).tools ?? []).length / 4)
}

/** One turn: load job_list, call it, answer. */
const STEPS = [
  { toolCalls: [{ id: 'c_load', name: 'load_tools', arguments: { names: ['job_list'] } }] },
  { toolCalls: [{ id: 'c_jobs', name: 'job_list', arguments: {} }] },
  { text: 'all done' },
]

const root = mkdtempSync(join(tmpdir(), 'dsh-prompt-budget-'))
const runs: Record<string, RecordedRequest[]> = {}
const cleanup: Array<() => Promise<unknown> | unknown> = []

async function headless(): Promise<RecordedRequest[]> {
  const server: MockServer = await startMockServer({ steps: STEPS as never })
  cleanup.push(() => server.close())
  const cwd = join(root, 'headless', 'work')
  mkdirSync(cwd, { recursive: true })
  const run = await runDsh(['--profile', 'headless', 'go'], {
    cwd,
    env: { DSH_HOME: join(root, 'headless', 'home'), DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'sk-test' },
  })
  expect(run.stderr).toBe('')
  expect(run.code).toBe(0)
  return chats(server.requests)
}

async function tui(): Promise<RecordedRequest[]> {
  const session = await TuiSession.start({ steps: STEPS })
  cleanup.push(async () => {
    await session.close()
    killServer()
  })
  await session.waitFor(/deepseek-v4-flash/, 30_000)
  session.type('go')
  session.keys('Enter')
  await session.waitFor(/all done/, 30_000)
  return chats(session.server.requests)
}

// The worker's shared dsh web (default configuration), with this file's script and folder.
const host = useWebApp({ steps: STEPS as never })

async function web(): Promise<RecordedRequest[]> {
  const app = host
  const { session } = await app.call('sessions.create', { cwd: app.cwd })
  await app.call('sessions.prompt', { sessionId: session.sessionId, text: 'go' })
  await waitForSessionEvent(app, session.sessionId, 'turn/end')
  return chats(app.mock.requests)
}

beforeAll(async () => {
  runs.headless = await headless()
  runs.tui = await tui()
  runs.web = await web()
}, 120_000)

afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn()
})

describe.each(['headless', 'tui', 'web'])('the %s profile', (profile) => {
  it(`sends a fixed prompt under ${GOAL_TOKENS} tokens, with the rarely used tools listed in load_tools`, () => {
    const first = runs[profile][0]
    expect(fixedTokens(first)).toBeLessThanOrEqual(GOAL_TOKENS)
    for (const core of ['bash', 'read', 'write', 'edit', 'glob', 'grep', 'load_tools'])
      expect(toolNames(first)).toContain(core)
    expect(catalogue(first)).toEqual(expect.arrayContaining(['job_list', 'subagent', 'web_fetch', 'todo_write']))
  })

  it('a deferred tool is loaded and called in the same turn', () => {
    const requests = runs[profile]
    expect(requests).toHaveLength(3)
    expect(toolNames(requests[0])).not.toContain('job_list')
    expect(toolMessage(requests[1], 'c_load')).toContain('Loaded job_list')
    expect(toolNames(requests[1])).toContain('job_list')
    const result = toolMessage(requests[2], 'c_jobs')
    expect(result).not.toContain('Error [')
    expect(result).toContain('No background jobs in this session.')
  })
})
