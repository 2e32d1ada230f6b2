// The tokens of the model title request in `dsh sessions show`: a real `dsh-jsonrpc-agent` with the
// `@dsh/session-title-llm` row on a second route (its own mock model, so the title request and the
// turn never race for one script), then the real `dsh sessions show` on the same home.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

vi.setConfig({ testTimeout: 90_000, hookTimeout: 180_000 })

const pkg = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url))
const AGENT = pkg('sdk/server/bin/dsh-jsonrpc-agent.mjs')
// Wire counts (prompt includes cache hits; completion includes reasoning).
const turnUsage = { prompt: 900, completion: 50, cacheHit: 600, reasoning: 10 }
const titleUsage = { prompt: 120, completion: 9, cacheHit: 0, reasoning: 0 }

let turnModel: MockServer
let titleModel: MockServer
let root: string
let home: string
let cwd: string
let sessionId: string
const env = () => ({
  DSH_HOME: home,
  HOME: home,
  DEEPSEEK_BASE_URL: turnModel.baseURL,
  DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
})

/** Newline-delimited JSON-RPC to the agent's stdio; `call` resolves with the result or rejects with the error. */
function rpc(child: ChildProcessWithoutNullStreams) {
  let next = 1
  const waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>()
  createInterface({ input: child.stdout }).on('line', (line) => {
    const message = JSON.parse(line)
    const entry = waiting.get(message.id)
    if (!entry) return
    waiting.delete(message.id)
    if (message.error) entry.reject(new Error(JSON.stringify(message.error)))
    else entry.resolve(message.result)
  })
  return (method: string, params: unknown): Promise<any> =>
    new Promise((resolve, reject) => {
      const id = next++
      waiting.set(id, { resolve, reject })
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n')
    })
}

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-title-usage-')))
  home = join(root, 'home')
  cwd = join(root, 'work')
  mkdirSync(cwd, { recursive: true })
  turnModel = await startMockServer({ steps: [{ text: 'Answered.', usage: turnUsage }] as never })
  titleModel = await startMockServer({
    models: ['title-m'],
    steps: [{ text: 'Tidy the build scripts', usage: titleUsage }],
  } as never)
  const patch = join(root, 'title.patch.yml')
  writeFileSync(
    patch,
    [
      '- insert:',
      '    - id: title-route',
      `      name: ${JSON.stringify(pkg('llm/llm-deepseek/dist/index.js'))}`,
      '      config:',
      '        provider: titles',
      `        baseURL: ${JSON.stringify(titleModel.baseURL)}`,
      '        models: [{ id: title-m, contextWindow: 8000 }]',
      '    - id: session-title-llm',
      `      name: ${JSON.stringify(pkg('session/session-title-llm/dist/index.js'))}`,
      '      config: { provider: titles, model: title-m }',
    ].join('\n') + '\n',
  )
  const child = spawn(process.execPath, [AGENT, '--patch', patch], { cwd, env: { PATH: process.env.PATH, ...env() } })
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  try {
    const call = rpc(child)
    await call('initialize', { protocolVersion: 1, clientInfo: { name: 'title-usage-test' } })
    sessionId = (await call('session/create', { cwd })).sessionId
    await call('session/prompt', { sessionId, prompt: 'please tidy up the build scripts' })
    // The turn and the title request both end; the title request never holds the turn up.
    await vi.waitFor(
      async () => {
        const types = (await call('session/history', { sessionId, fromSeq: 0 })).events.map(
          (e: { type: string }) => e.type,
        )
        expect(types).toContain('turn/end')
        expect(types).toContain('title/usage')
      },
      { timeout: 60_000, interval: 100 },
    )
    await call('shutdown', {})
    child.stdin.end()
    await new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)))
  } catch (error) {
    child.kill('SIGKILL')
    throw new Error(`${(error as Error).message}\nagent stderr:\n${stderr}`)
  }
})

afterAll(async () => {
  await turnModel?.close()
  await titleModel?.close()
  rmSync(root, { recursive: true, force: true })
})

describe('dsh sessions show: title request tokens', () => {
  it('are in the JSON apart from the turns, and in the session totals', async () => {
    const run = await runDsh(['sessions', 'show', sessionId, '--output-format', 'json'], { cwd, env: env() })
    expect(run.code, run.stderr).toBe(0)
    const row = JSON.parse(run.stdout)
    expect(row).toMatchObject({ title: 'Tidy the build scripts', titleSource: 'llm' })
    // The DeepSeek adapter reports input without cache hits, and output and reasoning disjointly.
    const tokens = (u: typeof turnUsage) => ({
      input: u.prompt - u.cacheHit,
      output: u.completion - u.reasoning,
      cacheRead: u.cacheHit,
      cacheWrite: 0,
      reasoning: u.reasoning,
    })
    const turn = tokens(turnUsage)
    const title = tokens(titleUsage)
    expect(row.stats.titleCalls).toEqual({ calls: 1, usageReported: 1, tokens: title, unpricedCalls: 1 })
    expect(row.stats.perTurn).toHaveLength(1)
    expect(row.stats.perTurn[0]).toMatchObject({ modelCalls: 1, tokens: turn })
    expect(row.stats).toMatchObject({
      turns: 1,
      modelCalls: 2,
      tokens: Object.fromEntries(Object.entries(turn).map(([k, v]) => [k, v + title[k as keyof typeof title]])),
    })
    // The title model saw only the prompt; the turn's model never saw a title request.
    expect(JSON.stringify(titleModel.requests[0].body)).toContain('please tidy up the build scripts')
    expect(turnModel.requests).toHaveLength(1)
  })

  it('are a line of the text block', async () => {
    const run = await runDsh(['sessions', 'show', sessionId], { cwd, env: env() })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain('title     Tidy the build scripts (llm)')
    expect(run.stdout).toMatch(/^titling {3}1 model call \(not turns; in the totals above\) {3}input 120 {3}output 9 /m)
    expect(run.stdout).toContain(`tokens    input ${300 + 120}   output ${40 + 9}`)
  })
})
