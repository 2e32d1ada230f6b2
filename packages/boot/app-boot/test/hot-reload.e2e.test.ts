// Hot reload in a long-lived host (issue 24): the real dsh-jsonrpc-agent serves a session while
// its --patch file is edited. A config change and a disabled row take effect without a restart;
// an invalid edit is reported in one line and the old tree keeps serving the same session.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

const BIN = fileURLToPath(new URL('../../../sdk/server/bin/dsh-jsonrpc-agent.mjs', import.meta.url))
const HELLO = fileURLToPath(new URL('../../../../examples/plugin-hello/index.js', import.meta.url))

let child: ChildProcess | undefined
let mock: MockServer | undefined
afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL')
  await mock?.close()
})

interface Frame {
  id?: number
  method?: string
  params?: any
  result?: any
  error?: any
}

it('a running SDK host picks up a changed config and a disabled row, and refuses invalid edits while serving', async () => {
  const call = (id: string) => ({ toolCalls: [{ id, name: 'hello', arguments: { name: 'Ada' } }] })
  mock = await startMockServer({
    steps: [
      call('c1'),
      { expect: { lastRole: 'tool', lastContains: 'Hello, Ada!' }, text: 'one' },
      call('c2'),
      { expect: { lastRole: 'tool', lastContains: 'Howdy, Ada!' }, text: 'two' },
      call('c3'),
      { expect: { lastRole: 'tool', lastContains: 'Howdy, Ada!' }, text: 'three' },
      { text: 'four' },
    ] as never,
  })
  const root = mkdtempSync(join(tmpdir(), 'dsh-hot-reload-'))
  const patch = join(root, 'plugins.patch.yml')
  const row = (config: string, extra = '') =>
    `- insert:\n    - id: hello\n      name: ${JSON.stringify(HELLO)}\n      config: ${config}\n${extra}`
  writeFileSync(patch, row('{ greeting: Hello }'))

  child = spawn(process.execPath, [BIN, '--patch', patch], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DSH_HOME: join(root, 'home'),
      DEEPSEEK_BASE_URL: mock.baseURL,
      DEEPSEEK_API_KEY: 'sk-test',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const frames: Frame[] = []
  let stderr = ''
  let buffer = ''
  const waiters: (() => void)[] = []
  const wake = () => {
    for (const w of waiters.splice(0)) w()
  }
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    const lines = (buffer + d).split('\n')
    buffer = lines.pop()!
    for (const l of lines) frames.push(JSON.parse(l))
    wake()
  })
  child.stderr!.setEncoding('utf8').on('data', (d: string) => ((stderr += d), wake()))
  child.on('close', wake)
  const until = async <T>(probe: () => T | undefined): Promise<T> => {
    for (;;) {
      const hit = probe()
      if (hit !== undefined) return hit
      if (child!.exitCode !== null) throw new Error(`host exited; stderr: ${stderr}`)
      await new Promise<void>((r) => waiters.push(r))
    }
  }
  let nextId = 1
  const request = async (method: string, params: unknown) => {
    const id = nextId++
    child!.stdin!.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n')
    const f = await until(() => frames.find((x) => x.id === id))
    if (f.error) throw new Error(`${method}: ${JSON.stringify(f.error)}`)
    return f.result
  }
  const stderrLine = (pattern: RegExp, from: number) =>
    until(() =>
      stderr
        .slice(from)
        .split('\n')
        .find((l) => pattern.test(l)),
    )
  const prompt = async (sessionId: string, turn: number) => {
    await request('session/prompt', { sessionId, prompt: 'greet Ada' })
    const idle = await until(() =>
      frames.find((f) => f.method === 'session/status' && f.params.status === 'idle' && f.params.turn === turn),
    )
    return idle.params.result.text as string
  }
  const offered = (i: number) =>
    ((mock!.requests[i].body as { tools?: { function: { name: string } }[] }).tools ?? []).map((t) => t.function.name)

  await request('initialize', { protocolVersion: 1 })
  const { sessionId } = await request('session/create', { cwd: root })
  expect(await prompt(sessionId, 0)).toBe('one')
  expect(offered(0)).toContain('hello')

  // A changed config: only that row restarts; the session goes on.
  let mark = stderr.length
  writeFileSync(patch, row('{ greeting: Howdy }'))
  expect(await stderrLine(/reload/, mark)).toBe('dsh-jsonrpc-agent: reloaded: changed hello')
  expect(await prompt(sessionId, 1)).toBe('two')

  // A config the plugin's schema refuses: one line naming file, row and field; the old row keeps serving.
  mark = stderr.length
  writeFileSync(patch, row('{ greeting: Hi, punctuation: "?" }'))
  const refused = await stderrLine(/reload/, mark)
  expect(refused, stderr).toMatch(
    /^dsh-jsonrpc-agent: reload refused: row hello \(.*index\.js\) in .*plugins\.patch\.yml: invalid config: field config\.punctuation: .*; keeping the running tree$/,
  )
  // Malformed YAML: refused with file:line:col.
  mark = stderr.length
  writeFileSync(patch, '- insert:\n    - id: hello\n      name: [\n')
  expect(await stderrLine(/reload/, mark)).toMatch(
    /^dsh-jsonrpc-agent: reload refused: .*plugins\.patch\.yml:\d+:\d+: .*; keeping the running tree$/,
  )
  expect(await prompt(sessionId, 2)).toBe('three')

  // A disabled row: its tool is gone from the next request.
  mark = stderr.length
  writeFileSync(patch, row('{ greeting: Howdy }', '- id: hello\n  disabled: true\n'))
  expect(await stderrLine(/reload/, mark)).toBe('dsh-jsonrpc-agent: reloaded: changed hello')
  expect(await prompt(sessionId, 3)).toBe('four')
  expect(offered(6)).not.toContain('hello')
  expect(offered(4)).toContain('hello')

  await request('shutdown', {})
  child.stdin!.end()
  expect(await new Promise((r) => (child!.exitCode !== null ? r(child!.exitCode) : child!.on('close', r)))).toBe(0)
}, 120_000)
