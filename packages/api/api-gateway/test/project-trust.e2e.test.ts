// End-to-end through the browser wire of the real `dsh web`: an untrusted project's `.mcp.json`
// server waits for the human. The first prompt of a session streams a `question` frame listing the
// exact command; answering "Trust and run" over `questions.respond` starts it before the model
// request (its marker file appears) and records the consent under $DSH_HOME.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { DSH_BIN } from '@dsh/cli-testkit'
import { startMockServer } from '@dsh/llm-mock-server'
import { SseReader, turnEnds } from './sse-reader.ts'

vi.setConfig({ testTimeout: 120_000 })

const cleanup: Array<() => unknown> = []
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!()
})

function startWeb(env: Record<string, string>, cwd: string): Promise<string> {
  const child = spawn(process.execPath, [DSH_BIN, 'web', '--no-open', '--port', '0'], {
    cwd,
    env: { PATH: process.env.PATH!, HOME: env.DSH_HOME!, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  cleanup.push(() => child.kill('SIGKILL'))
  let stdout = ''
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  return new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d
      if (stdout.includes('\n')) resolve(stdout.split('\n')[0]!.replace(/\/$/, ''))
    })
    child.on('close', () => reject(new Error(`dsh web exited before printing a URL; stderr: ${stderr}`)))
  })
}

async function call(url: string, method: string, params: unknown): Promise<any> {
  const res = await fetch(`${url}/api/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url },
    body: JSON.stringify(params),
    signal: AbortSignal.timeout(30_000),
  })
  const body = (await res.json()) as any
  if (res.status !== 200) throw new Error(`${method}: ${res.status} ${JSON.stringify(body)}`)
  return body.result
}

describe('project trust through the web wire', () => {
  it('asks once with the exact command; the answer starts the server and is recorded', async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-web-trust-')))
    cleanup.push(() => rmSync(root, { recursive: true, force: true }))
    const cwd = join(root, 'project')
    const home = join(root, 'home')
    mkdirSync(cwd)
    const marker = join(root, 'mcp-ran')
    writeFileSync(
      join(cwd, '.mcp.json'),
      JSON.stringify({ mcpServers: { pwn: { command: 'sh', args: ['-c', `echo ran >> ${marker}`] } } }),
    )
    const mock = await startMockServer({ steps: [{ text: 'answered' }] as never })
    cleanup.push(() => mock.close())
    const url = await startWeb(
      { DSH_HOME: home, DEEPSEEK_BASE_URL: mock.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' },
      cwd,
    )
    const { session } = await call(url, 'sessions.create', { cwd })
    const stream = new SseReader(`${url}/api/events/session/${session.sessionId}`, {}, (r) =>
      cleanup.push(() => r.close()),
    )
    await stream.until((f) => f.some((x) => x.event === 'status'))
    await call(url, 'sessions.prompt', { sessionId: session.sessionId, text: 'hello' })
    await stream.until((f) => f.some((x) => x.event === 'question'))
    const question = stream.frames.find((x) => x.event === 'question')!.data
    expect(question.questions[0].question).toContain(`pwn (.mcp.json): sh -c 'echo ran >> ${marker}'`)
    expect(question.questions[0].options.map((o: { label: string }) => o.label)).toEqual(['Trust and run', 'Not now'])
    expect(existsSync(marker)).toBe(false)
    expect(mock.requests).toHaveLength(0)
    await call(url, 'questions.respond', {
      requestId: question.requestId,
      answers: { trust: { selected: ['Trust and run'] } },
    })
    await stream.until((f) => turnEnds(f) === 1)
    // The command is no MCP server: it exits at once, and mcp-client's retry policy may start it
    // again before the turn ends (under load it did). What matters: nothing before the answer.
    expect(readFileSync(marker, 'utf8')).toMatch(/^(ran\n)+$/)
    expect(readFileSync(join(home, 'trusted-projects.json'), 'utf8')).toContain(cwd)
  })
})
