// Prompts and resources of a server as the client keeps them: listed at connect, listed again on
// notifications/{prompts,resources}/list_changed (a real SDK server), and the pure helpers that map
// a typed argument line onto a prompt's arguments, find `@server:uri` mentions and parse
// `dsh mcp add`.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import SubprocessLocal from '@dsh/subprocess-local'
import CommandRegistry from '@dsh/commands'
import McpClient, { mentionedResources, promptArguments, promptCommandName } from '../src/index.ts'
import { parseAdd } from '../src/cli-config.ts'
import { messageMentions } from '../src/mentions.ts'

const changing = fileURLToPath(new URL('./fixtures/changing-server.mjs', import.meta.url))

async function until<T>(probe: () => T | undefined | false, what: string, ms = 15_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = probe()
    if (value) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe('the catalog of a server that changes', () => {
  let h: Harness
  beforeAll(async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-mcp-catalog-'))
    h = await createHarness({
      cwd,
      script: [{ text: 'read' }] as never,
      plugins: [
        [CommandRegistry, {}],
        [SubprocessLocal, {}],
        [McpClient, { cwd, servers: { changing: { command: process.execPath, args: [changing] } } }],
      ] as never,
    })
    await until(() => h.ctx.mcp.get('changing')?.state === 'connected', 'changing connected')
  })
  afterAll(() => h?.dispose())

  const call = (name: string, args: object) =>
    h.ctx.tools.execute(
      { callId: `c-${name}-${JSON.stringify(args)}`, name, arguments: JSON.stringify(args) },
      { cwd: process.cwd(), sessionId: h.session.id },
    )

  it('lists prompts and resources at connect and registers each prompt as a command', () => {
    const catalog = h.ctx.mcp.catalog('changing')!
    expect(catalog.prompts.map((p) => p.name)).toEqual(['hello'])
    expect(catalog.resources.map((r) => r.uri)).toEqual(['fixture://hello', 'fixture://counter', 'fixture://other'])
    expect(h.ctx.commands.get('mcp__changing__hello')).toEqual({
      name: 'mcp__changing__hello',
      description: 'MCP prompt of "changing": Says hello.',
    })
  })

  it('follows resources/list_changed and prompts/list_changed', async () => {
    await call('mcp__changing__add_resource', { name: 'later' })
    await until(
      () => h.ctx.mcp.catalog('changing')!.resources.some((r) => r.uri === 'fixture://later'),
      'the new resource listed',
    )
    await call('mcp__changing__add_prompt', { name: 'later' })
    await until(() => h.ctx.commands.get('mcp__changing__later'), 'the new prompt as a command')
    expect(h.ctx.commands.get('mcp__changing__later')?.usage).toBe('topic=<topic>')
  })

  it('adds a mentioned resource after the human message', async () => {
    await h.prompt('look at @changing:fixture://hello.')
    const users = h.model.requests[0].messages.filter((m) => m.role === 'user')
    expect(JSON.stringify(users)).toContain(
      '<resource server=\\"changing\\" uri=\\"fixture://hello\\">\\nhello resource\\n</resource>',
    )
  })

  it('removes the commands when the server goes away', async () => {
    const dispose = h.ctx.mcp.add('second', { command: process.execPath, args: [changing] })
    await until(() => h.ctx.commands.get('mcp__second__hello'), 'the second server prompt')
    dispose()
    expect(h.ctx.commands.get('mcp__second__hello')).toBeUndefined()
    expect(h.ctx.commands.get('mcp__changing__hello')).toBeDefined()
  })
})

describe('prompt arguments', () => {
  const prompt = {
    name: 'args',
    arguments: [
      { name: 'city', required: true },
      { name: 'state', required: false },
    ],
  }
  it('maps key=value pairs and values in order, quotes keeping spaces', () => {
    expect(promptArguments(prompt, 'city=Paris', 'p')).toEqual({ city: 'Paris' })
    expect(promptArguments(prompt, 'state="Ile de France" city=Paris', 'p')).toEqual({
      city: 'Paris',
      state: 'Ile de France',
    })
    expect(promptArguments(prompt, 'Lyon Rhone Alpes', 'p')).toEqual({ city: 'Lyon', state: 'Rhone Alpes' })
    expect(promptArguments(prompt, "'New York'", 'p')).toEqual({ city: 'New York' })
    expect(promptArguments({ name: 'bare' }, '', 'p')).toEqual({})
  })
  it('refuses a missing required argument, an unknown name, a repeat and extra words in one line', () => {
    expect(() => promptArguments(prompt, '', 'p')).toThrow(
      'missing required argument "city" (usage: /p city=<city> [state=<state>])',
    )
    expect(() => promptArguments(prompt, 'town=x', 'p')).toThrow('the prompt has no argument "town"')
    expect(() => promptArguments(prompt, 'city=a city=b', 'p')).toThrow('the argument "city" is given twice')
    expect(() => promptArguments({ name: 'bare' }, 'x', 'p')).toThrow(
      'the prompt takes no arguments, but "x" was given',
    )
  })
  it('names commands within the registry rules', () => {
    expect(promptCommandName('My.Server', 'Do Thing!')).toBe('mcp__my_server__do_thing_')
  })
})

describe('@server:uri mentions', () => {
  it('finds mentions of known servers at word boundaries, without duplicates', () => {
    const servers = new Set(['docs', 'x'])
    expect(
      mentionedResources(
        'see @docs:file:///a.md, and @docs:file:///a.md, a@docs:b @session:s1 @other:u @x:urn:y',
        servers,
      ),
    ).toEqual([
      { server: 'docs', uri: 'file:///a.md,', trimmed: 'file:///a.md' },
      { server: 'x', uri: 'urn:y' },
    ])
  })

  it('takes only the picked resources of a message that marks its references (the web composer)', () => {
    const servers = new Set(['docs'])
    const text = 'typed @docs:file:///typed.md and picked @docs:file:///picked.md'
    const picked = {
      content: text,
      source: {
        kind: 'human',
        references: [
          { kind: 'file', path: 'a.md' },
          { kind: 'resource', server: 'docs', uri: 'file:///picked.md' },
          { kind: 'resource', server: 'docs', uri: 'file:///picked.md' },
          { kind: 'resource', server: 'gone', uri: 'x:y' },
        ],
      },
    }
    expect(messageMentions(picked, servers)).toEqual([{ server: 'docs', uri: 'file:///picked.md' }])
    // No references (TUI, headless): the typed mentions.
    expect(messageMentions({ content: text, source: { kind: 'human' } }, servers).map((m) => m.uri)).toEqual([
      'file:///typed.md',
      'file:///picked.md',
    ])
  })
})

describe('dsh mcp add arguments', () => {
  it('follows Claude Code: options before the name, the command and its own words after', () => {
    expect(parseAdd(['-e', 'A=1', 'fs', 'npx', '-y', 'pkg', '--flag'])).toEqual({
      name: 'fs',
      scope: 'user',
      transport: 'stdio',
      entry: { command: 'npx', args: ['-y', 'pkg', '--flag'], env: { A: '1' } },
    })
    expect(parseAdd(['--scope', 'project', 'fs', '--', 'node', 's.js'])).toMatchObject({
      scope: 'project',
      entry: { command: 'node', args: ['s.js'] },
    })
    expect(parseAdd(['--transport', 'http', '--header', 'Authorization: Bearer ${T}', 'web', 'https://h/mcp'])).toEqual(
      {
        name: 'web',
        scope: 'user',
        transport: 'http',
        entry: { type: 'http', url: 'https://h/mcp', headers: { Authorization: 'Bearer ${T}' } },
      },
    )
  })
  it('refuses bad input in one line', () => {
    expect(() => parseAdd([])).toThrow('add needs a server name, then a command or URL')
    expect(() => parseAdd(['fs'])).toThrow('add fs needs the command that starts the server')
    expect(() => parseAdd(['--scope', 'local', 'fs', 'x'])).toThrow('--scope local is not a dsh scope')
    expect(() => parseAdd(['--transport', 'ws', 'fs', 'x'])).toThrow('--transport must be stdio, http or sse, not "ws"')
    expect(() => parseAdd(['-e', 'NOEQUALS', 'fs', 'x'])).toThrow('--env takes KEY=VALUE, not "NOEQUALS"')
    expect(() => parseAdd(['fs', 'https://h/mcp'])).toThrow('is a URL: give --transport http')
    expect(() => parseAdd(['-t', 'sse', 'w', 'ftp://h'])).toThrow('"url" must be http or https')
    expect(() => parseAdd(['-t', 'http', '-e', 'A=1', 'w', 'https://h'])).toThrow('--env is for stdio servers')
    expect(() => parseAdd(['--header', 'X: y', 'fs', 'x'])).toThrow('--header is for http and sse servers')
    expect(() => parseAdd(['bad name', 'x'])).toThrow('invalid server name "bad name"')
  })
})
