// `dsh sessions` boots only the session rows (the `keep` operation of sessions.patch.yml): a
// configured MCP server does not start, the rest of the profile's rows are disabled, the prelinked
// sessions stack holds only what stays enabled, and a profile's own persistence backend (SQLite
// here) is still the one the command reads.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 })

const repo = fileURLToPath(new URL('../../../../', import.meta.url))
// server-everything is a dependency of the MCP client package, resolved from there.
const everything = join(
  createRequire(join(repo, 'packages/mcp/mcp-client/package.json')).resolve(
    '@modelcontextprotocol/server-everything/package.json',
  ),
  '..',
  'dist',
  'index.js',
)
const sqliteRow = join(repo, 'packages/session/session-persistence-sqlite/dist/index.js')

let mock: MockServer
let root: string
const env = (home: string) => ({
  DSH_HOME: home,
  HOME: home,
  DEEPSEEK_BASE_URL: mock.baseURL,
  DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
})

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-sessions-light-')))
  mock = await startMockServer({ steps: [{ text: 'first answer' }, { text: 'second answer' }] as never })
})

afterAll(async () => {
  await mock?.close()
  rmSync(root, { recursive: true, force: true })
})

/** The ids of the rows `--dump-config` shows enabled. */
function enabledRows(dump: string): string[] {
  const ids: string[] = []
  let current: string | undefined
  for (const line of dump.split('\n')) {
    const id = /^ {4}- id: (\S+)$/.exec(line)
    if (id) {
      if (current) ids.push(current)
      current = id[1]
    } else if (/^ {6}disabled: true$/.test(line)) current = undefined
  }
  if (current) ids.push(current)
  return ids
}

describe('dsh sessions boots only the session rows', () => {
  it('starts no MCP server of the profile; a one-shot with the same profile does', async () => {
    const home = join(root, 'mcp-home')
    const cwd = join(root, 'mcp-work')
    mkdirSync(home, { recursive: true })
    mkdirSync(cwd, { recursive: true })
    const marker = join(root, 'mcp-started')
    // The server's command writes the marker first thing (a shell, milliseconds after the spawn),
    // then runs server-everything over stdio.
    const servers = {
      marker: {
        command: '/bin/sh',
        args: ['-c', 'echo started > "$0"; exec "$1" "$2" stdio', marker, process.execPath, everything],
      },
    }
    writeFileSync(
      join(home, 'cordis.patch.yml'),
      `- id: mcp\n  config:\n    servers: ${JSON.stringify(servers)}\n    projectFile: false\n    userSettings: false\n`,
    )
    const listing = await runDsh(['sessions', '--all'], { cwd, env: { ...env(home), DSH_DEBUG: '1' } })
    expect(listing.code, listing.stderr).toBe(0)
    expect(listing.stderr).toContain('dsh: no stored sessions')
    expect(existsSync(marker)).toBe(false)
    // The boot took the prelinked sessions stack, which holds no MCP client code.
    expect(listing.stderr).toMatch(
      /rows from prelinked stack stack-bundles-headless\+packages-session-sessions-cli-sessions/,
    )
    const manifest = JSON.parse(readFileSync(join(repo, 'prelinked/dsh/manifest.json'), 'utf8'))
    const stack = manifest.stacks['stack-bundles-headless+packages-session-sessions-cli-sessions']
    expect(stack.modules.some((url: string) => url.includes('/mcp/mcp-client/'))).toBe(false)
    expect(stack.modules.some((url: string) => url.includes('/session/sessions-cli/'))).toBe(true)
    // Positive control: the same profile's one-shot starts the server (its tool reaches the model).
    const run = await runDsh(['-p', 'hello'], { cwd, env: env(home) })
    expect(run.code, run.stderr).toBe(0)
    expect(existsSync(marker)).toBe(true)
    const tools = (mock.requests.at(-1)!.body as { tools?: { function: { name: string } }[] }).tools ?? []
    expect(tools.map((t) => t.function.name)).toContain('mcp__marker__echo')
    // And the session it wrote (with the MCP client's and other plugins' event types) lists.
    const again = await runDsh(['sessions', '--all', '--output-format', 'json'], { cwd, env: env(home) })
    expect(again.code, again.stderr).toBe(0)
    expect(JSON.parse(again.stdout).map((r: { title: string }) => r.title)).toEqual(['hello'])
  })

  it('disables every row but the session rows, and --dump-config shows it', async () => {
    const home = join(root, 'dump-home')
    const run = await runDsh(['--dump-config', 'sessions'], { cwd: root, env: env(home) })
    expect(run.code, run.stderr).toBe(0)
    expect(enabledRows(run.stdout)).toEqual([
      'home-paths',
      'cmdline',
      'settings',
      'native-addons',
      'session',
      'session-persistence-jsonl',
      'session-persistence',
      'session-title',
      'session-query',
      'sessions-cli-projections',
      'sessions-cli-projection-cache',
      'sessions-cli-stats',
      'sessions-cli',
    ])
  })

  it("reads the profile's own persistence backend (SQLite) instead of the JSONL store", async () => {
    const home = join(root, 'sqlite-home')
    const cwd = join(root, 'sqlite-work')
    mkdirSync(home, { recursive: true })
    mkdirSync(cwd, { recursive: true })
    const database = join(root, 'store.sqlite')
    writeFileSync(
      join(home, 'cordis.patch.yml'),
      `- id: session-persistence-jsonl\n  disabled: true\n- insert:\n    - id: session-persistence-sqlite\n      name: ${JSON.stringify(sqliteRow)}\n      config: { path: ${JSON.stringify(database)} }\n`,
    )
    const run = await runDsh(['-p', 'stored in sqlite'], { cwd, env: env(home) })
    expect(run.code, run.stderr).toBe(0)
    expect(existsSync(database)).toBe(true)
    expect(existsSync(join(home, 'sessions'))).toBe(false)
    const listing = await runDsh(['sessions', '--output-format', 'json'], { cwd, env: env(home) })
    expect(listing.code, listing.stderr).toBe(0)
    const rows = JSON.parse(listing.stdout)
    expect(rows.map((r: { title: string }) => r.title)).toEqual(['stored in sqlite'])
    const show = await runDsh(['sessions', 'show', rows[0].id, '--output-format', 'json'], { cwd, env: env(home) })
    expect(show.code, show.stderr).toBe(0)
    expect(JSON.parse(show.stdout)).toMatchObject({ id: rows[0].id, turns: 1 })
    // Nothing was written to the default JSONL store by the listing either.
    expect(existsSync(join(home, 'sessions'))).toBe(false)
  })
})
