// End-to-end through the real bins: what a project ships (a `.mcp.json` server, a Claude Code hook
// in `.claude/settings.json`) does not run in a one-shot `dsh -p` until `dsh trust DIR`, runs
// after it, and is skipped again once the file changes. The untrusted run prints one stderr line
// naming how to trust. The marker files are the observable effect of the commands running.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh, type DshRun } from '@dsh/cli-testkit'

const hooksOn = fileURLToPath(new URL('./fixtures/hooks-on.patch.yml', import.meta.url))

let servers: MockServer[] = []
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()))
  servers = []
})

function setup() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-trust-')))
  const project = join(root, 'project')
  mkdirSync(project, { recursive: true })
  mkdirSync(join(root, 'userhome'), { recursive: true })
  const env = { DSH_HOME: join(root, 'home'), HOME: join(root, 'userhome') }
  const dsh = async (args: string[], extra: string[] = []): Promise<DshRun> => {
    const server = await startMockServer({ steps: [{ text: 'ok' }] as never })
    servers.push(server)
    return runDsh([...extra, ...args], {
      cwd: project,
      env: { ...env, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' },
    })
  }
  const trust = (args: string[]) => runDsh(['trust', ...args], { cwd: root, env })
  return { root, project, dsh, trust }
}

const untrustedLines = (run: DshRun) => run.stderr.split('\n').filter((line) => line.includes('is not trusted'))

describe('project trust through the real bins', () => {
  it('starts a project .mcp.json server only after `dsh trust`, and asks again after an edit', {
    timeout: 120_000,
  }, async () => {
    const { root, project, dsh, trust } = setup()
    const marker = join(root, 'mcp-ran')
    const write = (file: string) =>
      writeFileSync(
        join(project, '.mcp.json'),
        JSON.stringify({ mcpServers: { pwn: { command: 'sh', args: ['-c', `echo ran >> ${file}`] } } }),
      )
    write(marker)

    const first = await dsh(['-p', 'hello'])
    expect(first.code).toBe(0)
    expect(first.stdout.trim()).toBe('ok')
    expect(existsSync(marker)).toBe(false)
    const lines = untrustedLines(first)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(`${project} is not trusted, so its MCP servers (pwn) did not start`)
    expect(lines[0]).toContain(`"dsh trust ${project}"`)
    expect(lines[0]).toContain('dsh trust --revoke')
    expect(lines[0]).toContain('dsh trust --list')

    const trusted = await trust([project])
    expect(trusted.code).toBe(0)
    expect(trusted.stdout).toContain(`pwn: sh -c 'echo ran >> ${marker}'`)

    const second = await dsh(['-p', 'hello'])
    expect(second.code).toBe(0)
    expect(untrustedLines(second)).toEqual([])
    expect(existsSync(marker), `the trusted run's stderr: ${second.stderr}`).toBe(true)

    // The file changes (another command): the consent no longer matches.
    const changed = join(root, 'mcp-ran-after-edit')
    write(changed)
    const third = await dsh(['-p', 'hello'])
    expect(third.code).toBe(0)
    expect(existsSync(changed)).toBe(false)
    expect(untrustedLines(third)).toHaveLength(1)

    const list = await trust(['--list'])
    expect(list.stdout).toContain(project)
    const revoked = await trust(['--revoke', project])
    expect(revoked.code).toBe(0)
    expect((await trust(['--list'])).stdout).toBe('No project is trusted.\n')
  })

  it('asks again when a project file that a trusted server runs is rewritten', { timeout: 120_000 }, async () => {
    const { root, project, dsh, trust } = setup()
    mkdirSync(join(project, 'tools'))
    const script = (file: string) => writeFileSync(join(project, 'tools', 'server.sh'), `echo ran >> ${file}\n`)
    const marker = join(root, 'script-ran')
    script(marker)
    writeFileSync(
      join(project, '.mcp.json'),
      JSON.stringify({ mcpServers: { local: { command: 'sh', args: ['tools/server.sh'] } } }),
    )
    expect((await trust([project])).code).toBe(0)
    expect((await dsh(['-p', 'hello'])).code).toBe(0)
    expect(readFileSync(marker, 'utf8')).toContain('ran')

    // .mcp.json is unchanged; the script it names is not (as a confined command could rewrite it).
    const rewritten = join(root, 'script-ran-after-rewrite')
    script(rewritten)
    const after = await dsh(['-p', 'hello'])
    expect(after.code).toBe(0)
    expect(existsSync(rewritten)).toBe(false)
    expect(untrustedLines(after)).toHaveLength(1)
  })

  it('runs a project Claude Code hook only after `dsh trust`, and asks again after an edit', {
    timeout: 120_000,
  }, async () => {
    const { root, project, dsh, trust } = setup()
    mkdirSync(join(project, '.claude'))
    const marker = join(root, 'hook-ran')
    const write = (file: string) =>
      writeFileSync(
        join(project, '.claude', 'settings.json'),
        JSON.stringify({
          hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: `echo ran >> ${file}` }] }] },
        }),
      )
    write(marker)

    const first = await dsh(['-p', 'hello'], ['--patch', hooksOn])
    expect(first.code).toBe(0)
    expect(existsSync(marker)).toBe(false)
    const lines = untrustedLines(first)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('its Claude Code hooks (UserPromptSubmit) did not start')

    expect((await trust([project])).code).toBe(0)
    const second = await dsh(['-p', 'hello'], ['--patch', hooksOn])
    expect(second.code).toBe(0)
    expect(untrustedLines(second)).toEqual([])
    expect(readFileSync(marker, 'utf8')).toContain('ran')

    const changed = join(root, 'hook-ran-after-edit')
    write(changed)
    const third = await dsh(['-p', 'hello'], ['--patch', hooksOn])
    expect(existsSync(changed)).toBe(false)
    expect(untrustedLines(third)).toHaveLength(1)
  })
})
