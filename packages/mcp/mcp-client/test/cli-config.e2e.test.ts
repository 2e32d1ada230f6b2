// `dsh mcp add|remove|get` through the real `dsh` launcher: Claude Code's arguments, the files users
// already have ($DSH_HOME/settings.yaml's mcpServers, the project's .mcp.json), one-line errors, and
// project servers that stay behind project trust until `dsh trust`.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'

const require = createRequire(import.meta.url)
const everything = join(
  require.resolve('@modelcontextprotocol/server-everything/package.json'),
  '..',
  'dist',
  'index.js',
)

let home: string
let cwd: string
let env: Record<string, string>
beforeAll(() => {
  const root = mkdtempSync(join(tmpdir(), 'dsh-mcp-add-'))
  home = join(root, 'home')
  cwd = join(root, 'project')
  mkdirSync(home)
  mkdirSync(cwd)
  env = { DSH_HOME: home }
  // A user comment and another section the write must keep.
  writeFileSync(join(home, 'settings.yaml'), '# my settings\nmcpServers: {}\n')
})

const dsh = (...args: string[]) => runDsh(['mcp', ...args], { cwd, env })

describe('dsh mcp add / remove / get', () => {
  it('adds a user server to settings.yaml, lists and gets it running, and removes it', {
    timeout: 90_000,
  }, async () => {
    const add = await dsh('add', '-e', 'DSH_X=1', 'everything', process.execPath, everything, 'stdio')
    expect(add.stderr).toBe('')
    expect(add.code).toBe(0)
    expect(add.stdout).toBe(
      `Added stdio MCP server "everything" to the user settings (${join(home, 'settings.yaml')}).\n`,
    )
    const yaml = readFileSync(join(home, 'settings.yaml'), 'utf8')
    expect(yaml).toContain('# my settings')
    expect(yaml).toMatch(/everything:/)
    expect(yaml).toMatch(/DSH_X: ["']1["']/)

    const again = await dsh('add', 'everything', 'node')
    expect(again.code).toBe(1)
    expect(again.stderr).toBe(
      `dsh mcp: ${join(home, 'settings.yaml')} already has a server "everything"; remove it first (dsh mcp remove everything --scope user)\n`,
    )

    const get = await dsh('get', 'everything')
    expect(get.code).toBe(0)
    expect(get.stdout).toMatch(/^everything\n {2}source: {5}user \(/)
    expect(get.stdout).toMatch(/ {2}state: {6}connected\n/)
    expect(get.stdout).toContain('mcp__everything__echo')
    expect(get.stdout).toMatch(
      / {4}\/mcp__everything__args-prompt city=<city> \[state=<state>\] {2}A prompt with two arguments/,
    )
    expect(get.stdout).toContain(
      '    @everything:demo://resource/static/document/architecture.md  architecture.md (text/markdown)',
    )
    expect(get.stdout).toContain(
      '    @everything:demo://resource/dynamic/text/{resourceId}  Dynamic Text Resource (template)',
    )

    const list = await dsh('list')
    expect(list.stdout).toMatch(/^everything\s+user\s+stdio\s+connected\s+\d+/m)

    const missing = await dsh('get', 'nope')
    expect(missing.code).toBe(1)
    expect(missing.stderr).toBe('dsh mcp: no MCP server named "nope" (known: everything)\n')

    const remove = await dsh('remove', 'everything')
    expect(remove.code).toBe(0)
    expect(remove.stdout).toBe(
      `Removed MCP server "everything" from the user settings (${join(home, 'settings.yaml')}).\n`,
    )
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).not.toContain('everything')
    const gone = await dsh('remove', 'everything')
    expect(gone.code).toBe(1)
    expect(gone.stderr).toBe(
      `dsh mcp: no MCP server named "everything" in the user settings (${join(home, 'settings.yaml')}) or ${join(cwd, '.mcp.json')}\n`,
    )
  })

  it('adds project servers to .mcp.json, which start only once the project is trusted', {
    timeout: 90_000,
  }, async () => {
    writeFileSync(join(cwd, '.mcp.json'), JSON.stringify({ other: true, mcpServers: {} }))
    const add = await dsh('add', '--scope', 'project', 'everything', '--', process.execPath, everything, 'stdio')
    expect(add.code).toBe(0)
    expect(add.stdout).toBe(
      `Added stdio MCP server "everything" to ${join(cwd, '.mcp.json')}.\nThe project's servers start once you trust its new content: dsh trust ${cwd}\n`,
    )
    const web = await dsh(
      'add',
      '--transport',
      'http',
      '--scope',
      'project',
      '--header',
      'Authorization: Bearer ${TOKEN}',
      'web',
      'https://example.invalid/mcp',
    )
    expect(web.code).toBe(0)
    expect(JSON.parse(readFileSync(join(cwd, '.mcp.json'), 'utf8'))).toEqual({
      other: true,
      mcpServers: {
        everything: { command: process.execPath, args: [everything, 'stdio'] },
        web: { type: 'http', url: 'https://example.invalid/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } },
      },
    })
    // Untrusted: listed, never started.
    const untrusted = await dsh('get', 'everything')
    expect(untrusted.code).toBe(0)
    expect(untrusted.stdout).toMatch(
      / {2}state: {6}disabled - the project is not trusted: run "dsh trust .*" to start it\n/,
    )
    expect(untrusted.stdout).toContain('  tools:      (none)')
    expect((await runDsh(['trust', cwd], { cwd, env })).code).toBe(0)
    const trusted = await dsh('get', 'everything')
    expect(trusted.stdout).toMatch(/ {2}state: {6}connected\n/)

    const remove = await dsh('remove', 'web', '--scope', 'project')
    expect(remove.code).toBe(0)
    expect(Object.keys(JSON.parse(readFileSync(join(cwd, '.mcp.json'), 'utf8')).mcpServers)).toEqual(['everything'])
  })

  it('prints usage errors in one line with status 2, and --help', { timeout: 30_000 }, async () => {
    const cases: Array<[string[], string]> = [
      [['add'], 'add needs a server name, then a command or URL'],
      [['add', '--scope', 'local', 'x', 'y'], '--scope local is not a dsh scope'],
      [['add', '--transport', 'websocket', 'x', 'y'], '--transport must be stdio, http or sse, not "websocket"'],
      [['add', 'x', 'https://h/mcp'], '"https://h/mcp" is a URL: give --transport http (or sse) for a remote server'],
      [['remove'], 'remove needs the name of a server'],
      [['remove', 'x', '--scope', 'global'], '--scope must be user or project, not "global"'],
      [['get'], 'get needs the name of a server'],
      [['lst'], 'unknown mcp command "lst"; the commands are "list", "get", "add", "remove" and "login"'],
    ]
    for (const [args, message] of cases) {
      const run = await dsh(...args)
      expect(run.code, args.join(' ')).toBe(2)
      expect(run.stderr).toMatch(
        new RegExp(`^dsh mcp: ${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*\ndsh mcp: see "dsh mcp --help"\n$`),
      )
    }
    const help = await dsh('add', '--help')
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('dsh mcp add [--transport stdio|http|sse] [--scope user|project]')
    const broken = join(cwd, 'broken')
    mkdirSync(broken)
    writeFileSync(join(broken, '.mcp.json'), '{not json')
    const bad = await runDsh(['mcp', 'add', '--scope', 'project', 'x', 'y'], { cwd: broken, env })
    expect(bad.code).toBe(1)
    expect(bad.stderr).toMatch(
      /^dsh mcp: .*broken\/\.mcp\.json: not valid JSON \(.*\); fix it first, nothing was written\n$/,
    )
  })
})
