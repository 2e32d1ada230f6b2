// End-to-end: children started through another process are confined like their parent (issue
// #35). The real `dsh --profile headless` bin is the parent; its `acp` and `sdk` children are the
// real `dsh-acp` and `dsh-jsonrpc-agent` bins; one @dsh/llm-mock-server scripts all of them (the
// requests arrive one after another: parent, child, grandchild...). Real bash in the real sandbox.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const acpBin = fileURLToPath(new URL('../../subagent-acp/node_modules/@dsh/acp-app/bin/dsh-acp.mjs', import.meta.url))
const sdkBin = fileURLToPath(
  new URL('../../subagent-sdk/node_modules/@dsh/sdk-server/bin/dsh-jsonrpc-agent.mjs', import.meta.url),
)

/** A workspace, a home, and a --patch layer that points the acp and sdk rows at the real bins. */
function workspace(extraLayer: string[] = []) {
  const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-subagent-confine-'))
  const home = join(root, 'home')
  const cwd = join(root, 'work')
  mkdirSync(cwd, { recursive: true })
  const patch = join(root, 'children.patch.yml')
  writeFileSync(
    patch,
    [
      '- id: subagent-acp',
      `  config: { command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(acpBin)}], stopGraceMs: 500 }`,
      '- id: subagent-sdk',
      `  config: { command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(sdkBin)}] }`,
      ...extraLayer,
      '',
    ].join('\n'),
  )
  return { home, cwd, patch }
}

const call = (id: string, name: string, args: object) => ({ id, name, arguments: args })
const env = (home: string) => ({ DSH_HOME: home, DEEPSEEK_BASE_URL: server!.baseURL, DEEPSEEK_API_KEY: 'x' })

/** The text of the tool message answering `callId` in request `i`. */
function toolText(i: number, callId: string): string {
  const messages = (
    server!.requests[i].body as { messages: Array<{ role: string; content: string; tool_call_id?: string }> }
  ).messages
  return messages.find((m) => m.role === 'tool' && m.tool_call_id === callId)?.content ?? '(none)'
}

/** Parent delegates to `provider`; the child runs `echo x > made-by-child.txt`, then answers. */
function writeScript(provider: 'acp' | 'sdk') {
  return [
    { toolCalls: [call('s', 'subagent', { provider, description: 'write', prompt: `create a file (${provider})` })] },
    {
      expect: { lastContains: `(${provider})` },
      toolCalls: [call('cb', 'bash', { command: 'echo x > made-by-child.txt', description: 'write a file' })],
    },
    { expect: { lastRole: 'tool' }, text: 'child tried' },
    { expect: { lastContains: 'child tried' }, text: 'parent done' },
  ]
}

async function delegateWrite(
  provider: 'acp' | 'sdk',
  mode: 'read-only' | 'workspace-write',
  extraLayer: string[] = [],
) {
  const { home, cwd, patch } = workspace(extraLayer)
  server = await startMockServer({ steps: writeScript(provider) as never })
  const run = await runDsh(
    [
      '--profile',
      'headless',
      '--patch',
      patch,
      '--permission-mode',
      mode,
      '--output-format',
      'json',
      'delegate a write',
    ],
    { cwd, env: env(home) },
  )
  expect(run.stderr).toBe('')
  expect(server.requests.filter((r) => r.outcome !== 'served').map((r) => r.index)).toEqual([])
  expect(JSON.parse(run.stdout)).toMatchObject({ result: 'parent done' })
  return { cwd, childTool: toolText(2, 'cb') }
}

describe('subagents in another process are confined like their parent', () => {
  it("a read-only parent's acp child cannot write; the same parent in workspace-write can", {
    timeout: 120_000,
  }, async () => {
    const ro = await delegateWrite('acp', 'read-only')
    expect(existsSync(join(ro.cwd, 'made-by-child.txt'))).toBe(false)
    expect(ro.childTool).toMatch(/Read-only file system|Permission denied/)

    const rw = await delegateWrite('acp', 'workspace-write')
    expect(readFileSync(join(rw.cwd, 'made-by-child.txt'), 'utf8')).toBe('x\n')
  })

  it("a read-only parent's sdk child cannot write; the same parent in workspace-write can", {
    timeout: 120_000,
  }, async () => {
    const ro = await delegateWrite('sdk', 'read-only')
    expect(existsSync(join(ro.cwd, 'made-by-child.txt'))).toBe(false)
    expect(ro.childTool).toMatch(/Read-only file system|Permission denied/)

    const rw = await delegateWrite('sdk', 'workspace-write')
    expect(readFileSync(join(rw.cwd, 'made-by-child.txt'), 'utf8')).toBe('x\n')
  })

  it("a layer that makes the child ignore DSH_PERMISSION_MODE still cannot loosen the parent's mode", {
    timeout: 120_000,
  }, async () => {
    // The parent's own --patch (passed on to the child) turns the presets' variable off: the child's
    // preset default would be workspace-write, but its sessions keep the read-only floor.
    const presetsOff = ['- id: permission-presets', "  config: { default: workspace-write, env: '' }"]
    const ro = await delegateWrite('acp', 'read-only', presetsOff)
    expect(existsSync(join(ro.cwd, 'made-by-child.txt'))).toBe(false)
    expect(ro.childTool).toMatch(/Read-only file system|Permission denied/)
  })

  it("an sdk child keeps the parent's whole policy, also what came from a layer it does not read (the home patch)", {
    timeout: 120_000,
  }, async () => {
    const { home, cwd, patch } = workspace()
    writeFileSync(join(cwd, 'plain.txt'), 'plain-words\n')
    writeFileSync(join(cwd, 'secret.txt'), 'secret-words\n')
    // The parent's home patch hides secret.txt; dsh-jsonrpc-agent does not read the home patch.
    mkdirSync(home, { recursive: true })
    writeFileSync(
      join(home, 'cordis.patch.yml'),
      `- id: sandbox-policy\n  config: { hiddenPaths: [${JSON.stringify(join(realpathSync(cwd), 'secret.txt'))}] }\n`,
    )
    server = await startMockServer({
      steps: [
        {
          toolCalls: [call('s', 'subagent', { provider: 'sdk', description: 'read', prompt: 'read both files (sdk)' })],
        },
        {
          expect: { lastContains: '(sdk)' },
          toolCalls: [call('cb', 'bash', { command: 'cat plain.txt; cat secret.txt', description: 'read both' })],
        },
        { expect: { lastRole: 'tool' }, text: 'child read' },
        { expect: { lastContains: 'child read' }, text: 'parent done' },
      ] as never,
    })
    // Read-only, so the hidden file lies under no writable root (which the Landlock runner could not carve).
    const run = await runDsh(
      [
        '--profile',
        'headless',
        '--patch',
        patch,
        '--permission-mode',
        'read-only',
        '--output-format',
        'json',
        'delegate a read',
      ],
      { cwd, env: env(home) },
    )
    expect(run.stderr).toBe('')
    expect(server.requests.filter((r) => r.outcome !== 'served').map((r) => r.index)).toEqual([])
    const childTool = toolText(2, 'cb')
    expect(childTool).toContain('plain-words')
    expect(childTool).not.toContain('secret-words')
    // The generated layer lived in a private directory under $DSH_HOME/run, gone with the child.
    expect(readdirSync(join(home, 'run')).filter((name) => name.startsWith('subagent-'))).toEqual([])
  })

  it('a chain of acp children stops at the depth limit with an error the model can act on', {
    timeout: 120_000,
  }, async () => {
    const { home, cwd, patch } = workspace()
    server = await startMockServer({
      steps: [
        // Parent (depth 0) -> child (depth 1) -> grandchild (depth 2, the default limit) -> refused.
        {
          toolCalls: [
            call('d1', 'subagent', { provider: 'acp', description: 'level one', prompt: 'delegate further (level 1)' }),
          ],
        },
        {
          expect: { lastContains: '(level 1)' },
          toolCalls: [
            call('d2', 'subagent', { provider: 'acp', description: 'level two', prompt: 'delegate further (level 2)' }),
          ],
        },
        {
          expect: { lastContains: '(level 2)' },
          toolCalls: [
            call('d3', 'subagent', {
              provider: 'acp',
              description: 'level three',
              prompt: 'delegate further (level 3)',
            }),
          ],
        },
        { expect: { lastRole: 'tool' }, text: 'level 2 could not delegate' },
        { expect: { lastContains: 'level 2 could not delegate' }, text: 'level 1 relayed' },
        { expect: { lastContains: 'level 1 relayed' }, text: 'parent done' },
      ] as never,
    })
    const run = await runDsh(
      ['--profile', 'headless', '--patch', patch, '--output-format', 'json', 'delegate down a chain'],
      { cwd, env: env(home) },
    )
    expect(run.stderr).toBe('')
    expect(server.requests.filter((r) => r.outcome !== 'served').map((r) => r.index)).toEqual([])
    expect(JSON.parse(run.stdout)).toMatchObject({ result: 'parent done' })
    expect(server.requests).toHaveLength(6)
    const refused = toolText(3, 'd3')
    expect(refused).toContain('DEPTH_LIMIT')
    expect(refused).toContain(
      'delegation depth limit reached: this agent is at depth 2 (it is itself a subagent in a process its parent started, DSH_SUBAGENT_DEPTH=2) and the limit is 2; do the work yourself',
    )
  })

  it('a malformed inherited depth fails the start with one line naming the variable', { timeout: 60_000 }, async () => {
    const { home, cwd } = workspace()
    server = await startMockServer({ steps: [{ text: 'never asked' }] as never })
    const run = await runDsh(['--profile', 'headless', 'hello'], {
      cwd,
      env: { ...env(home), DSH_SUBAGENT_DEPTH: 'two' },
    })
    expect(run.code).not.toBe(0)
    expect(run.stderr.trim()).toBe(
      'dsh: boot failed: row subagents (@dsh/subagent): apply failed: DSH_SUBAGENT_DEPTH must be a whole number from 0 to 999 (got "two"); it is set by a parent dsh for its subagent process',
    )
    expect(server.requests).toHaveLength(0)
  })
})
