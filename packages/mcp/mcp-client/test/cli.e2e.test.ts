// `dsh mcp list` through the real `dsh` launcher: the profile's servers (here from .mcp.json) with
// their state after the first connection attempt.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { formatStatusTable } from '../src/cli.ts'

const require = createRequire(import.meta.url)
const everything = join(
  require.resolve('@modelcontextprotocol/server-everything/package.json'),
  '..',
  'dist',
  'index.js',
)

describe('dsh mcp list', () => {
  it('prints each server with its source, transport, state, tool count and failure', { timeout: 60_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-mcp-list-'))
    const cwd = join(root, 'project')
    mkdirSync(cwd)
    writeFileSync(
      join(cwd, '.mcp.json'),
      JSON.stringify({
        mcpServers: {
          everything: { command: process.execPath, args: [everything, 'stdio'] },
          broken: { command: 'dsh-e2e-no-such-server' },
          bad: { url: 'ftp://example.invalid/' },
        },
      }),
    )
    const env = { DSH_HOME: join(root, 'home') }
    // Untrusted: the project's runnable servers are listed, not started; the invalid one is listed as such.
    const untrusted = await runDsh(['mcp', 'list'], { cwd, env })
    expect(untrusted.code).toBe(0)
    const before = untrusted.stdout.trim().split('\n')
    expect(before.find((l) => l.startsWith('everything'))).toMatch(
      /^everything\s+project\s+stdio\s+disabled\s+0\s+the project is not trusted: run "dsh trust .*" to start it$/,
    )
    expect(before.find((l) => l.startsWith('bad'))).toMatch(
      /^bad\s+project\s+-\s+invalid\s+0\s+"url" must be http or https/,
    )
    expect((await runDsh(['trust', cwd], { cwd, env })).code).toBe(0)
    const run = await runDsh(['mcp', 'list'], { cwd, env })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const lines = run.stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^NAME\s+SOURCE\s+TRANSPORT\s+STATE\s+TOOLS\s+DETAIL$/)
    expect(lines.find((l) => l.startsWith('everything'))).toMatch(/^everything\s+project\s+stdio\s+connected\s+\d+$/)
    expect(lines.find((l) => l.startsWith('broken'))).toMatch(
      /^broken\s+project\s+stdio\s+(retrying|failed)\s+0\s+could not start "dsh-e2e-no-such-server": ENOENT/,
    )
    expect(lines.find((l) => l.startsWith('bad'))).toMatch(
      /^bad\s+project\s+-\s+invalid\s+0\s+"url" must be http or https/,
    )

    const json = await runDsh(['mcp', 'list', '--json'], { cwd, env })
    const list = JSON.parse(json.stdout) as { name: string; tools: string[] }[]
    expect(list.find((s) => s.name === 'everything')!.tools).toContain('mcp__everything__echo')

    const usage = await runDsh(['mcp', 'lst'], { cwd, env })
    expect(usage.code).toBe(2)
    expect(usage.stderr).toBe(
      'dsh mcp: unknown mcp command "lst"; the commands are "list", "get", "add", "remove" and "login"\ndsh mcp: see "dsh mcp --help"\n',
    )
  })

  it('says so when nothing is configured', () => {
    expect(formatStatusTable([])).toBe('No MCP servers are configured (rows, .mcp.json or the mcpServers settings).\n')
  })
})
