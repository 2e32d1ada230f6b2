// End-to-end through the real `dsh` bin (headless, @dsh/llm-mock-server as the model) against the
// real @modelcontextprotocol/server-everything, declared in the user's settings: its prompts are
// slash commands, its resources and resource templates are `@everything:uri` mentions, a tool's
// progress notifications are logged on the call, and its log messages reach the dsh log.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

const require = createRequire(import.meta.url)
const root = join(require.resolve('@modelcontextprotocol/server-everything/package.json'), '..')
const everything = join(root, 'dist', 'index.js')

let home: string
let cwd: string
beforeAll(() => {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-mcp-prompts-'))
  home = join(dir, 'home')
  cwd = join(dir, 'project')
  mkdirSync(home)
  mkdirSync(cwd)
  // User settings: the user's own servers start without a trust question.
  writeFileSync(
    join(home, 'settings.yaml'),
    `mcpServers:\n  everything:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(everything)}, stdio]\n`,
  )
})

const servers: MockServer[] = []
afterAll(async () => {
  for (const s of servers) await s.close()
})

async function run(task: string, steps: unknown[], extraEnv: Record<string, string> = {}) {
  const server = await startMockServer({ steps: steps as never })
  servers.push(server)
  const result = await runDsh(['--profile', 'headless', '--output-format', 'stream-json', task], {
    cwd,
    env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x', ...extraEnv },
  })
  const lines = result.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, any>)
  return { ...result, lines, server }
}

type Message = { role: string; content: string | Array<{ type: string; text?: string }> }
const textOf = (m: Message) =>
  typeof m.content === 'string' ? m.content : m.content.map((b) => b.text ?? '').join('\n')
const userTexts = (server: MockServer, index = 0) =>
  ((server.requests[index].body as { messages: Message[] }).messages ?? []).filter((m) => m.role === 'user').map(textOf)

describe('MCP prompts, resources, progress and logs through dsh', () => {
  it('runs a prompt as /mcp__everything__args-prompt, its arguments mapped; /help lists it', {
    timeout: 60_000,
  }, async () => {
    const named = await run('/mcp__everything__args-prompt city=Paris state="Ile de France"', [{ text: 'sunny' }])
    expect(named.stderr).not.toMatch(/failed|unknown command/)
    expect(named.code).toBe(0)
    expect(named.lines.at(-1)).toMatchObject({ type: 'result', result: 'sunny' })
    expect(userTexts(named.server)).toContain("What's weather in Paris, Ile de France?")

    // Values without names fill the declared arguments in order.
    const positional = await run('/mcp__everything__args-prompt Lyon', [{ text: 'rain' }])
    expect(positional.code).toBe(0)
    expect(userTexts(positional.server)).toContain("What's weather in Lyon?")

    const help = await run('/help', [])
    expect(help.code).toBe(0)
    const output = help.lines.find((l) => l.type === 'command')?.output as string
    expect(output).toMatch(
      /^\/mcp__everything__args-prompt city=<city> \[state=<state>\] {2}MCP prompt of "everything": A prompt with two arguments/m,
    )
    expect(output).toMatch(/^\/mcp__everything__simple-prompt {2}MCP prompt of "everything"/m)
  })

  it('refuses a prompt command without its required argument, in one line', { timeout: 60_000 }, async () => {
    const missing = await run('/mcp__everything__args-prompt', [{ text: 'never asked' }])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain(
      'dsh: /mcp__everything__args-prompt failed: missing required argument "city" (usage: /mcp__everything__args-prompt city=<city> [state=<state>])\n',
    )
    expect(missing.server.requests).toHaveLength(0)
    const unknown = await run('/mcp__everything__args-prompt town=Paris', [{ text: 'never asked' }])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('the prompt has no argument "town"; its arguments are "city", "state"')
  })

  it('adds the text of @everything:uri resources and templates after the message', { timeout: 60_000 }, async () => {
    const doc = 'demo://resource/static/document/architecture.md'
    const result = await run(
      `Summarise @everything:${doc}, compare @everything:demo://resource/dynamic/text/7 and @everything:demo://nope/x.`,
      [{ text: 'done' }],
    )
    expect(result.code).toBe(0)
    const texts = userTexts(result.server)
    const architecture = readFileSync(join(root, 'dist', 'docs', 'architecture.md'), 'utf8')
    expect(texts).toContain(
      `<resource server="everything" uri="${doc}">\n${architecture}${architecture.endsWith('\n') ? '' : '\n'}</resource>`,
    )
    expect(texts.find((t) => t.includes('uri="demo://resource/dynamic/text/7"'))).toMatch(
      /Resource 7: This is a plaintext resource created at/,
    )
    // Trailing prose punctuation is dropped when the URI as written cannot be read; an unknown one is a note.
    expect(texts.find((t) => t.startsWith('<resource') && t.includes('demo://nope/x'))).toMatch(
      /^<resource server="everything" uri="demo:\/\/nope\/x\." unavailable="error">The user mentioned @everything:demo:\/\/nope\/x\., but it could not be read: /,
    )
    // The context is in the log, marked as the MCP client's.
    const events = result.lines.filter((l) => l.type === 'event').map((l) => l.event)
    const context = events.filter((e) => e.type === 'user/message' && e.data.source?.plugin === '@dsh/mcp-client')
    expect(context.map((e) => e.data.source.label)).toEqual([
      `@everything:${doc}`,
      '@everything:demo://resource/dynamic/text/7',
      '@everything:demo://nope/x.',
    ])
  })

  it('logs a tool call progress as tool/progress and server log lines in the dsh log', {
    timeout: 60_000,
  }, async () => {
    const result = await run(
      'work',
      [
        {
          toolCalls: [
            { id: 'c_log', name: 'mcp__everything__toggle-simulated-logging', arguments: {} },
            {
              id: 'c_long',
              name: 'mcp__everything__trigger-long-running-operation',
              arguments: { duration: 0.4, steps: 4 },
            },
          ],
        },
        { text: 'ok' },
      ],
      { DSH_DEBUG: '1' },
    )
    expect(result.code).toBe(0)
    const events = result.lines.filter((l) => l.type === 'event').map((l) => l.event)
    const progress = events.filter((e) => e.type === 'tool/progress').map((e) => e.data)
    // The SDK drops a progress notification that arrives together with the result, so the last
    // one may be missing; the earlier ones are 100 ms apart from it.
    expect(progress.slice(0, 3)).toEqual([
      { callId: 'c_long', progress: 1, total: 4, source: 'mcp:everything' },
      { callId: 'c_long', progress: 2, total: 4, source: 'mcp:everything' },
      { callId: 'c_long', progress: 3, total: 4, source: 'mcp:everything' },
    ])
    // Progress events come before the call's result in the log.
    const resultAt = events.findIndex((e) => e.type === 'tool/result' && e.data.message?.callId === 'c_long')
    expect(events.findIndex((e) => e.type === 'tool/progress')).toBeLessThan(resultAt)
    // server-everything sends one log message at once when logging is toggled on.
    expect(result.stderr).toMatch(/MCP server "everything" \[[a-z]+\]: [A-Za-z]+[- ]level[- ]message/)
  })
})
