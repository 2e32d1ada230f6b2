// `dsh trust` through the real launcher: help, usage errors (exit 2, one line), a directory that
// ships nothing, a missing directory, a damaged store (exit 1, file kept), --list --json, --revoke.
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { parseTrustArgs } from '../src/cli.ts'

function fixture() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-trust-cli-')))
  const project = join(root, 'project')
  mkdirSync(project)
  const env = { DSH_HOME: join(root, 'home'), HOME: join(root, 'userhome') }
  return { root, project, env, trust: (args: string[]) => runDsh(['trust', ...args], { cwd: project, env }) }
}

describe('dsh trust', () => {
  it('prints its help and refuses bad usage with exit 2 and one line', async () => {
    const { trust } = fixture()
    const help = await trust(['--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/^Usage: dsh trust \[DIR\]/)
    for (const [args, message] of [
      [['--bogus'], 'unknown option "--bogus"'],
      [['--revoke', '--list'], '--revoke and --list cannot be combined'],
      [['a', 'b'], 'one directory at most (got "a" and "b")'],
      [['--list', 'a'], '--list takes no directory'],
      [['--profile'], '--profile needs a value'],
      [['--json'], '--json goes with --list'],
    ] as const) {
      const run = await trust([...args])
      expect(run.code).toBe(2)
      expect(run.stderr).toBe(`dsh trust: ${message}\ndsh trust: see "dsh trust --help"\n`)
    }
  })

  it('records what a directory ships in a 0600 store, lists it as JSON, and revokes it', async () => {
    const { project, env, trust, root } = fixture()
    const empty = await trust([])
    expect(empty.code).toBe(0)
    expect(empty.stdout).toBe(
      `${project} ships nothing dsh would run (for the profile "headless"); nothing was recorded.\n`,
    )

    writeFileSync(
      join(project, '.mcp.json'),
      JSON.stringify({
        mcpServers: {
          db: { command: 'db-server', args: ['--port', '5'], env: { TOKEN: '${DB_TOKEN}' } },
          web: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer ${T}' } },
        },
      }),
    )
    mkdirSync(join(project, '.claude'))
    writeFileSync(
      join(project, '.claude', 'settings.local.json'),
      JSON.stringify({
        hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: './check.sh' }] }] },
      }),
    )
    const first = await trust(['.'])
    expect(first.code).toBe(0)
    expect(first.stdout).toBe(
      [
        `${project} ships, for dsh to run on this machine:`,
        '  MCP servers (.mcp.json):',
        "    db: db-server --port 5 (env 'TOKEN=${DB_TOKEN}')",
        '    web: https://example.com/mcp (headers Authorization)',
        '  Claude Code hooks (.claude/settings.local.json):',
        '    PreToolUse[Bash]: ./check.sh',
        `Trusted: dsh runs these until the files change ("dsh trust --revoke ${project}" forgets it).`,
        '',
      ].join('\n'),
    )
    expect(statSync(join(env.DSH_HOME, 'trusted-projects.json')).mode & 0o777).toBe(0o600)
    expect((await trust([project])).stdout).toContain('Already trusted with exactly this content; nothing changed.')

    const list = await trust(['--list', '--json'])
    const entries = JSON.parse(list.stdout) as Array<{ dir: string; sources: Record<string, { hash: string }> }>
    expect(entries.map((e) => [e.dir, Object.keys(e.sources).sort()])).toEqual([
      [project, ['hooks-claude-code', 'mcp']],
    ])

    const revoked = await runDsh(['trust', '--revoke', project], { cwd: root, env })
    expect(revoked.stdout).toBe(`Revoked: dsh no longer runs what ${project} ships until you trust it again.\n`)
    expect((await trust(['--revoke'])).stdout).toBe(`${project} was not trusted; nothing changed.\n`)
  })

  it('fails clearly for a missing directory and a damaged store, changing nothing', async () => {
    const { project, env, trust } = fixture()
    const missing = await trust(['nowhere'])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/^dsh trust: .*\/project\/nowhere: no such directory \(ENOENT\)\n$/)

    writeFileSync(join(project, '.mcp.json'), JSON.stringify({ mcpServers: { db: { command: 'db-server' } } }))
    mkdirSync(env.DSH_HOME, { recursive: true })
    const store = join(env.DSH_HOME, 'trusted-projects.json')
    writeFileSync(store, 'not json', { mode: 0o600 })
    const damaged = await trust([])
    expect(damaged.code).toBe(1)
    expect(damaged.stderr).toMatch(
      /^dsh trust: .*trusted-projects\.json: damaged: not valid JSON .*; nothing was changed \(fix the file or move it away, then try again\)\n$/,
    )
    expect(readFileSync(store, 'utf8')).toBe('not json')
    expect((await trust(['--list'])).code).toBe(1)
  })

  it('parses the forms the help names', () => {
    expect(parseTrustArgs([])).toEqual({ action: 'trust', profile: 'headless', patches: [] })
    expect(parseTrustArgs(['d', '--profile', 'tui', '--patch', 'x.yml'])).toEqual({
      action: 'trust',
      dir: 'd',
      profile: 'tui',
      patches: ['x.yml'],
    })
    expect(parseTrustArgs(['--revoke', 'd'])).toEqual({ action: 'revoke', dir: 'd' })
    expect(parseTrustArgs(['--list', '--json'])).toEqual({ action: 'list', json: true })
  })
})
