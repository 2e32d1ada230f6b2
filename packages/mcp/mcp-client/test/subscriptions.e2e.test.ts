// End-to-end through the real `dsh` bin (headless, @dsh/llm-mock-server as the model) with a
// server on the official SDK that offers resource subscriptions: a resource the human mentioned is
// subscribed to, and when the server reports it changed (notifications/resources/updated), the
// change is logged in the session and the model's next request carries the resource as it reads
// now. An update of a resource nobody mentioned is ignored. A resumed session (`dsh -c`) is
// subscribed again to what its log mentions, though its server is a new process.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

const changing = fileURLToPath(new URL('./fixtures/changing-server.mjs', import.meta.url))

let server: MockServer | undefined
afterAll(async () => {
  await server?.close()
})

type Message = { role: string; content: string | Array<{ type: string; text?: string }> }
const userTexts = (body: unknown) =>
  ((body as { messages: Message[] }).messages ?? [])
    .filter((m) => m.role === 'user')
    .map((m) => (typeof m.content === 'string' ? m.content : m.content.map((b) => b.text ?? '').join('\n')))

describe('MCP resource subscriptions through dsh', () => {
  it('subscribes to a mentioned resource and tells the model when it changed', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-mcp-subscribe-'))
    const home = join(dir, 'home')
    const cwd = join(dir, 'project')
    mkdirSync(home)
    mkdirSync(cwd)
    writeFileSync(
      join(home, 'settings.yaml'),
      `mcpServers:\n  changing:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(changing)}]\n`,
    )
    server = await startMockServer({
      steps: [
        { toolCalls: [{ id: 'c_bump', name: 'mcp__changing__bump', arguments: {} }] },
        { text: 'It is 1 now.' },
      ] as never,
    })
    const result = await runDsh(
      ['--profile', 'headless', '--output-format', 'stream-json', 'watch @changing:fixture://counter for me'],
      { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' } },
    )
    expect(result.code, result.stderr).toBe(0)
    const events = result.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, any>)
      .filter((l) => l.type === 'event')
      .map((l) => l.event)
    // The mention was read, and the server saw the subscription before the tool ran.
    expect(userTexts(server.requests[0].body)).toContain(
      '<resource server="changing" uri="fixture://counter">\ncounter 0\n</resource>',
    )
    const bump = events.find((e) => e.type === 'tool/result' && e.data.message.callId === 'c_bump')
    expect(bump.data.message.content[0].text).toBe('now 1; subscribed: fixture://counter')
    // The update is logged once, for the mentioned resource only.
    expect(events.filter((e) => e.type === 'mcp/resource-updated').map((e) => e.data)).toEqual([
      { server: 'changing', uri: 'fixture://counter' },
    ])
    // The next request carries the resource as it reads now; `other` (not mentioned) is absent.
    const next = userTexts(server.requests[1].body).join('\n')
    expect(next).toContain(
      '<resource-updated server="changing" uri="fixture://counter">The MCP server "changing" reports that the resource @changing:fixture://counter, mentioned earlier in this session, changed. Its content now:</resource-updated>\n<resource server="changing" uri="fixture://counter">\ncounter 1\n</resource>',
    )
    expect(next).not.toContain('fixture://other')
    const notes = events.filter((e) => e.type === 'user/message' && e.data.source.plugin === '@dsh/mcp-client')
    expect(notes.map((e) => e.data.source.label)).toEqual([
      '@changing:fixture://counter',
      '@changing:fixture://counter (updated)',
    ])
  })

  it('subscribes a resumed session again to the resources its log mentions', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-mcp-resume-'))
    const home = join(dir, 'home')
    const cwd = join(dir, 'project')
    mkdirSync(home)
    mkdirSync(cwd)
    writeFileSync(
      join(home, 'settings.yaml'),
      `mcpServers:\n  changing:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(changing)}]\n`,
    )
    const model = await startMockServer({
      steps: [
        { text: 'Watching it.' },
        { toolCalls: [{ id: 'c_bump', name: 'mcp__changing__bump', arguments: {} }] },
        { text: 'It is 1 now.' },
      ] as never,
    })
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: model.baseURL, DEEPSEEK_API_KEY: 'x' }
    try {
      const first = await runDsh(['-p', 'watch @changing:fixture://counter for me'], { cwd, env })
      expect(first, first.stderr).toMatchObject({ code: 0, stdout: 'Watching it.\n' })
      // A new dsh process and a new server process: nothing is subscribed until the log is read.
      const again = await runDsh(['-c', '-p', 'bump the counter'], { cwd, env })
      expect(again, again.stderr).toMatchObject({ code: 0, stdout: 'It is 1 now.\n' })
      expect(model.requests).toHaveLength(3)
      const bump = JSON.stringify(model.requests[2].body)
      expect(bump).toContain('now 1; subscribed: fixture://counter')
      expect(userTexts(model.requests[2].body).join('\n')).toContain(
        '<resource-updated server="changing" uri="fixture://counter">The MCP server "changing" reports that the resource @changing:fixture://counter, mentioned earlier in this session, changed. Its content now:</resource-updated>\n<resource server="changing" uri="fixture://counter">\ncounter 1\n</resource>',
      )
    } finally {
      await model.close()
    }
  })
})
