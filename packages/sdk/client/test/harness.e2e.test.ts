// End-to-end: the real dsh-jsonrpc-agent (base bundle + server row) in a subprocess, driven through
// Harness, with the DeepSeek adapter talking to @dsh/llm-mock-server over loopback HTTP.
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { Harness, HarnessError, type SubagentNotification, type WireEvent } from '../src/index.ts'

// Each test boots whole dsh processes; on a loaded 2-core runner that can take a while.
vi.setConfig({ testTimeout: 60_000 })

const bin = fileURLToPath(new URL('../../server/bin/dsh-jsonrpc-agent.mjs', import.meta.url))
const fakeBin = fileURLToPath(new URL('./fixtures/malformed-server.mjs', import.meta.url))

let mock: MockServer | undefined
const harnesses: Harness[] = []
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()))
  await mock?.close()
  mock = undefined
})

function workspace() {
  const root = mkdtempSync(join(tmpdir(), 'dsh-sdk-client-'))
  return { home: join(root, 'home'), cwd: root }
}

async function start(steps: unknown[], ws = workspace()) {
  mock ??= await startMockServer({ steps: steps as never })
  const harness = await Harness.start({
    bin,
    cwd: ws.cwd,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DSH_HOME: ws.home,
      DEEPSEEK_BASE_URL: mock.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
    },
  })
  harnesses.push(harness)
  return { harness, ws, mock }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const expectContiguous = (events: WireEvent[]) => {
  const seqs = events.map((e) => e.seq)
  expect(seqs).toEqual(seqs.map((_, i) => seqs[0] + i))
}

describe('Harness against dsh-jsonrpc-agent', () => {
  it('runs a prompt with a tool call and returns the final result with its events', async () => {
    const { harness, ws } = await start([
      { toolCalls: [{ name: 'bash', arguments: { command: 'cat marker.txt', description: 'read the marker' } }] },
      { text: 'The marker says hello.' },
    ])
    writeFileSync(join(ws.cwd, 'marker.txt'), 'hello-from-disk\n')
    expect(harness.info.protocolVersion).toBe(1)
    const session = await harness.createSession()
    expect(session.cwd).toBe(ws.cwd)
    const result = await session.prompt('what does marker.txt say?')
    expect(result).toMatchObject({
      sessionId: session.id,
      reason: 'completed',
      text: 'The marker says hello.',
      steps: 2,
      turn: 0,
    })
    const types = result.events.map((e) => e.type)
    expect(types[0]).toBe('turn/start')
    expect(types.at(-1)).toBe('turn/end')
    expect(types).toContain('tool/call')
    const toolResult = result.events.find((e) => e.type === 'tool/result')!
    expect(JSON.stringify(toolResult.data)).toContain('hello-from-disk')
    expectContiguous(result.events)
    expect(result.usage.input).toBeGreaterThan(0)
  })

  it('notifies subagent/started and subagent/finished for a child and a grandchild, with usage and a text excerpt', async () => {
    const longAnswer = 'x'.repeat(2100)
    const { harness } = await start([
      { toolCalls: [{ name: 'subagent', arguments: { description: 'outer helper', prompt: 'delegate once more' } }] },
      { toolCalls: [{ name: 'subagent', arguments: { description: 'inner helper', prompt: 'say the long thing' } }] },
      { text: longAnswer },
      { text: 'child done' },
      { text: 'parent done' },
    ])
    const session = await harness.createSession()
    const seen: SubagentNotification[] = []
    session.onSubagent((n) => seen.push(n))
    const result = await session.prompt('delegate')
    expect(result).toMatchObject({ reason: 'completed', text: 'parent done' })
    expect(seen.map((n) => `${n.description}:${n.status}`)).toEqual([
      'outer helper:running',
      'inner helper:running',
      'inner helper:completed',
      'outer helper:completed',
    ])
    const [outerStart, innerStart, innerEnd, outerEnd] = seen
    expect(outerStart).toMatchObject({
      sessionId: session.id,
      parentSessionId: session.id,
      id: 'sub-1',
      provider: 'spawn',
      depth: 1,
      background: false,
    })
    expect(outerStart.childSessionId).toEqual(expect.any(String))
    // The grandchild belongs to the client's session; its parent is the child's own session.
    expect(innerStart).toMatchObject({
      sessionId: session.id,
      parentSessionId: outerStart.childSessionId,
      id: 'sub-1',
      provider: 'spawn',
      depth: 2,
    })
    expect(innerEnd).toMatchObject({
      status: 'completed',
      text: 'x'.repeat(2000),
      textTruncated: true,
      childSessionId: innerStart.childSessionId,
    })
    expect(outerEnd).toMatchObject({
      status: 'completed',
      text: 'child done',
      parentSessionId: session.id,
      id: 'sub-1',
    })
    expect(outerEnd).not.toHaveProperty('textTruncated')
    if (outerEnd.status === 'running' || innerEnd.status === 'running') throw new Error('unreachable')
    expect(innerEnd.usage?.input).toBeGreaterThan(0)
    expect(outerEnd.usage?.input).toBeGreaterThan(0)
    // The parent's log holds the same record (the notification follows its session/event).
    const logged = result.events.find((e) => e.type === 'subagent/finished')!
    expect(logged.data).toMatchObject({ id: 'sub-1', status: 'completed', text: 'child done', usage: outerEnd.usage })
  })

  it('streams every event of the turn in order with contiguous seq, matching session/history', async () => {
    const { harness } = await start([{ events: [{ text: 'one ' }, { text: 'two ' }, { text: 'three' }] }])
    const session = await harness.createSession()
    const stream = session.stream('count')
    const seen: WireEvent[] = []
    for await (const event of stream) seen.push(event)
    expect(seen[0].type).toBe('turn/start')
    expect(seen.at(-1)!.type).toBe('turn/end')
    expect(seen.filter((e) => e.type === 'assistant/chunk').length).toBeGreaterThanOrEqual(3)
    expectContiguous(seen)
    const result = await stream.result
    expect(result.text).toBe('one two three')
    const history = await session.history(0)
    expect(history.slice(seen[0].seq, seen.at(-1)!.seq + 1)).toEqual(seen)
    expect((await session.history(seen.at(-1)!.seq)).map((e) => e.seq)).toEqual([seen.at(-1)!.seq])
  })

  it('cancels a running turn', async () => {
    const { harness } = await start([{ events: [{ text: 'partial ' }, { stall: true }] }])
    const session = await harness.createSession()
    const stream = session.stream('long task')
    for await (const event of stream) {
      if (event.type === 'assistant/chunk') {
        expect(await session.cancel()).toBe(true)
      }
    }
    const result = await stream.result
    expect(result.reason).toBe('cancelled')
    expect(result.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'cancelled' } })
    expect(await session.cancel()).toBe(false)
  })

  it('resumes a stored session in a new server process', async () => {
    const ws = workspace()
    const first = await start([{ text: 'Noted: kiwi.' }, { text: 'The word was kiwi.' }], ws)
    const s1 = await first.harness.createSession()
    expect((await s1.prompt('remember the word kiwi')).text).toBe('Noted: kiwi.')
    await first.harness.close()

    const second = await start([], ws)
    const rows = await second.harness.listSessions()
    expect(rows.find((r) => r.sessionId === s1.id)).toMatchObject({ live: false, cwd: ws.cwd, turns: 1 })
    const s2 = await second.harness.resumeSession(s1.id)
    expect(s2.id).toBe(s1.id)
    const result = await s2.prompt('which word?')
    expect(result).toMatchObject({ text: 'The word was kiwi.', turn: 1 })
    expect(JSON.stringify(second.mock.requests[1].body)).toContain('remember the word kiwi')
    const history = await s2.history()
    expectContiguous(history)
    expect(history.filter((e) => e.type === 'turn/end')).toHaveLength(2)
    expect((await second.harness.listSessions()).find((r) => r.sessionId === s1.id)).toMatchObject({
      live: true,
      status: 'idle',
    })
  })

  it('runs two sessions interleaved in one server', async () => {
    const { harness } = await start([
      { events: [{ text: 'alpha-' }, { delayMs: 150 }, { text: 'one' }] },
      { events: [{ text: 'beta-' }, { delayMs: 150 }, { text: 'two' }] },
    ])
    const a = await harness.createSession()
    const b = await harness.createSession()
    const order: string[] = []
    a.onEvent((e) => order.push(`a:${e.type}`))
    b.onEvent((e) => order.push(`b:${e.type}`))
    const [ra, rb] = await Promise.all([a.prompt('first'), b.prompt('second')])
    expect([ra.text, rb.text].sort()).toEqual(['alpha-one', 'beta-two'])
    expectContiguous(ra.events)
    expectContiguous(rb.events)
    // Both turns were open at once: b started before a ended.
    expect(order.indexOf('b:turn/start')).toBeLessThan(order.indexOf('a:turn/end'))
    expect(a.id).not.toBe(b.id)
  })

  it('a second prompt while a turn runs is BUSY; unknown sessions and bad params have stable codes', async () => {
    const { harness, ws } = await start([{ events: [{ text: 'x' }, { stall: true }] }])
    const session = await harness.createSession()
    const stream = session.stream('stall')
    await expect(session.prompt('again')).rejects.toMatchObject({ code: 'BUSY' })
    await expect(harness.resumeSession('no-such-session')).rejects.toMatchObject({
      name: 'HarnessError',
      code: 'SESSION_NOT_FOUND',
    })
    await expect(harness.createSession({ cwd: join(ws.cwd, 'missing') })).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
    })
    await expect(harness.createSession({ model: 'no-such-model' })).rejects.toMatchObject({ code: 'MODEL_NOT_FOUND' })
    await session.cancel()
    expect((await stream.result).reason).toBe('cancelled')
  })

  it('a server that dies mid-turn fails the prompt with a clear error instead of hanging', async () => {
    const { harness } = await start([{ events: [{ text: 'working...' }, { stall: true }] }])
    const session = await harness.createSession()
    const stream = session.stream('do it')
    const seen: string[] = []
    const error = await (async () => {
      for await (const event of stream) {
        seen.push(event.type)
        if (event.type === 'assistant/chunk') process.kill(harness.pid!, 'SIGKILL')
      }
    })().catch((e) => e)
    expect(seen).toContain('assistant/chunk')
    expect(error).toBeInstanceOf(HarnessError)
    expect(error).toMatchObject({ code: 'SERVER_EXITED', message: expect.stringContaining('SIGKILL') })
    await expect(stream.result).rejects.toMatchObject({ code: 'SERVER_EXITED' })
    await expect(harness.createSession()).rejects.toMatchObject({ code: 'SERVER_EXITED' })
  })

  it('close() stops the server process; nothing is left running', async () => {
    const { harness } = await start([])
    const pid = harness.pid!
    expect(alive(pid)).toBe(true)
    await harness.close()
    expect(await harness.exited).toMatchObject({ code: 0 })
    expect(alive(pid)).toBe(false)
  })
})

describe('no leaked servers when the parent goes away', () => {
  const parent = fileURLToPath(new URL('./fixtures/parent.mjs', import.meta.url))

  async function serverPidOf(mode: 'exit' | 'hang') {
    const ws = workspace()
    const child = spawn(process.execPath, [parent, mode], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DSH_HOME: ws.home,
        SDK_BIN: bin,
        DEEPSEEK_API_KEY: 'sk-test',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const pid = await new Promise<number>((resolve) =>
      child.stdout.once('data', (d) => resolve(Number(String(d).trim()))),
    )
    return { child, pid }
  }

  const gone = async (pid: number) => {
    // Poll until the process is gone (the test's own timeout bounds the wait).
    while (alive(pid)) await new Promise((r) => setTimeout(r, 50))
    return true
  }

  it('a parent that exits without close() takes its server with it', async () => {
    const { child, pid } = await serverPidOf('exit')
    await new Promise((r) => child.once('close', r))
    expect(await gone(pid)).toBe(true)
  })

  it('a parent killed with SIGKILL: the server exits when its stdin closes', async () => {
    const { child, pid } = await serverPidOf('hang')
    expect(alive(pid)).toBe(true)
    child.kill('SIGKILL')
    expect(await gone(pid)).toBe(true)
  })
})

describe('Harness against a misbehaving server', () => {
  it('a malformed frame from the server is a PROTOCOL_ERROR and the server is stopped', async () => {
    const harness = await Harness.start({ bin: fakeBin })
    harnesses.push(harness)
    const error = await harness.createSession({ cwd: tmpdir() }).catch((e) => e)
    expect(error).toBeInstanceOf(HarnessError)
    expect(error.code).toBe('PROTOCOL_ERROR')
    expect(error.message).toContain('not JSON')
    await harness.exited
    expect(alive(harness.pid!)).toBe(false)
  })

  it('refuses a server that speaks another protocol version', async () => {
    const error = await Harness.start({ bin: fakeBin, env: { ...process.env, FAKE_VERSION: '2' } }).catch((e) => e)
    expect(error).toMatchObject({ name: 'HarnessError', code: 'PROTOCOL_VERSION_MISMATCH' })
  })

  it('a bin that cannot be started is SPAWN_FAILED', async () => {
    await expect(Harness.start({ bin: '/nonexistent/dsh-jsonrpc-agent' })).rejects.toMatchObject({
      code: 'SPAWN_FAILED',
    })
  })
})
