// `dsh acp` and `dsh jsonrpc` run the dedicated bins (dsh-acp, dsh-jsonrpc-agent) in the
// launcher's process: the real bin over real stdio, answering a real initialize frame.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'

const frames = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))

describe('dsh subcommands', () => {
  it('dsh acp is the ACP agent: it answers initialize on stdout and exits when stdin closes', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-sub-'))
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } }
    const run = await runDsh(['acp'], { cwd, env: { DSH_HOME: join(cwd, 'home') }, stdin: JSON.stringify(init) + '\n' })
    expect(run.code).toBe(0)
    const [reply] = frames(run.stdout)
    expect(reply).toMatchObject({ id: 1, result: { protocolVersion: 1, agentInfo: { name: 'dsh' } } })
    const version = await runDsh(['acp', '--version'], { cwd })
    expect(version.stdout).toMatch(/^dsh-acp \d/)
  })

  it('dsh jsonrpc is the SDK agent: it answers initialize with protocol frames only on stdout', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-sub-'))
    const init = { jsonrpc: '2.0', id: 7, method: 'initialize', params: { protocolVersion: 1 } }
    const run = await runDsh(['jsonrpc'], {
      cwd,
      env: { DSH_HOME: join(cwd, 'home') },
      stdin: JSON.stringify(init) + '\n',
    })
    expect(run.code).toBe(0)
    const replies = frames(run.stdout)
    expect(replies.every((f) => f.jsonrpc === '2.0')).toBe(true)
    expect(replies.find((f) => f.id === 7)).toHaveProperty('result')
    const help = await runDsh(['jsonrpc', '--help'], { cwd })
    expect(help.stdout).toContain('Usage: dsh-jsonrpc-agent')
  })

  it('a subcommand word after another argument is a task word, not a subcommand', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-sub-'))
    const run = await runDsh(['--profile', 'headless', 'acp', '--version'], {
      cwd,
      env: { DSH_HOME: join(cwd, 'home') },
    })
    expect(run.stdout).not.toContain('dsh-acp')
  })
})
