// The model writes a plugin and dsh runs it, through the real `dsh --profile acp` with the
// official ACP client as the editor (it answers the approval) and @dsh/llm-mock-server as the
// model. Rows: @dsh/cordis-host-runner and @dsh/tool-cordis added by a --patch. The plugin's
// `dsh.exec` goes through the shell seam, so in workspace-write it runs confined by bwrap: it
// writes in the workspace, not in $DSH_HOME. A refused approval runs nothing.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import * as acp from '@agentclientprotocol/sdk'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { DSH_BIN } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

vi.setConfig({ testTimeout: 60_000 })

const PATCH = `- id: session-persistence-jsonl
  config: { compression: none, batchWindowMs: 20 }
- insert:
    - id: cordis-host-runner
      name: "@dsh/cordis-host-runner"
    - id: tool-cordis
      name: "@dsh/tool-cordis"
`

const CODE = [
  'let n = 0',
  "dsh.handle('bump', (input) => { n += input.by; return { n } })",
  "dsh.handle('write', async (input) => (await dsh.exec(input.command)).exitCode)",
  "dsh.handle('probe', () => {",
  '  let made',
  "  try { made = dsh.handle.constructor('return typeof process')() } catch (e) { made = 'refused: ' + e.name }",
  '  return [typeof process, typeof require, typeof setTimeout, made]',
  '})',
  "dsh.log('counter ready')",
].join('\n')

let server: MockServer | undefined
let child: ReturnType<typeof spawn> | undefined
afterEach(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL')
  await server?.close()
})

/** Tool result text the model got in request `i` (the last tool message). */
const toolText = (s: MockServer, i: number) => {
  const messages = (s.requests[i].body as { messages: { role: string; content: string }[] }).messages
  return messages.filter((m) => m.role === 'tool').at(-1)?.content ?? ''
}

async function session(steps: (home: string) => unknown[], allow: boolean) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-tool-cordis-')))
  const home = join(root, 'home')
  server = await startMockServer({ steps: steps(home) as never })
  const cwd = join(root, 'work')
  mkdirSync(cwd, { recursive: true })
  mkdirSync(home, { recursive: true })
  const patch = join(root, 'cordis.patch.yml')
  writeFileSync(patch, PATCH)
  const env = {
    PATH: process.env.PATH,
    DSH_HOME: home,
    HOME: home,
    DEEPSEEK_BASE_URL: server.baseURL,
    DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
  }
  const proc = spawn(process.execPath, [DSH_BIN, '--profile', 'acp', '--patch', patch], {
    cwd,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  child = proc
  let stderr = ''
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const exited = new Promise<number | null>((resolve) => proc.on('close', resolve))
  const permissions: acp.RequestPermissionRequest[] = []
  const input = new ReadableStream<Uint8Array>({
    start(c) {
      proc.stdout.on('data', (d: Buffer) => c.enqueue(new Uint8Array(d)))
      proc.stdout.on('end', () => c.close())
    },
  })
  const conn = acp
    .client({ name: 'tool-cordis-test' })
    .onRequest('session/request_permission', ({ params }) => {
      permissions.push(params)
      const kind = allow ? 'allow_once' : 'reject_once'
      const option = params.options.find((o) => o.kind === kind)
      return { outcome: { outcome: 'selected', optionId: option!.optionId } }
    })
    .connect(acp.ndJsonStream(Writable.toWeb(proc.stdin) as WritableStream<Uint8Array>, input))
  await conn.agent.request('initialize', { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} })
  const { sessionId } = await conn.agent.request('session/new', { cwd, mcpServers: [] })
  const done = await conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'go' }] })
  proc.stdin.end()
  const code = await exited
  conn.close()
  expect(code, stderr).toBe(0)
  expect(done.stopReason).toBe('end_turn')
  const logFile = readdirSync(join(home, 'sessions'), { recursive: true })
    .map(String)
    .find((f) => /session\.jsonl(\.zstd)?$/.test(f))
  return { root, home, cwd, permissions, server, logFile: logFile ? join(home, 'sessions', logFile) : undefined }
}

const call = (name: string, args: unknown) => ({ toolCalls: [{ name, arguments: args }] })

describe('tool-cordis over the dynamic host runner', () => {
  it('defines, runs after approval, invokes handlers (state, confined exec, no host globals) and logs it', async () => {
    const s = await session(
      (home) => [
        call('cordis_define', { name: 'counter', description: 'Counts and writes files.', code: CODE }),
        call('cordis_run', { name: 'counter' }),
        call('cordis_invoke', { name: 'counter', handler: 'bump', input: { by: 2 } }),
        call('cordis_invoke', { name: 'counter', handler: 'bump', input: { by: 3 } }),
        call('cordis_invoke', { name: 'counter', handler: 'write', input: { command: 'echo in > inside.txt' } }),
        call('cordis_invoke', {
          name: 'counter',
          handler: 'write',
          input: { command: `echo planted > '${join(home, 'planted.txt')}'` },
        }),
        call('cordis_invoke', { name: 'counter', handler: 'probe' }),
        call('cordis_invoke', { name: 'counter', handler: 'nope' }),
        call('cordis_list', {}),
        { text: 'Done.' },
      ],
      true,
    )
    expect(s.permissions).toHaveLength(1)
    expect(JSON.stringify(s.permissions[0].toolCall)).toContain('counter')
    expect(toolText(s.server, 1)).toMatch(/Defined counter/)
    expect(toolText(s.server, 2)).toBe('counter is running. Handlers: bump, write, probe.')
    expect(toolText(s.server, 3)).toBe('{"n":2}')
    expect(toolText(s.server, 4)).toBe('{"n":5}')
    expect(toolText(s.server, 5)).toBe('0')
    expect(readFileSync(join(s.cwd, 'inside.txt'), 'utf8')).toBe('in\n')
    // Confined like bash: $DSH_HOME is not writable in workspace-write.
    expect(toolText(s.server, 6)).not.toBe('0')
    expect(existsSync(join(s.home, 'planted.txt'))).toBe(false)
    expect(toolText(s.server, 7)).toBe('["undefined","undefined","undefined","refused: EvalError"]')
    expect(toolText(s.server, 8)).toMatch(/UNKNOWN_HANDLER.*has no handler "nope" \(it has: bump, write, probe\)/)
    expect(toolText(s.server, 9)).toMatch(/- counter \[running\] Counts and writes files\.[\s\S]*counter ready/)
    const log = readFileSync(s.logFile!, 'utf8')
    expect(log).toMatch(/"type":"cordis\/define"/)
    expect(log).toMatch(/"type":"cordis\/run"[^\n]*"ok":true/)
  })

  it('a refused approval runs nothing: the model gets NOT_APPROVED and the code never started', async () => {
    const s = await session(
      () => [
        call('cordis_define', { name: 'counter', description: 'Counts.', code: CODE }),
        call('cordis_run', { name: 'counter' }),
        call('cordis_invoke', { name: 'counter', handler: 'bump', input: { by: 1 } }),
        call('cordis_define', { name: 'Bad Name', description: 'x', code: 'dsh.log(1)' }),
        call('cordis_retract', { name: 'counter' }),
        call('cordis_list', {}),
        { text: 'Refused.' },
      ],
      false,
    )
    expect(s.permissions).toHaveLength(1)
    expect(toolText(s.server, 2)).toMatch(/^Error \[NOT_APPROVED\]: running counter was not approved \(rejected/)
    expect(toolText(s.server, 3)).toBe('Error [NOT_RUNNING]: counter is not running')
    expect(toolText(s.server, 4)).toMatch(/^Error \[INVALID_NAME\]: name "Bad Name" is not valid/)
    expect(toolText(s.server, 5)).toBe('Retracted counter.')
    expect(toolText(s.server, 6)).toBe('No plugins are defined in this session.')
    const log = readFileSync(s.logFile!, 'utf8')
    expect(log).toMatch(/"type":"cordis\/define"/)
    expect(log).not.toMatch(/"type":"cordis\/run"/)
  })
})
