// `dsh mcp serve` beyond tools, through the real `dsh` launcher with the official SDK client as the
// peer: direct calls land in a dsh session (listed by `dsh sessions`, continued by `dsh --resume`),
// `notifications/tools/list_changed` follows an MCP server of dsh's own client row (the SDK fixture
// server of @dsh/mcp-client) adding a tool, the session transcripts are resources and the skills
// prompts. One server, booted once, shared by the tests in order.
import { EventEmitter, once } from 'node:events'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import {
  McpError,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js'
import { DSH_BIN, runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

const changing = fileURLToPath(new URL('../../mcp-client/test/fixtures/changing-server.mjs', import.meta.url))

const root = mkdtempSync(join(tmpdir(), 'dsh-mcp-serve-session-'))
const home = join(root, 'home')
const cwd = join(root, 'project')
mkdirSync(cwd, { recursive: true })
mkdirSync(join(home, 'skills', 'haiku'), { recursive: true })
writeFileSync(join(cwd, 'notes.txt'), 'the password is swordfish\n')
writeFileSync(
  join(home, 'settings.yaml'),
  `mcpServers:\n  changing:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(changing)}]\n`,
)
writeFileSync(
  join(home, 'skills', 'haiku', 'SKILL.md'),
  '---\nname: haiku\ndescription: Answer in a haiku.\n---\nAnswer in exactly one haiku of three lines.\n',
)

const text = (r: unknown) =>
  ((r as CallToolResult).content ?? []).map((b) => (b.type === 'text' ? b.text : '')).join('')
const sessionOf = (r: unknown) => ((r as CallToolResult)._meta as Record<string, string> | undefined)?.['dsh/sessionId']

let model: MockServer
let client: Client
let transport: StdioClientTransport
const changes = new EventEmitter()
let listChanged = 0
let resourcesChanged = 0
let sessionId = ''

/** The tool names, once `name` is among them: listed again at each list_changed notification. */
async function toolsOnceListed(name: string): Promise<string[]> {
  for (;;) {
    const seen = listChanged
    const names = (await client.listTools()).tools.map((t) => t.name)
    if (names.includes(name)) return names
    if (listChanged === seen) await once(changes, 'changed')
  }
}

beforeAll(async () => {
  model = await startMockServer({
    steps: [{ expect: { lastContains: 'What did the notes say' }, text: 'They named a fish.' }] as never,
  })
  transport = new StdioClientTransport({
    command: process.execPath,
    args: [DSH_BIN, 'mcp', 'serve', '--no-agent-tool'],
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? root, DSH_HOME: home },
    stderr: 'ignore',
  })
  client = new Client({ name: 'session-test-client', version: '2.5.0' })
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    listChanged++
    changes.emit('changed')
  })
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
    resourcesChanged++
    changes.emit('resources')
  })
  await client.connect(transport)
}, 60_000)

afterAll(async () => {
  await client?.close()
  await model?.close()
})

describe('dsh mcp serve: sessions, list changes, resources, prompts', () => {
  it('logs direct calls in one session of this connection', async () => {
    const read = await client.callTool({ name: 'read', arguments: { file_path: 'notes.txt' } })
    expect(text(read)).toContain('swordfish')
    sessionId = sessionOf(read) ?? ''
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/)
    const bash = await client.callTool({ name: 'bash', arguments: { command: 'echo second', description: 'print' } })
    expect(text(bash)).toContain('second')
    expect(sessionOf(bash)).toBe(sessionId)
    // The new session finished its first turn: a new resource, announced.
    if (resourcesChanged === 0) await once(changes, 'resources')
    expect(resourcesChanged).toBe(1)
  })

  it('tells the client when the tool set changes (an MCP server of the client row adds one)', {
    timeout: 40_000,
  }, async () => {
    await toolsOnceListed('mcp__changing__add_tool')
    const before = listChanged
    const added = await client.callTool({ name: 'mcp__changing__add_tool', arguments: { name: 'fresh_tool' } })
    expect(text(added)).toContain('added fresh_tool')
    const names = await toolsOnceListed('mcp__changing__fresh_tool')
    expect(listChanged).toBeGreaterThan(before)
    expect(names).toContain('read')
    const fresh = await client.callTool({ name: 'mcp__changing__fresh_tool', arguments: {} })
    expect(text(fresh)).toBe('fresh_tool ran')
  })

  it('serves the session transcripts of this directory as resources', async () => {
    const { resources } = await client.listResources()
    const mine = resources.find((r) => r.uri === `dsh://session/${sessionId}`)
    expect(mine).toMatchObject({ mimeType: 'text/markdown', title: 'MCP calls from session-test-client' })
    const { contents } = await client.readResource({ uri: `dsh://session/${sessionId}` })
    const body = (contents[0] as { text: string }).text
    expect(body).toContain(`# dsh session ${sessionId}`)
    expect(body).toContain('The MCP client "session-test-client" 2.5.0 ran the tool read directly')
    expect(body).toContain('Tool call `read` `{"file_path":"notes.txt"}`')
    expect(body).toContain('the password is swordfish')
    const { resourceTemplates } = await client.listResourceTemplates()
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(['dsh://session/{id}'])
    const missing = await client.readResource({ uri: 'dsh://session/no-such-session' }).catch((e: unknown) => e)
    expect(missing).toBeInstanceOf(McpError)
    expect((missing as McpError).code).toBe(-32002)
    const bad = await client.readResource({ uri: 'dsh://session/../../etc' }).catch((e: unknown) => e)
    expect((bad as McpError).message).toContain('is not a dsh session id')
  })

  it('serves the skills as prompts', async () => {
    const { prompts } = await client.listPrompts()
    expect(prompts.find((p) => p.name === 'haiku')).toMatchObject({ description: 'Skill: Answer in a haiku.' })
    const got = await client.getPrompt({ name: 'haiku', arguments: { request: 'about tides' } })
    expect(got.messages).toEqual([
      {
        role: 'user',
        content: { type: 'text', text: 'Answer in exactly one haiku of three lines.\n\nabout tides' },
      },
    ])
    const unknown = await client.getPrompt({ name: 'sonnet' }).catch((e: unknown) => e)
    expect((unknown as McpError).message).toMatch(/unknown prompt "sonnet"; the prompts are: .*haiku/)
  })

  it('the session is listed by dsh sessions and dsh --resume continues it', { timeout: 60_000 }, async () => {
    // The server holds the session while it runs: end it first (close() waits for the process).
    await client.close()
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: model.baseURL, DEEPSEEK_API_KEY: 'sk-test' }
    const listed = await runDsh(['sessions', '--output-format', 'json'], { cwd, env })
    expect(listed.code, listed.stderr).toBe(0)
    expect(listed.stdout).toContain(sessionId)
    const resumed = await runDsh(['-p', '--resume', sessionId, 'What did the notes say?'], { cwd, env })
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(resumed.stdout).toContain('They named a fish.')
    // The model saw the MCP client's calls and their results as the session's history.
    const sent = JSON.stringify(model.requests[0].body)
    expect(sent).toContain('the password is swordfish')
    expect(sent).toContain('ran the tool read directly through dsh mcp serve')
  })
})
