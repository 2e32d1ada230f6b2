// End-to-end: the real `dsh-acp` bin in a subprocess (base bundle + the ACP row), driven by the
// ACP SDK's client side over stdio; the DeepSeek adapter talks to @dsh/llm-mock-server.
import { existsSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type * as acp from '@agentclientprotocol/sdk'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import {
  assertOnlyFrames,
  initialize,
  normalise,
  spawnBin,
  startAcp,
  workspace,
  type AcpProcess,
} from '@dsh/cli-testkit/acp'

let server: MockServer | undefined
const running: AcpProcess[] = []
afterEach(async () => {
  for (const p of running.splice(0)) if (p.child.exitCode === null) p.child.kill('SIGKILL')
  await server?.close()
  server = undefined
})

async function mock(steps: unknown[]) {
  server = await startMockServer({ steps: steps as never })
  return server
}

const envFor = (home: string, s: MockServer) => ({
  DSH_HOME: home,
  DEEPSEEK_BASE_URL: s.baseURL,
  DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
})

async function start(env: Record<string, string | undefined>, cwd: string, args: string[] = []) {
  const p = await startAcp(env, cwd, args)
  running.push(p)
  return p
}

interface Updates {
  readonly updates: acp.SessionNotification[]
}
const kinds = (p: Updates) => p.updates.map((u) => u.update.sessionUpdate)
const text = (p: Updates, kind: 'agent_message_chunk' | 'agent_thought_chunk' | 'user_message_chunk') =>
  p.updates
    .filter((u) => u.update.sessionUpdate === kind)
    .map((u) => ((u.update as { content: acp.ContentBlock }).content as { text?: string }).text ?? '')
    .join('')

const toolText = (s: { readonly requests: MockServer['requests'] }, i: number) => {
  const messages = (s.requests[i].body as { messages: { role: string; content: string }[] }).messages
  return messages.filter((m) => m.role === 'tool').at(-1)?.content ?? ''
}

/**
 * Host pids of live processes whose command line contains `marker`. Commands run confined (bwrap
 * gives them their own PID namespace), so pids they print about themselves mean nothing here.
 */
function hostPids(marker: string): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ')
      const state = /State:\s+(\w)/.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1]
      if (cmdline.includes(marker) && state !== 'Z') found.push(Number(entry))
    } catch {
      // the process ended while we looked
    }
  }
  return found
}

async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

// One dsh-acp (and one mock model) for the tests that need nothing of a fresh process: each opens a
// session in a folder of its own, installs its script on the mock (setScript) and reads only what
// arrived since it began. Tests where a new process is the point (stdin close, signals, session/load
// in a fresh process) or that need another configuration (a patch, the permission mode, client fs)
// keep their own boots. `shared(fs)` is booted on first use; the last test closes both.
interface SharedAcp {
  p: AcpProcess
  s: MockServer
  init: acp.InitializeResponse
}
const sharedBoots = new Map<'plain' | 'fs', Promise<SharedAcp>>()
function shared(kind: 'plain' | 'fs' = 'plain'): Promise<SharedAcp> {
  let boot = sharedBoots.get(kind)
  if (!boot) {
    boot = (async () => {
      const s = await startMockServer({ steps: [] })
      const { home, cwd } = workspace()
      const p = await startAcp(envFor(home, s), cwd)
      const init = await initialize(p.agent, kind === 'fs' ? { fs: { readTextFile: true, writeTextFile: true } } : {})
      return { p, s, init }
    })()
    sharedBoots.set(kind, boot)
  }
  return boot
}
afterAll(async () => {
  for (const boot of sharedBoots.values()) {
    const { p, s } = await boot.catch(() => ({}) as Partial<SharedAcp>)
    if (p && p.child.exitCode === null) p.child.kill('SIGKILL')
    await s?.close()
  }
})

/**
 * This test's share of a shared dsh-acp: its script installed on the mock, and the updates and
 * model requests since it began.
 */
async function share(steps: unknown[], kind: 'plain' | 'fs' = 'plain') {
  const { p, s, init } = await shared(kind)
  const fromUpdate = p.updates.length
  const fromRequest = s.requests.length
  const earlier = new Set(p.updates)
  s.setScript(steps as never)
  return {
    p,
    init,
    agent: p.agent,
    s: {
      get requests() {
        return s.requests.slice(fromRequest)
      },
    },
    get updates() {
      return p.updates.slice(fromUpdate)
    },
    waitFor: (pred: (n: acp.SessionNotification) => boolean) => p.waitFor((n) => !earlier.has(n) && pred(n)),
  }
}

const CONVERSATION = [
  {
    reasoning: 'Look first.',
    text: 'Checking the workspace.',
    toolCalls: [{ name: 'bash', arguments: { command: 'echo hello-from-bash', description: 'Say hello' } }],
  },
  { toolCalls: [{ name: 'read', arguments: { file_path: 'notes.txt' } }] },
  { toolCalls: [{ name: 'edit', arguments: { file_path: 'notes.txt', old_string: 'beta', new_string: 'gamma' } }] },
  { text: 'Replaced beta with gamma.' },
]

describe('dsh-acp', () => {
  it('initialize -> new -> prompt streams chunks, tool calls, a diff and the final message, then end_turn', async () => {
    const { cwd } = workspace()
    writeFileSync(join(cwd, 'notes.txt'), 'alpha\nbeta\n')
    const p = await share(CONVERSATION)
    const { s, init } = p
    expect(init.protocolVersion).toBe(1)
    expect(init.agentInfo?.name).toBe('dsh')
    expect(init.agentCapabilities).toMatchObject({
      loadSession: true,
      promptCapabilities: { image: false, audio: false, embeddedContext: true },
    })
    const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })
    expect(typeof sessionId).toBe('string')
    const response = await p.agent.request('session/prompt', {
      sessionId,
      prompt: [{ type: 'text', text: 'replace beta with gamma' }],
    })
    expect(response.stopReason).toBe('end_turn')
    expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('alpha\ngamma\n')

    expect(p.updates.every((u) => u.sessionId === sessionId)).toBe(true)
    expect(text(p, 'agent_thought_chunk')).toBe('Look first.')
    expect(text(p, 'agent_message_chunk')).toBe('Checking the workspace.Replaced beta with gamma.')
    const calls = p.updates
      .map((u) => u.update)
      .filter((u): u is Extract<acp.SessionUpdate, { sessionUpdate: 'tool_call' }> => u.sessionUpdate === 'tool_call')
    expect(calls.map((c) => [c.title, c.kind, c.status])).toEqual([
      ['Say hello', 'execute', 'pending'],
      ['read notes.txt', 'read', 'pending'],
      ['edit notes.txt', 'edit', 'pending'],
    ])
    expect(calls[1].locations).toEqual([{ path: join(cwd, 'notes.txt') }])
    const updatesOf = (id: string) =>
      p.updates
        .map((u) => u.update)
        .filter(
          (u): u is Extract<acp.SessionUpdate, { sessionUpdate: 'tool_call_update' }> =>
            u.sessionUpdate === 'tool_call_update' && u.toolCallId === id,
        )
    const bash = updatesOf(calls[0].toolCallId)
    expect(bash.map((u) => u.status)).toEqual(['in_progress', 'completed'])
    expect(JSON.stringify(bash[1].content)).toContain('hello-from-bash')
    const edit = updatesOf(calls[2].toolCallId)
    expect(edit.at(-1)).toMatchObject({
      status: 'completed',
      content: [{ type: 'diff', path: join(cwd, 'notes.txt'), oldText: 'alpha\nbeta\n', newText: 'alpha\ngamma\n' }],
    })
    // The final message comes after the last tool update.
    const last = kinds(p).lastIndexOf('agent_message_chunk')
    expect(last).toBeGreaterThan(kinds(p).lastIndexOf('tool_call_update'))
    expect(toolText(s, 1)).toContain('hello-from-bash')

    expect(normalise(p.updates, cwd)).toMatchSnapshot()
  })

  it('session/cancel mid-tool ends the turn cancelled and kills the tool process', async () => {
    const { cwd } = workspace()
    const p = await share([
      {
        toolCalls: [
          {
            name: 'bash',
            arguments: {
              command: 'echo $$ > shell.pid; sleep 30.4242 & echo $! > sleep.pid; wait',
              description: 'Wait a long time',
            },
          },
        ],
      },
      { text: 'never reached' },
    ])
    const { s } = p
    const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })
    const prompt = p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'wait' }] })
    await p.waitFor((u) => u.update.sessionUpdate === 'tool_call_update' && u.update.status === 'in_progress')
    await until(
      () => existsSync(join(cwd, 'sleep.pid')) && readFileSync(join(cwd, 'sleep.pid'), 'utf8').trim() !== '',
      'the tool to start',
    )
    expect(hostPids('sleep 30.4242').length).toBeGreaterThan(0)
    await p.agent.notify('session/cancel', { sessionId })
    expect((await prompt).stopReason).toBe('cancelled')
    await until(() => hostPids('sleep 30.4242').length === 0, 'the tool processes to be killed')
    const final = p.updates
      .map((u) => u.update)
      .filter((u) => u.sessionUpdate === 'tool_call_update')
      .at(-1)
    expect(final).toMatchObject({ status: 'failed' })
    expect(s.requests).toHaveLength(1)
  })

  it('closing stdin mid-turn cancels the work, kills the tool and exits 0 with the log complete', async () => {
    const { home, cwd } = workspace()
    const s = await mock([
      {
        toolCalls: [
          { name: 'bash', arguments: { command: 'sleep 30.5151 & echo $! > sleep.pid; wait', description: 'Wait' } },
        ],
      },
    ])
    const p = await start(envFor(home, s), cwd)
    await initialize(p.agent)
    const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })
    void p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'wait' }] }).catch(() => {})
    await until(
      () => existsSync(join(cwd, 'sleep.pid')) && readFileSync(join(cwd, 'sleep.pid'), 'utf8').trim() !== '',
      'the tool to start',
    )
    expect(hostPids('sleep 30.5151').length).toBeGreaterThan(0)
    expect(await p.close()).toBe(0)
    await until(() => hostPids('sleep 30.5151').length === 0, 'the tool process to be killed')
    assertOnlyFrames(p.stdoutLines())

    const again = await start(envFor(home, s), cwd)
    await initialize(again.agent)
    await again.agent.request('session/load', { sessionId, cwd, mcpServers: [] })
    expect(normalise(again.updates, cwd).map((u) => u as { sessionUpdate: string; status?: string })).toMatchObject([
      { sessionUpdate: 'user_message_chunk' },
      { sessionUpdate: 'tool_call', status: 'pending' },
      { sessionUpdate: 'tool_call_update', status: 'failed' },
    ])
    expect(await again.close()).toBe(0)
  })

  for (const [signal, status] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`${signal} mid-turn exits ${status}, logs the cancelled turn end and session/load sees the closed turn`, async () => {
      const { home, cwd } = workspace()
      const s = await mock([{ events: [{ text: 'partial answer' }, { stall: true }] }, { text: 'after the restart' }])
      const patch = join(cwd, 'plain-log.patch.yml')
      writeFileSync(patch, '- id: session-persistence-jsonl\n  config:\n    compression: none\n')
      const p = await start(envFor(home, s), cwd, ['--patch', patch])
      await initialize(p.agent)
      const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })
      void p.agent
        .request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'long task' }] })
        .catch(() => {})
      await p.waitFor((n) => n.update.sessionUpdate === 'agent_message_chunk')
      p.child.kill(signal)
      expect(await p.exited).toBe(status)
      expect(p.stderr()).not.toMatch(/inactive context|\n\s+at /)
      assertOnlyFrames(p.stdoutLines())
      const sessions = join(home, 'sessions')
      const dir = readdirSync(sessions)
        .map((k) => join(sessions, k, sessionId))
        .find((d) => existsSync(d))!
      const log = readFileSync(join(dir, 'session.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
      expect(log.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 0, reason: 'cancelled' } })
      expect(existsSync(join(dir, 'writer.lock'))).toBe(false)

      const again = await start(envFor(home, s), cwd, ['--patch', patch])
      await initialize(again.agent)
      await again.agent.request('session/load', { sessionId, cwd, mcpServers: [] })
      expect(text(again, 'agent_message_chunk')).toBe('partial answer')
      const next = await again.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'go on' }] })
      expect(next.stopReason).toBe('end_turn')
      expect(again.stderr()).toBe('')
      expect(await again.close()).toBe(0)
    })
  }

  it('session/load in a fresh process replays the history, then accepts prompts with it', async () => {
    const { home, cwd } = workspace()
    const s = await mock([
      { text: 'Noted: kiwi.' },
      { expect: { lastContains: 'which word' }, text: 'The word was kiwi.' },
    ])
    const first = await start(envFor(home, s), cwd)
    await initialize(first.agent)
    const { sessionId } = await first.agent.request('session/new', { cwd, mcpServers: [] })
    expect(
      (
        await first.agent.request('session/prompt', {
          sessionId,
          prompt: [{ type: 'text', text: 'remember the word kiwi' }],
        })
      ).stopReason,
    ).toBe('end_turn')
    expect(await first.close()).toBe(0)

    const second = await start(envFor(home, s), cwd)
    const init = await initialize(second.agent)
    expect(init.agentCapabilities?.loadSession).toBe(true)
    await second.agent.request('session/load', { sessionId, cwd, mcpServers: [] })
    // Everything replayed arrived before the load response.
    expect(normalise(second.updates, cwd)).toEqual([
      { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'remember the word kiwi' } },
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Noted: kiwi.' } },
    ])
    const listed = await second.agent.request('session/list', {})
    expect(listed.sessions.map((x) => x.sessionId)).toContain(sessionId)
    const r = await second.agent.request('session/prompt', {
      sessionId,
      prompt: [{ type: 'text', text: 'which word did I say?' }],
    })
    expect(r.stopReason).toBe('end_turn')
    const messages = JSON.stringify((s.requests[1].body as { messages: unknown[] }).messages)
    expect(messages).toContain('remember the word kiwi')
    expect(messages).toContain('Noted: kiwi.')
    await expect(
      second.agent.request('session/load', { sessionId: 'no-such-session', cwd, mcpServers: [] }),
    ).rejects.toMatchObject({ code: -32002 })
    expect(await second.close()).toBe(0)
    assertOnlyFrames(second.stdoutLines())
  })

  it('forwards approval requests as session/request_permission: allow runs, reject and cancel deny', async () => {
    const { home, cwd } = workspace()
    const bash = (word: string) => ({
      toolCalls: [{ name: 'bash', arguments: { command: `echo ${word}`, description: `Echo ${word}` } }],
    })
    const s = await mock([
      bash('allowed-word'),
      { text: 'ran' },
      bash('rejected-word'),
      { text: 'denied' },
      bash('cancelled-word'),
      { text: 'denied too' },
    ])
    const gate = fileURLToPath(new URL('./fixtures/approval-gate.yml', import.meta.url))
    const p = await start(envFor(home, s), cwd, ['--patch', gate])
    await initialize(p.agent)
    const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })

    p.onPermission = () => ({ outcome: { outcome: 'selected', optionId: 'allow_once' } })
    expect(
      (await p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'one' }] })).stopReason,
    ).toBe('end_turn')
    expect(p.permissions).toHaveLength(1)
    const req = p.permissions[0]
    expect(req.sessionId).toBe(sessionId)
    expect(req.options.map((o) => o.kind)).toEqual(['allow_once', 'allow_always', 'reject_once'])
    const call = p.updates.map((u) => u.update).find((u) => u.sessionUpdate === 'tool_call')
    expect(req.toolCall.toolCallId).toBe((call as { toolCallId: string }).toolCallId)
    expect(req.toolCall.title).toBe('Run echo allowed-word')
    expect(toolText(s, 1)).toContain('allowed-word')

    p.onPermission = () => ({ outcome: { outcome: 'selected', optionId: 'reject_once' } })
    expect(
      (await p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'two' }] })).stopReason,
    ).toBe('end_turn')
    expect(toolText(s, 3)).toContain('not approved')
    expect(toolText(s, 3)).not.toContain('rejected-word\n[exit code')

    p.onPermission = () => ({ outcome: { outcome: 'cancelled' } })
    expect(
      (await p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'three' }] })).stopReason,
    ).toBe('end_turn')
    expect(toolText(s, 5)).toContain('cancelled the permission request')
    const failed = p.updates
      .map((u) => u.update)
      .filter((u) => u.sessionUpdate === 'tool_call_update' && u.status === 'failed')
    expect(failed).toHaveLength(2)
    expect(p.permissions).toHaveLength(3)
    expect(await p.close()).toBe(0)
    assertOnlyFrames(p.stdoutLines())
  })

  it('rejects a relative cwd, a second prompt in flight, unknown sessions and unsupported content', async () => {
    const { cwd } = workspace()
    const p = await share([{ delayMs: 800, text: 'slow answer' }])
    const { s } = p
    await expect(p.agent.request('session/new', { cwd: 'relative/dir', mcpServers: [] })).rejects.toMatchObject({
      code: -32602,
    })
    await expect(p.agent.request('session/new', { cwd: join(cwd, 'missing'), mcpServers: [] })).rejects.toMatchObject({
      code: -32602,
    })
    const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })
    await expect(
      p.agent.request('session/prompt', { sessionId: 'nope', prompt: [{ type: 'text', text: 'x' }] }),
    ).rejects.toMatchObject({ code: -32002 })
    await expect(
      p.agent.request('session/prompt', {
        sessionId,
        prompt: [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }],
      }),
    ).rejects.toMatchObject({ code: -32602 })
    const first = p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'first' }] })
    await new Promise((r) => setTimeout(r, 100))
    const second = p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'second' }] })
    await expect(second).rejects.toMatchObject({
      code: -32600,
      message: expect.stringContaining('already has a prompt in flight'),
    })
    expect((await first).stopReason).toBe('end_turn')
    expect(s.requests).toHaveLength(1)
  })

  it('session modes are the permission presets; set_mode switches and reports them', async () => {
    const { home, cwd } = workspace()
    const s = await mock([])
    const p = await start({ ...envFor(home, s), DSH_PERMISSION_MODE: undefined }, cwd)
    await initialize(p.agent)
    const created = await p.agent.request('session/new', { cwd, mcpServers: [] })
    expect(created.modes?.currentModeId).toBe('workspace-write')
    expect(created.modes?.availableModes.map((m) => m.id)).toEqual(
      expect.arrayContaining(['workspace-write', 'danger-full-access']),
    )
    await p.agent.request('session/set_mode', { sessionId: created.sessionId, modeId: 'danger-full-access' })
    await p.waitFor((u) => u.update.sessionUpdate === 'current_mode_update')
    expect(p.updates.at(-1)?.update).toEqual({
      sessionUpdate: 'current_mode_update',
      currentModeId: 'danger-full-access',
    })
    await expect(
      p.agent.request('session/set_mode', { sessionId: created.sessionId, modeId: 'yolo' }),
    ).rejects.toMatchObject({ code: -32602 })
    expect(await p.close()).toBe(0)
  })

  it('todo_write becomes a plan update', async () => {
    const { cwd } = workspace()
    const todos = [
      { content: 'Read the code', status: 'completed' },
      { content: 'Fix the bug', status: 'in_progress' },
      { content: 'Run the tests', status: 'pending' },
    ]
    const p = await share([{ toolCalls: [{ name: 'todo_write', arguments: { todos } }] }, { text: 'planned' }])
    const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })
    expect(
      (await p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'plan it' }] })).stopReason,
    ).toBe('end_turn')
    const plan = p.updates.map((u) => u.update).find((u) => u.sessionUpdate === 'plan')
    expect(plan).toEqual({ sessionUpdate: 'plan', entries: todos.map((t) => ({ ...t, priority: 'medium' })) })
    const call = p.updates.map((u) => u.update).find((u) => u.sessionUpdate === 'tool_call')
    expect(call).toMatchObject({ kind: 'think' })
  })

  it('passes resource links and embedded resources to the model as text', async () => {
    const { cwd } = workspace()
    const p = await share([{ text: 'seen' }])
    const { s } = p
    const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })
    await p.agent.request('session/prompt', {
      sessionId,
      prompt: [
        { type: 'text', text: 'look at these' },
        { type: 'resource_link', name: 'main.ts', uri: `file://${cwd}/main.ts` },
        {
          type: 'resource',
          resource: { uri: `file://${cwd}/buffer.ts`, mimeType: 'text/x-typescript', text: 'const unsaved = 1' },
        },
      ],
    })
    const last = JSON.stringify((s.requests[0].body as { messages: unknown[] }).messages.at(-1))
    expect(last).toContain('look at these')
    expect(last).toContain(`file://${cwd}/main.ts`)
    expect(last).toContain('const unsaved = 1')
    expect(last).toContain(`<resource uri=\\"file://${cwd}/buffer.ts\\"`)
  })

  it('with client fs, a write outside the workspace is refused by the sandbox and never reaches the editor', async () => {
    const { cwd } = workspace()
    // Temp dirs are writable in workspace-write; $HOME is not, unless it lies in a temp dir itself
    // (the fresh-machine check runs with HOME under /tmp), where /opt stands in for it.
    const home0 = realpathSync(homedir())
    const outsideDir = home0.startsWith(realpathSync(tmpdir()) + '/') ? '/opt' : home0
    const outside = join(outsideDir, `dsh-acp-escape-${process.pid}.txt`)
    const p = await share(
      [
        { toolCalls: [{ name: 'write', arguments: { file_path: outside, content: 'should not land' } }] },
        { text: 'ok' },
      ],
      'fs',
    )
    const { s } = p
    const writes: string[] = []
    await p.p.exposeFs({ read: () => '', write: (path) => void writes.push(path) })
    const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })
    expect(
      (await p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'write it' }] })).stopReason,
    ).toBe('end_turn')
    expect(writes).toEqual([])
    expect(existsSync(outside)).toBe(false)
    expect(toolText(s, 1)).toContain('SANDBOX_DENIED')
  })

  it('with client fs capabilities, file tools read unsaved buffers and write through the client', async () => {
    const { cwd } = workspace()
    const file = join(cwd, 'notes.txt')
    writeFileSync(file, 'alpha\nbeta\n')
    const p = await share(
      [
        { toolCalls: [{ name: 'read', arguments: { file_path: 'notes.txt' } }] },
        {
          toolCalls: [{ name: 'edit', arguments: { file_path: 'notes.txt', old_string: 'beta', new_string: 'gamma' } }],
        },
        {
          toolCalls: [{ name: 'bash', arguments: { command: 'cat notes.txt', description: 'Show the file on disk' } }],
        },
        { text: 'done' },
      ],
      'fs',
    )
    const { s } = p
    const buffers = new Map([[file, 'alpha\nbeta\nunsaved line\n']])
    const reads: string[] = []
    const writes: { path: string; content: string }[] = []
    await p.p.exposeFs({
      read: (path) => {
        reads.push(path)
        const text = buffers.get(path)
        if (text === undefined) throw new Error(`no buffer for ${path}`)
        return text
      },
      write: (path, content) => {
        writes.push({ path, content })
        buffers.set(path, content) // an editor keeps the change in its buffer, unsaved
      },
    })
    const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })
    expect(
      (await p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'edit it' }] })).stopReason,
    ).toBe('end_turn')
    expect(toolText(s, 1)).toContain('unsaved line')
    expect(writes).toEqual([{ path: file, content: 'alpha\ngamma\nunsaved line\n' }])
    expect(reads.every((r) => r === file)).toBe(true)
    // The disk was never written: the editor owns the change.
    expect(readFileSync(file, 'utf8')).toBe('alpha\nbeta\n')
    expect(toolText(s, 3)).toContain('beta')
    const diff = p.updates
      .map((u) => u.update)
      .find((u) => u.sessionUpdate === 'tool_call_update' && u.content?.[0]?.type === 'diff')
    expect(diff).toMatchObject({
      content: [{ type: 'diff', oldText: 'alpha\nbeta\nunsaved line\n', newText: 'alpha\ngamma\nunsaved line\n' }],
    })
  })

  it('answers a malformed frame with a parse error and an unknown method with method-not-found; stdout carries frames only', async () => {
    const { home, cwd } = workspace()
    const run = spawnBin([], { DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test' }, cwd)
    const frames: { id?: unknown; result?: unknown; error?: { code: number } }[] = []
    const lines = () => run.stdoutLines().map((l) => JSON.parse(l) as (typeof frames)[number])
    run.child.stdin.write('{this is not json\n')
    await until(() => lines().length >= 1, 'the parse error')
    expect(lines()[0]).toMatchObject({ id: null, error: { code: -32700 } })
    run.child.stdin.write(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1 } }) + '\n',
    )
    await until(() => lines().length >= 2, 'the initialize response')
    run.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'no/such/method', params: {} }) + '\n')
    await until(() => lines().length >= 3, 'the method-not-found response')
    expect(lines()[1]).toMatchObject({ id: 1, result: { protocolVersion: 1 } })
    expect(lines()[2]).toMatchObject({ id: 2, error: { code: -32601 } })
    run.child.stdin.end()
    expect(await run.exited).toBe(0)
    assertOnlyFrames(run.stdoutLines())
  })

  it('answers an oversized message and a wrong jsonrpc version with -32600 errors and keeps serving', async () => {
    const { home, cwd } = workspace()
    const run = spawnBin([], { DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test' }, cwd)
    const lines = () =>
      run.stdoutLines().map((l) => JSON.parse(l) as { id?: unknown; result?: unknown; error?: { code: number } })
    run.child.stdin.on('error', () => {})
    run.child.stdin.write(
      JSON.stringify({ jsonrpc: '1.0', id: 7, method: 'initialize', params: { protocolVersion: 1 } }) + '\n',
    )
    await until(() => lines().length >= 1, 'the wrong-version answer')
    expect(lines()[0]).toMatchObject({ id: 7, error: { code: -32600 } })
    // Over the 32 MiB default: the SDK alone would end the connection here.
    run.child.stdin.write(
      JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'initialize', params: { pad: 'x'.repeat(33 * 1024 * 1024) } }) +
        '\n',
    )
    await until(() => lines().length >= 2, 'the oversized-message answer', 60_000)
    expect(lines()[1]).toMatchObject({ id: null, error: { code: -32600 } })
    expect(run.stderr()).toMatch(/dsh-acp: dropped an incoming message longer than 33554432 bytes/)
    run.child.stdin.write(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'initialize',
        params: { protocolVersion: 1, clientCapabilities: {} },
      }) + '\n',
    )
    await until(() => lines().length >= 3, 'the initialize response')
    expect(lines()[2]).toMatchObject({ id: 9, result: { protocolVersion: 1 } })
    run.child.stdin.end()
    expect(await run.exited).toBe(0)
    assertOnlyFrames(run.stdoutLines())
  })

  it('--help and a bad argument do not start the server', async () => {
    const { home, cwd } = workspace()
    const help = spawnBin(['--help'], { DSH_HOME: home }, cwd)
    help.child.stdin.end()
    expect(await help.exited).toBe(0)
    expect(help.stdoutLines().join('\n')).toContain('--patch FILE')
    const bad = spawnBin(['--frobnicate'], { DSH_HOME: home }, cwd)
    bad.child.stdin.end()
    expect(await bad.exited).toBe(2)
    expect(bad.stderr()).toContain('unknown argument "--frobnicate"')
    expect(bad.stdoutLines()).toEqual([])
  })

  it('the shared processes served every session of the tests above, exit 0 on stdin close and printed frames only', async () => {
    for (const boot of sharedBoots.values()) {
      const { p } = await boot
      expect(await p.close()).toBe(0)
      assertOnlyFrames(p.stdoutLines())
      expect(p.stderr()).not.toMatch(/\n\s+at /)
    }
  })
})
