// End-to-end: the real `dsh --profile headless` bin (the base bundle's subagent rows), the DeepSeek
// adapter talking to @dsh/llm-mock-server, real bash in the sandbox, real session files.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { DSH_BIN, runDsh } from '@dsh/cli-testkit'

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

function workspace() {
  const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-subagent-'))
  const home = join(root, 'home')
  const cwd = join(root, 'work')
  mkdirSync(cwd, { recursive: true })
  return { root, home, cwd }
}

const call = (id: string, name: string, args: object) => ({ id, name, arguments: args })
const env = (home: string) => ({ DSH_HOME: home, DEEPSEEK_BASE_URL: server!.baseURL, DEEPSEEK_API_KEY: 'x' })

function parse(stdout: string) {
  const lines = stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
  const events = lines.filter((l) => l.type === 'event' && !l.subagent).map((l) => l.event)
  const childLines = lines.filter((l) => l.type === 'event' && l.subagent)
  return { result: lines.at(-1), events, childLines }
}

/** The text of the last tool message, by call id, of request `i`. */
function toolText(i: number, callId: string): string {
  const messages = (
    server!.requests[i].body as { messages: Array<{ role: string; content: string; tool_call_id?: string }> }
  ).messages
  return messages.find((m) => m.role === 'tool' && m.tool_call_id === callId)?.content ?? '(none)'
}

describe('dsh --profile headless with subagents', () => {
  it('three parallel spawn children each run bash; their answers are the tool results', {
    timeout: 90_000,
  }, async () => {
    const { home, cwd } = workspace()
    const child = { toolCalls: [call('c_bash', 'bash', { command: 'echo ran >> children.txt', description: 'mark' })] }
    server = await startMockServer({
      steps: [
        {
          toolCalls: [
            call('s1', 'subagent', { description: 'one', prompt: 'mark one' }),
            call('s2', 'subagent', { description: 'two', prompt: 'mark two' }),
            call('s3', 'subagent', { description: 'three', prompt: 'mark three' }),
          ],
        },
        // Children: each first request runs bash, each second one answers (any child may take any of them).
        child,
        child,
        child,
        { text: 'child done' },
        { text: 'child done' },
        { text: 'child done' },
        { expect: { lastRole: 'tool' }, text: 'all three done' },
      ] as never,
    })
    const run = await runDsh(['--profile', 'headless', '--output-format', 'stream-json', 'split the work'], {
      cwd,
      env: env(home),
    })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const { result, events, childLines } = parse(run.stdout)
    expect(result).toMatchObject({ type: 'result', result: 'all three done', reason: 'completed' })
    // The children's own events are in the stream too, tagged with the child id and parent.
    const childCalls = childLines
      .filter((l) => l.event.type === 'tool/call')
      .map((l) => [l.subagent.id, l.subagent.parentSessionId === result.sessionId, l.event.data.name])
    expect(childCalls.sort()).toEqual([
      ['sub-1', true, 'bash'],
      ['sub-2', true, 'bash'],
      ['sub-3', true, 'bash'],
    ])
    expect(new Set(childLines.map((l) => l.sessionId)).size).toBe(3)
    expect(readFileSync(join(cwd, 'children.txt'), 'utf8')).toBe('ran\nran\nran\n')
    expect(['s1', 's2', 's3'].map((id) => toolText(7, id))).toEqual(['child done', 'child done', 'child done'])
    const started = events.filter((e) => e.type === 'subagent/started')
    const finished = events.filter((e) => e.type === 'subagent/finished')
    expect(started.map((e) => e.data.id).sort()).toEqual(['sub-1', 'sub-2', 'sub-3'])
    expect(finished.map((e) => e.data.status)).toEqual(['completed', 'completed', 'completed'])
    // Each child's log is stored as a session of its own that names the parent, and reloads.
    const childId: string = started[0].data.sessionId
    const show = await runDsh(['--profile', 'headless', '--list-sessions', '--all', '--output-format', 'json'], {
      cwd,
      env: env(home),
    })
    const rows = JSON.parse(show.stdout) as Array<{ id: string; parentSession?: { sessionId: string } }>
    expect(
      rows
        .filter((r) => r.parentSession?.sessionId === result.sessionId)
        .map((r) => r.id)
        .sort(),
    ).toEqual(started.map((e) => e.data.sessionId).sort())
    expect(rows.find((r) => r.id === childId)).toBeDefined()
  })

  it("a background child's completion notice reaches the parent; a fork child sees the parent's history", {
    timeout: 90_000,
  }, async () => {
    const { home, cwd } = workspace()
    server = await startMockServer({
      steps: [
        // Run 1: the parent remembers a word.
        { text: 'noted: kiwi' },
        // Run 2: a background child and a slow bash in one step; the child answers while bash sleeps.
        {
          toolCalls: [
            call('bg', 'subagent', { description: 'look up', prompt: 'look something up', background: true }),
            call('sl', 'bash', { command: 'sleep 1.5', description: 'wait' }),
          ],
        },
        { expect: { lastContains: 'look something up' }, text: 'found it: 99' },
        {
          expect: { lastContains: 'Background subagent sub-1' },
          toolCalls: [
            call('fk', 'subagent', {
              provider: 'fork',
              description: 'recall',
              prompt: 'which word did I ask you to remember?',
            }),
          ],
        },
        // The fork child's request: the parent's first turn, then its prompt.
        { expect: { lastContains: 'which word' }, text: 'the word was kiwi' },
        { text: 'kiwi it is' },
      ] as never,
    })
    const first = await runDsh(['--profile', 'headless', '--output-format', 'json', 'remember the word kiwi'], {
      cwd,
      env: env(home),
    })
    expect(first.stderr).toBe('')
    const second = await runDsh(
      ['--profile', 'headless', '--continue', '--output-format', 'stream-json', 'look it up and recall'],
      { cwd, env: env(home) },
    )
    expect(second.stderr).toBe('')
    expect(second.code).toBe(0)
    const { result, events } = parse(second.stdout)
    expect(result.result).toBe('kiwi it is')
    expect(
      server.requests
        .filter((r) => r.outcome !== 'served')
        .map((r) => [r.index, r.outcome, JSON.stringify(r.body).slice(-400)]),
    ).toEqual([])
    expect(toolText(3, 'bg')).toMatch(/^Started subagent sub-1 \(spawn\) in the background/)
    const notice = events.find(
      (e) =>
        e.type === 'user/message' && e.data.source.kind === 'plugin' && e.data.source.plugin === '@dsh/tool-subagent',
    )
    expect(notice.data.content[0].text).toBe(
      '[Background subagent sub-1 ("look up") completed.]\nIts final answer:\nfound it: 99',
    )
    expect(toolText(5, 'fk')).toBe('the word was kiwi')
    const forkMessages = (server.requests[4].body as { messages: Array<{ role: string; content: string }> }).messages
    // Run 1's turn (with whatever context preceded it), then the fork prompt; not the running turn.
    const texts = forkMessages.map((m) => `${m.role}: ${m.content}`)
    expect(texts.at(-1)).toBe('user: which word did I ask you to remember?')
    expect(texts.at(-2)).toBe('assistant: noted: kiwi')
    expect(texts.some((t) => t.startsWith('user: ') && t.includes('remember the word kiwi'))).toBe(true)
    expect(texts.some((t) => t.includes('look it up and recall'))).toBe(false)
  })

  it('interrupt_agent stops a running child; after a SIGKILL mid-child, --continue lists it interrupted and its log reloads', {
    timeout: 90_000,
  }, async () => {
    const { home, cwd } = workspace()
    server = await startMockServer({
      steps: [
        // Run 1: interrupt a stalled background child.
        {
          toolCalls: [
            call('bg', 'subagent', { description: 'stuck', prompt: 'never answers', background: true }),
            call('sl', 'bash', { command: 'sleep 1', description: 'wait' }),
          ],
        },
        { events: [{ stall: true }] },
        { toolCalls: [call('int', 'interrupt_agent', { id: 'sub-1' }), call('ls', 'list_agents', {})] },
        { text: 'stopped it' },
        // Run 2: a foreground child that hangs until the host is killed.
        { toolCalls: [call('fg', 'subagent', { description: 'hang', prompt: 'hang forever' })] },
        { events: [{ stall: true }] },
        // Run 3 (--continue): the parent lists its children.
        { toolCalls: [call('ls2', 'list_agents', {})] },
        { text: 'listed' },
      ] as never,
    })
    const first = await runDsh(['--profile', 'headless', '--output-format', 'json', 'start and stop'], {
      cwd,
      env: env(home),
    })
    expect(first.stderr).toBe('')
    expect(JSON.parse(first.stdout)).toMatchObject({ result: 'stopped it', reason: 'completed' })
    expect(toolText(3, 'int')).toBe('Subagent sub-1 was interrupted (status: cancelled).')
    expect(toolText(3, 'ls')).toMatch(
      /^1 subagent:\nsub-1 {2}cancelled {2}spawn \(background\) {2}"stuck"\n {4}error \[INTERRUPTED\]/,
    )

    // Run 2, killed while its child waits for the model.
    const host = spawn(
      process.execPath,
      [DSH_BIN, '--profile', 'headless', '--resume', JSON.parse(first.stdout).sessionId, 'delegate and hang'],
      {
        cwd,
        env: { PATH: process.env.PATH!, HOME: home, ...env(home) },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    const exited = new Promise((resolve) => host.on('exit', (_code, signal) => resolve(signal)))
    while (server.requests.length < 6) await new Promise((r) => setTimeout(r, 20))
    // Let the batched session writes reach the disk before the kill (the batch window is 20 ms).
    await new Promise((r) => setTimeout(r, 300))
    host.kill('SIGKILL')
    expect(await exited).toBe('SIGKILL')

    const third = await runDsh(
      ['--profile', 'headless', '--continue', '--output-format', 'json', 'what happened to the children?'],
      { cwd, env: env(home) },
    )
    expect(third.stderr).toMatch(/warning/)
    const out = JSON.parse(third.stdout)
    expect(out).toMatchObject({ result: 'listed', sessionId: JSON.parse(first.stdout).sessionId })
    const listed = toolText(7, 'ls2')
    expect(listed).toMatch(/^2 subagents:\nsub-1 {2}cancelled/)
    expect(listed).toContain('sub-2  interrupted  spawn  "hang"')
    // The killed child's own log reloads (repaired) like any other session.
    const sessions = join(home, 'sessions')
    expect(readdirSync(sessions).length).toBeGreaterThan(0)
    const rows = JSON.parse(
      (
        await runDsh(['--profile', 'headless', '--list-sessions', '--all', '--output-format', 'json'], {
          cwd,
          env: env(home),
        })
      ).stdout,
    ) as Array<{ id: string; firstPrompt?: string; damaged?: string }>
    const hung = rows.find((r) => r.firstPrompt === 'hang forever')
    expect(hung).toBeDefined()
    expect(hung!.damaged).toBeUndefined()
  })

  it('an acp child (dsh-acp) and an sdk child (dsh-jsonrpc-agent) each complete a task', {
    timeout: 120_000,
  }, async () => {
    const { root, home, cwd } = workspace()
    writeFileSync(join(cwd, 'note.txt'), 'out-of-process\n')
    const acpBin = fileURLToPath(
      new URL('../../subagent-acp/node_modules/@dsh/acp-app/bin/dsh-acp.mjs', import.meta.url),
    )
    const sdkBin = fileURLToPath(
      new URL('../../subagent-sdk/node_modules/@dsh/sdk-server/bin/dsh-jsonrpc-agent.mjs', import.meta.url),
    )
    const patch = join(root, 'children.patch.yml')
    writeFileSync(
      patch,
      [
        '- id: subagent-acp',
        `  config: { command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(acpBin)}] }`,
        '- id: subagent-sdk',
        `  config: { command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(sdkBin)}] }`,
        '',
      ].join('\n'),
    )
    server = await startMockServer({
      steps: [
        {
          toolCalls: [
            call('a', 'subagent', { provider: 'acp', description: 'acp read', prompt: 'read note.txt (acp)' }),
          ],
        },
        { expect: { lastContains: '(acp)' }, toolCalls: [call('r1', 'read', { file_path: 'note.txt' })] },
        { expect: { lastContains: 'out-of-process' }, text: 'acp child read: out-of-process' },
        {
          expect: { lastContains: 'acp child read' },
          toolCalls: [
            call('s', 'subagent', { provider: 'sdk', description: 'sdk read', prompt: 'read note.txt (sdk)' }),
          ],
        },
        { expect: { lastContains: '(sdk)' }, toolCalls: [call('r2', 'read', { file_path: 'note.txt' })] },
        { expect: { lastContains: 'out-of-process' }, text: 'sdk child read: out-of-process' },
        { expect: { lastContains: 'sdk child read' }, text: 'both children answered' },
      ] as never,
    })
    const run = await runDsh(
      ['--profile', 'headless', '--patch', patch, '--output-format', 'stream-json', 'delegate out of process'],
      { cwd, env: env(home) },
    )
    expect(run.stderr).toBe('')
    expect(server.requests.filter((r) => r.outcome !== 'served').map((r) => r.index)).toEqual([])
    const { result, events } = parse(run.stdout)
    expect(result).toMatchObject({ result: 'both children answered', reason: 'completed' })
    expect(toolText(3, 'a')).toBe('acp child read: out-of-process')
    expect(toolText(6, 's')).toBe('sdk child read: out-of-process')
    const finished = events.filter((e) => e.type === 'subagent/finished').map((e) => [e.data.id, e.data.status])
    expect(finished).toEqual([
      ['sub-1', 'completed'],
      ['sub-2', 'completed'],
    ])
    const started = events.filter((e) => e.type === 'subagent/started').map((e) => e.data.provider)
    expect(started).toEqual(['acp', 'sdk'])
  })

  it("a child works under its parent's permission preset (--permission-mode read-only)", {
    timeout: 90_000,
  }, async () => {
    const { home, cwd } = workspace()
    server = await startMockServer({
      steps: [
        { toolCalls: [call('s', 'subagent', { description: 'write', prompt: 'create a file' })] },
        { toolCalls: [call('cb', 'bash', { command: 'echo x > made-by-child.txt', description: 'write a file' })] },
        { text: 'child tried' },
        { text: 'parent done' },
      ] as never,
    })
    const run = await runDsh(
      ['--profile', 'headless', '--permission-mode', 'read-only', '--output-format', 'json', 'delegate a write'],
      { cwd, env: env(home) },
    )
    expect(run.stderr).toBe('')
    expect(JSON.parse(run.stdout)).toMatchObject({ result: 'parent done' })
    expect(existsSync(join(cwd, 'made-by-child.txt'))).toBe(false)
    expect(toolText(2, 'cb')).toMatch(/Read-only file system|read-only/)
  })
})
