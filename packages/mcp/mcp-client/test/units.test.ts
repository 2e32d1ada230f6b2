// The pure parts of @dsh/mcp-client, each on its own: model-facing tool names and the board that
// settles names two servers share, the mapping of `tools/call` results to tool outputs, and the
// checking of `mcpServers` entries and `.mcp.json`. The tests against real servers reach these
// only along their common paths; mutation testing (`pnpm mutation mcp-client`) showed which
// branches no test pinned.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TOOL_NAME_PATTERN } from '@dsh/tools'
import { hashedToolName, NameBoard, nameBoard, sanitize, toolName } from '../src/names.ts'
import { mapResult } from '../src/results.ts'
import {
  checkServer,
  checkTable,
  commandLine,
  expandVariables,
  projectTrustItems,
  readProjectFile,
} from '../src/config.ts'

let base: string
beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-mcp-units-')))
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

describe('tool names', () => {
  it('keeps a name that fits as mcp__<server>__<tool>, and replaces characters outside the set', () => {
    expect(sanitize('a.b c/d-e_f9')).toBe('a_b_c_d-e_f9')
    expect(toolName('fs', 'read_file')).toBe('mcp__fs__read_file')
    expect(toolName('my.server', 'get item')).toBe('mcp__my_server__get_item')
  })

  it('a hashed name is unique per (server, tool), at most 64 characters, and keeps the readable start', () => {
    const a = hashedToolName('a.b', 'x')
    const b = hashedToolName('a_b', 'x')
    expect(a).not.toBe(b)
    expect(a).toMatch(/^mcp__a_b__x_[0-9a-f]{8}$/)
    // The server and tool are hashed apart: moving a character across the boundary changes it.
    expect(hashedToolName('ab', 'c')).not.toBe(hashedToolName('a', 'bc'))
    const long = hashedToolName('server', 't'.repeat(100))
    expect(long).toHaveLength(64)
    expect(long.startsWith('mcp__server__ttt')).toBe(true)
    expect(long).toMatch(TOOL_NAME_PATTERN)
  })

  it('falls back to the hashed name when the sanitised one is taken or too long, never for an exact one', () => {
    expect(toolName('s', 'a.b', new Set(['mcp__s__a_b']))).toBe(hashedToolName('s', 'a.b'))
    expect(toolName('s', 'a.b', new Set(['other']))).toBe('mcp__s__a_b')
    // An exact name (nothing sanitised) keeps its plain form even when listed as taken.
    expect(toolName('s', 'a_b', new Set(['mcp__s__a_b']))).toBe('mcp__s__a_b')
    const fits = 't'.repeat(64 - 'mcp__s__'.length)
    expect(toolName('s', fits)).toBe(`mcp__s__${fits}`)
    expect(toolName('s', `${fits}x`)).toBe(hashedToolName('s', `${fits}x`))
  })

  it('the board marks a name two servers claim as contested, asks the other claimant to register again, and clears it when one leaves', () => {
    const board = new NameBoard()
    const resyncs: string[] = []
    expect([
      ...board.update(
        'one',
        new Map([
          ['mcp__x__t', 't'],
          ['mcp__x__solo', 'solo'],
        ]),
        () => resyncs.push('one'),
      ),
    ]).toEqual([])
    expect(board.contested('mcp__x__t')).toBe(false)
    const changed = board.update('two', new Map([['mcp__x__t', 't.']]), () => resyncs.push('two'))
    expect([...changed]).toEqual(['mcp__x__t'])
    expect(resyncs).toEqual(['one'])
    expect(board.contested('mcp__x__t')).toBe(true)
    expect(board.contested('mcp__x__solo')).toBe(false)
    expect(board.claimants('mcp__x__t')).toEqual([
      { server: 'one', tool: 't' },
      { server: 'two', tool: 't.' },
    ])
    expect(board.claimants('mcp__nobody')).toEqual([])
    // The same claims again change nothing and wake nobody.
    expect([...board.update('two', new Map([['mcp__x__t', 't.']]), () => resyncs.push('two'))]).toEqual([])
    expect(resyncs).toEqual(['one'])
    // `two` drops the name: uncontested again, and `one` registers again.
    expect([...board.update('two', new Map([['mcp__x__other', 'other']]), () => resyncs.push('two'))]).toEqual([
      'mcp__x__t',
    ])
    expect(resyncs).toEqual(['one', 'one'])
    expect(board.claimants('mcp__x__t')).toEqual([{ server: 'one', tool: 't' }])
    // Contested again, then `one` leaves: `two` registers again; leaving twice is a no-op.
    board.update('two', new Map([['mcp__x__t', 't.']]), () => resyncs.push('two'))
    expect(resyncs).toEqual(['one', 'one', 'one'])
    board.leave('one')
    expect(resyncs).toEqual(['one', 'one', 'one', 'two'])
    expect(board.contested('mcp__x__t')).toBe(false)
    expect(board.claimants('mcp__x__solo')).toEqual([])
    board.leave('one')
    expect(resyncs).toHaveLength(4)
  })

  it('one board per owner and scope', () => {
    const owner = {}
    expect(nameBoard(owner, undefined)).toBe(nameBoard(owner, undefined))
    expect(nameBoard(owner, 'agent-1')).toBe(nameBoard(owner, 'agent-1'))
    expect(nameBoard(owner, 'agent-1')).not.toBe(nameBoard(owner, undefined))
    expect(nameBoard({}, undefined)).not.toBe(nameBoard(owner, undefined))
  })
})

describe('mapResult', () => {
  const meta = { server: 'srv', tool: 'tl' }
  const mcp = { mcp: { server: 'srv', tool: 'tl' } }

  it('a single text is the content itself; adjacent texts join; an image stays a block between them', () => {
    expect(mapResult({ content: [{ type: 'text', text: 'hello' }] }, meta)).toEqual({ content: 'hello', meta: mcp })
    expect(
      mapResult(
        {
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
        meta,
      ).content,
    ).toBe('a\nb')
    expect(
      mapResult(
        {
          content: [
            { type: 'text', text: 'a' },
            { type: 'image', data: 'AAAA', mimeType: 'image/png' },
            { type: 'text', text: 'b' },
          ],
        },
        meta,
      ),
    ).toEqual({
      content: [
        { type: 'text', text: 'a' },
        { type: 'image', mediaType: 'image/png', data: 'AAAA' },
        { type: 'text', text: 'b' },
      ],
      meta: mcp,
    })
    // A text without a string, null items and a content that is not a list.
    expect(mapResult({ content: [{ type: 'text', text: 5 }, null, 'x'] }, meta).content).toBe('')
    expect(mapResult({ content: 'nope' }, meta)).toEqual({ content: '(the tool returned no content)', meta: mcp })
  })

  it('describes what the model cannot take as a block', () => {
    const one = (item: unknown) => mapResult({ content: [item] }, meta).content
    expect(one({ type: 'image', data: 'AAAA' })).toBe('[image without data or MIME type]')
    expect(one({ type: 'image', mimeType: 'image/png' })).toBe('[image without data or MIME type]')
    expect(one({ type: 'audio', mimeType: 'audio/wav', data: 'AAAA' })).toBe(
      '[audio (audio/wav, 3 bytes) not shown: audio cannot be passed to the model]',
    )
    expect(one({ type: 'audio', data: 'AAA=' })).toBe(
      '[audio (unknown type, 2 bytes) not shown: audio cannot be passed to the model]',
    )
    expect(one({ type: 'audio', data: 'A'.repeat(4 * 683) })).toContain('(unknown type, 2.0 KiB)')
    expect(one({ type: 'audio', data: 'A'.repeat(4 * 699051) })).toContain('2.0 MiB')
    expect(one({ type: 'audio' })).toContain('0 bytes')
    expect(
      one({
        type: 'resource_link',
        uri: 'file:///a',
        name: 'a',
        title: 'The A',
        mimeType: 'text/plain',
        description: 'first',
      }),
    ).toBe('Resource link: The A <file:///a> (text/plain) - first')
    expect(one({ type: 'resource_link', uri: 'file:///a', name: 'a' })).toBe('Resource link: a <file:///a>')
    expect(one({ type: 'resource_link', uri: 'file:///a' })).toBe('Resource link: file:///a <file:///a>')
    expect(one({ type: 'resource_link' })).toBe('Resource link: resource <?>')
    expect(one({ type: 'resource', resource: { uri: 'mem://x', mimeType: 'text/plain', text: 'body' } })).toBe(
      'Resource <mem://x> (text/plain):\nbody',
    )
    expect(one({ type: 'resource', resource: { uri: 'mem://x', blob: 'AAAA' } })).toBe(
      'Resource <mem://x>: binary content, 3 bytes, not shown',
    )
    expect(one({ type: 'resource', resource: { uri: 'mem://x', mimeType: 'application/zip', blob: 'AAAA' } })).toBe(
      'Resource <mem://x> (application/zip): binary content, 3 bytes, not shown',
    )
    expect(one({ type: 'resource', resource: { mimeType: 'image/gif', blob: 'R0lG' } })).toEqual([
      { type: 'image', mediaType: 'image/gif', data: 'R0lG' },
    ])
    expect(one({ type: 'resource' })).toBe('Resource <?>: empty')
    expect(one({ type: 'hologram' })).toBe('[content of type "hologram" not shown]')
  })

  it('structured content is shown once: alone, after other content, or not again when a text repeats it', () => {
    expect(mapResult({ structuredContent: { n: 1 } }, meta).content).toBe('{"n":1}')
    expect(mapResult({ content: [{ type: 'text', text: 'total' }], structuredContent: { n: 1 } }, meta).content).toBe(
      'total\nStructured result: {"n":1}',
    )
    expect(
      mapResult({ content: [{ type: 'text', text: '{ "n": 1 }' }], structuredContent: { n: 1 } }, meta).content,
    ).toBe('{ "n": 1 }')
    // A text that is JSON of something else does not count as the repeat.
    expect(mapResult({ content: [{ type: 'text', text: '{"n":2}' }], structuredContent: { n: 1 } }, meta).content).toBe(
      '{"n":2}\nStructured result: {"n":1}',
    )
  })

  it('the pre-2025 toolResult is shown only when nothing else is; no content at all says so', () => {
    expect(mapResult({ toolResult: { ok: true } }, meta).content).toBe('{"ok":true}')
    expect(mapResult({ content: [{ type: 'text', text: 'x' }], toolResult: { ok: true } }, meta).content).toBe('x')
    expect(mapResult({}, meta)).toEqual({ content: '(the tool returned no content)', meta: mcp })
  })

  it('isError is an error result with the text (500 characters at most) as its message', () => {
    expect(mapResult({ content: [{ type: 'text', text: 'boom' }], isError: true }, meta)).toEqual({
      content: [{ type: 'text', text: 'boom' }],
      isError: true,
      error: { code: 'MCP_TOOL_ERROR', message: 'boom' },
      meta: mcp,
    })
    expect(
      mapResult({ content: [{ type: 'text', text: 'e'.repeat(600) }], isError: true }, meta).error?.message,
    ).toHaveLength(500)
    expect(mapResult({ content: [{ type: 'text', text: '  ' }], isError: true }, meta).error?.message).toBe(
      'the tool reported an error without a message',
    )
    expect(mapResult({ isError: true }, meta)).toMatchObject({
      content: '(the tool returned no content)',
      isError: true,
    })
    expect(mapResult({ content: [{ type: 'text', text: 'fine' }], isError: false }, meta)).toEqual({
      content: 'fine',
      meta: mcp,
    })
  })
})

describe('checking mcpServers entries', () => {
  const options = {
    source: 'config' as const,
    origin: 'the row',
    cwd: '/work/project',
    env: { TOKEN: 'tk', EMPTY: '' } as Record<string, string | undefined>,
  }
  const check = (raw: unknown, name = 'srv') => checkServer(name, raw, options)
  const invalid = (raw: unknown, name = 'srv') => (check(raw, name) as { invalid?: string }).invalid

  it('expands ${VAR} and ${VAR:-default}; an unset or empty variable without a default is an error naming it', () => {
    expect(expandVariables('a ${TOKEN} b', options.env, 'x')).toBe('a tk b')
    expect(expandVariables('${MISSING:-dflt}/${EMPTY:-e}', options.env, 'x')).toBe('dflt/e')
    expect(expandVariables('${MISSING:-}', options.env, 'x')).toBe('')
    expect(expandVariables('$TOKEN ${1X}', options.env, 'x')).toBe('$TOKEN ${1X}')
    expect(() => expandVariables('${MISSING}', options.env, '"url"')).toThrow(
      '"url" uses ${MISSING}, which is not set (set it, or write ${MISSING:-default})',
    )
    expect(() => expandVariables('${EMPTY}', options.env, 'x')).toThrow('uses ${EMPTY}')
  })

  it('a stdio entry: command, args, env and cwd expanded; a relative cwd is resolved against the project', () => {
    expect(
      check({ command: 'node', args: ['s.js', '${TOKEN}'], env: { K: '${TOKEN}' }, cwd: 'sub', timeout: 2500 }),
    ).toEqual({
      name: 'srv',
      source: 'config',
      origin: 'the row',
      spec: {
        transport: 'stdio',
        command: 'node',
        args: ['s.js', 'tk'],
        env: { K: 'tk' },
        cwd: '/work/project/sub',
        timeoutMs: 2500,
      },
    })
    expect(check({ command: 'node', cwd: '/abs/${TOKEN}' })).toMatchObject({
      spec: { cwd: '/abs/tk', args: [], env: {} },
    })
    expect(check({ command: 'node' })).toMatchObject({ spec: { cwd: '/work/project' } })
    expect((check({ command: 'node' }) as { spec: object }).spec).not.toHaveProperty('timeoutMs')
    expect(check({ type: 'stdio', command: 'x' })).toMatchObject({ spec: { transport: 'stdio' } })
    expect(check({ command: 'x', disabled: true })).toEqual({
      name: 'srv',
      source: 'config',
      origin: 'the row',
      disabled: true,
    })
    expect(check({ command: 'x', disabled: 'yes' })).toHaveProperty('spec')
  })

  it('a remote entry: http by default, sse when asked, headers expanded', () => {
    expect(check({ url: 'https://h/${TOKEN}', headers: { Authorization: 'Bearer ${TOKEN}' } })).toEqual({
      name: 'srv',
      source: 'config',
      origin: 'the row',
      spec: {
        transport: 'http',
        url: 'https://h/tk',
        headers: { Authorization: 'Bearer tk' },
        oauth: { grant: 'authorization_code' },
      },
    })
    expect(check({ url: 'http://h', type: 'sse', timeout: 1 })).toMatchObject({
      spec: { transport: 'sse', timeoutMs: 1 },
    })
    for (const type of ['http', 'streamable-http', 'streamableHttp'])
      expect(check({ url: 'http://h', type })).toMatchObject({ spec: { transport: 'http' } })
  })

  it('each malformed entry is one line naming what is wrong', () => {
    expect(invalid({ command: 'x' }, '')).toMatch(/^the server name must be 1-64 letters/)
    expect(invalid({ command: 'x' }, '-x')).toMatch(/^the server name must be/)
    expect(invalid({ command: 'x' }, 'a'.repeat(65))).toMatch(/^the server name must be/)
    expect(invalid({ command: 'x' }, `A${'a'.repeat(63)}`)).toBeUndefined()
    expect(invalid({ command: 'x' }, 'a b')).toMatch(/^the server name must be/)
    expect(invalid(null)).toBe('expected an object with "command" or "url", got null')
    expect(invalid(['x'])).toBe('expected an object with "command" or "url", got a list')
    expect(invalid('x')).toBe('expected an object with "command" or "url", got string')
    for (const timeout of [0, -5, 'x', Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(invalid({ command: 'x', timeout })).toBe('"timeout" must be a positive number of milliseconds')
    }
    expect(invalid({ command: 'x', type: 'websocket' })).toBe('"type" must be stdio, http or sse, not "websocket"')
    expect(invalid({ command: 'x', url: 'http://h' })).toBe(
      'give either "command" (a local server) or "url" (a remote one), not both',
    )
    expect(invalid({ command: '  ' })).toBe('"command" must be a non-empty string')
    expect(invalid({ command: 3 })).toBe('"command" must be a non-empty string')
    expect(invalid({ type: 'stdio' })).toBe('"command" must be a non-empty string')
    expect(invalid({ command: 'x', env: ['A=1'] })).toBe('"env" must be an object of strings')
    expect(invalid({ command: 'x', env: { A: null } })).toBe('"env".A must be a string, got null')
    expect(invalid({ command: 'x', env: { A: 1 } })).toBe('"env".A must be a string, got number')
    expect(invalid({ command: 'x', cwd: '' })).toBe('"cwd" must be a non-empty string')
    expect(invalid({ command: 'x', cwd: 7 })).toBe('"cwd" must be a non-empty string')
    expect(invalid({ command: 'x', args: 'a b' })).toBe('"args" must be a list of strings')
    expect(invalid({ command: 'x', args: ['a', 1] })).toBe('"args" must be a list of strings')
    expect(invalid({ command: 'x', args: ['${NOPE}'] })).toMatch(/^"args"\[0\] uses \$\{NOPE\}/)
    expect(invalid({ command: 'x', env: { K: '${NOPE}' } })).toMatch(/^"env"\.K uses/)
    expect(invalid({ command: '${NOPE}' })).toMatch(/^"command" uses/)
    expect(invalid({ command: 'x', cwd: '${NOPE}' })).toMatch(/^"cwd" uses/)
    expect(invalid({ url: 5 })).toBe('"url" must be a string')
    expect(invalid({ url: 'not a url' })).toBe('"url" is not a valid URL: "not a url"')
    expect(invalid({ url: 'ftp://h/x' })).toBe('"url" must be http or https, not ftp:')
    expect(invalid({ url: 'http://h', headers: 'x' })).toBe('"headers" must be an object of strings')
    expect(invalid({ url: 'http://h', headers: { A: '${NOPE}' } })).toMatch(/^"headers"\.A uses/)
    expect(invalid({ url: '${NOPE}' })).toMatch(/^"url" uses/)
    expect(invalid({})).toBe('expected "command" (a local server) or "url" (a remote one)')
    expect(invalid({ type: 'http' })).toBe('expected "command" (a local server) or "url" (a remote one)')
  })

  it('a table: nothing, every entry, or one problem when it is not an object', () => {
    expect(checkTable(undefined, options)).toEqual({ servers: [] })
    expect(checkTable(null, options)).toEqual({ servers: [] })
    expect(checkTable(['x'], options)).toEqual({
      servers: [],
      problem: 'the row: "mcpServers" must be an object of servers',
    })
    expect(checkTable('x', options).problem).toBe('the row: "mcpServers" must be an object of servers')
    expect(checkTable({ a: { command: 'x' }, b: 3 }, options).servers.map((s) => [s.name, 'spec' in s])).toEqual([
      ['a', true],
      ['b', false],
    ])
  })
})

describe('.mcp.json and what a project would run', () => {
  it('reads the table, and names the file for one that is unreadable, not JSON or not an object', () => {
    const dir = join(base, 'proj')
    mkdirSync(dir)
    const path = join(dir, '.mcp.json')
    expect(readProjectFile(dir)).toEqual({ path })
    expect(readProjectFile(join(base, 'no-such-dir'))).toEqual({ path: join(base, 'no-such-dir', '.mcp.json') })
    writeFileSync(join(base, 'a-file'), '')
    expect(readProjectFile(join(base, 'a-file'))).toEqual({ path: join(base, 'a-file', '.mcp.json') })
    writeFileSync(path, '{"mcpServers": {"a": {"command": "x"}}}')
    expect(readProjectFile(dir)).toEqual({ path, table: { a: { command: 'x' } } })
    writeFileSync(path, '{ nope')
    expect(readProjectFile(dir).problem).toMatch(new RegExp(`^${path.replace(/[.]/g, '\\.')}: not valid JSON \\(`))
    writeFileSync(path, '[1]')
    expect(readProjectFile(dir)).toEqual({ path, problem: `${path}: expected an object with "mcpServers"` })
    writeFileSync(path, 'null')
    expect(readProjectFile(dir).problem).toBe(`${path}: expected an object with "mcpServers"`)
    const asDir = join(base, 'proj-dir')
    mkdirSync(join(asDir, '.mcp.json'), { recursive: true })
    expect(readProjectFile(asDir)).toEqual({
      path: join(asDir, '.mcp.json'),
      problem: `${join(asDir, '.mcp.json')}: cannot read (EISDIR)`,
    })
  })

  it('renders command lines with quoting only where needed', () => {
    expect(commandLine(['node', 'a/b.js', '--x=1', 'k@v%+,:'])).toBe('node a/b.js --x=1 k@v%+,:')
    expect(commandLine(['echo', 'two words', "it's", ''])).toBe(`echo 'two words' 'it'\\''s' ''`)
  })

  it('lists every server a project would run, as written, with one display line each; disabled ones are left out', () => {
    const dir = join(base, 'trust-proj')
    mkdirSync(dir)
    const items = projectTrustItems(
      {
        local: { command: 'node', args: ['srv.js', 'a b'], env: { TOKEN: '${TOKEN}' }, cwd: 'tools' },
        bare: { command: 'srv' },
        remote: { url: 'https://h/mcp', headers: { Authorization: 'x', 'X-Other': 'y' } },
        plainRemote: { url: 'https://h/mcp' },
        off: { command: 'x', disabled: true },
        odd: 42,
      },
      '/proj/.mcp.json',
      dir,
    )
    expect(items.map((item) => [item.name, item.display])).toEqual([
      ['local', `node srv.js 'a b' (env 'TOKEN=\${TOKEN}') (cwd tools)`],
      ['bare', 'srv'],
      ['remote', 'https://h/mcp (headers Authorization, X-Other)'],
      ['plainRemote', 'https://h/mcp'],
      ['odd', '42'],
    ])
    expect(items[0]).toMatchObject({ file: '/proj/.mcp.json', kind: 'mcp-server', run: { entry: { command: 'node' } } })
    expect(items.find((item) => item.name === 'odd')!.run).toEqual({ entry: 42, files: {} })
    expect(projectTrustItems(['x'], '/f', dir)).toEqual([])
    expect(projectTrustItems(undefined, '/f', dir)).toEqual([])
  })
})
