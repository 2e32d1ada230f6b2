// The agent spine as one row: a user profile made of @dsh/bundle-agent-spine plus only an entry
// point (the ACP server) and the swappable backends (the DeepSeek adapter, JSONL persistence)
// boots through the real `dsh` launcher and serves a full turn with a tool call to the official
// ACP client; the model is @dsh/llm-mock-server. Bad spine config fails the boot loudly.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import * as acp from '@agentclientprotocol/sdk'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { DSH_BIN, runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

vi.setConfig({ testTimeout: 60_000 })

const PROFILE = JSON.stringify({
  name: 'spine-app',
  private: true,
  dsh: { profile: { bundles: ['@dsh/bundle-agent-spine'] } },
})
const APP_LAYER = `- insert:
    - id: llm-deepseek
      name: "@dsh/llm-deepseek"
    - id: session-persistence-jsonl
      name: "@dsh/session-persistence-jsonl"
      config: { compression: none }
    - id: acp
      name: "@dsh/acp"
`

let server: MockServer
let root: string
beforeAll(async () => {
  server = await startMockServer({
    steps: [
      {
        toolCalls: [
          { name: 'todo_write', arguments: { todos: [{ content: 'Wire the spine', status: 'in_progress' }] } },
        ],
      },
      { text: 'Spine answered.' },
    ] as never,
  })
  root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-spine-')))
})
afterAll(async () => {
  await server.close()
})

function home(name: string, layer: string): string {
  const h = join(root, name)
  mkdirSync(join(h, 'profiles', 'spine'), { recursive: true })
  writeFileSync(join(h, 'profiles', 'spine', 'package.json'), PROFILE)
  writeFileSync(join(h, 'profiles', 'spine', 'cordis.patch.yml'), layer)
  return h
}

describe('@dsh/bundle-agent-spine', () => {
  it('is one row, and an app of spine + entry point + backends runs a turn with a tool over ACP', async () => {
    const h = home('ok', APP_LAYER)
    const env = { DSH_HOME: h, HOME: h, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' }
    const dump = await runDsh(['--profile', 'spine', '--dump-config'], { env, cwd: root })
    expect(dump.code).toBe(0)
    expect(dump.stdout.match(/^ {4}- id: /gm)).toHaveLength(4)
    expect(dump.stdout).toMatch(/- id: agent-spine\n/)

    const child = spawn(process.execPath, [DSH_BIN, '--profile', 'spine'], {
      cwd: root,
      env: { PATH: process.env.PATH, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
    const updates: acp.SessionNotification[] = []
    const input = new ReadableStream<Uint8Array>({
      start(c) {
        child.stdout.on('data', (d: Buffer) => c.enqueue(new Uint8Array(d)))
        child.stdout.on('end', () => c.close())
      },
    })
    const conn = acp
      .client({ name: 'spine-test' })
      .onNotification('session/update', ({ params }) => void updates.push(params))
      .connect(acp.ndJsonStream(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>, input))
    try {
      await conn.agent.request('initialize', { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} })
      const { sessionId } = await conn.agent.request('session/new', { cwd: root, mcpServers: [] })
      const done = await conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'go' }] })
      expect(done.stopReason).toBe('end_turn')
    } finally {
      child.stdin.end()
    }
    expect(await exited, stderr).toBe(0)
    conn.close()
    const plan = updates.map((u) => u.update).find((u) => u.sessionUpdate === 'plan')
    expect(plan).toMatchObject({ entries: [{ content: 'Wire the spine', status: 'in_progress' }] })
    const text = updates
      .filter((u) => u.update.sessionUpdate === 'agent_message_chunk')
      .map((u) => (u.update as { content: { text?: string } }).content.text)
      .join('')
    expect(text).toBe('Spine answered.')
    // The tool result went back to the model, and the persistence glue of the spine wrote the log.
    expect(server.requests).toHaveLength(2)
    const sessions = readdirSync(join(h, 'sessions'), { recursive: true }).map(String)
    expect(sessions.some((f) => f.endsWith('session.jsonl'))).toBe(true)
  })

  it('a member id that does not exist in `without` fails the boot naming the row', async () => {
    const h = home('bad', `- id: agent-spine\n  config: { without: [no-such-member] }\n${APP_LAYER}`)
    const run = await runDsh(['--profile', 'spine'], { env: { DSH_HOME: h, HOME: h }, cwd: root })
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/agent-spine.*"no-such-member".*not a member/)
    expect(run.stdout).toBe('')
  })
})
