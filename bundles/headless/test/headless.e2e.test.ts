// End-to-end: the real `dsh` bin in a subprocess, the real base + headless bundles, and the
// DeepSeek adapter talking to @dsh/llm-mock-server over loopback HTTP.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { DSH_BIN, runDsh } from '@dsh/cli-testkit'

const dsh = (args: string[], env: Record<string, string | undefined>, cwd: string, stdin?: string) =>
  runDsh(args, { cwd, env, stdin })

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

function workspace() {
  const root = mkdtempSync(join(tmpdir(), 'dsh-headless-'))
  return { home: join(root, 'home'), cwd: root }
}

async function withMock(steps: unknown[]) {
  server = await startMockServer({ steps: steps as never })
  return server
}

const envFor = (home: string, s: MockServer) => ({
  DSH_HOME: home,
  DEEPSEEK_BASE_URL: s.baseURL,
  DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
})

describe('dsh --profile headless', () => {
  it('answers a one-step task with the final text on stdout only', async () => {
    const { home, cwd } = workspace()
    const s = await withMock([{ text: 'Paris is the capital of France.' }])
    const run = await dsh(['--profile', 'headless', 'capital of France?'], envFor(home, s), cwd)
    expect(run).toMatchObject({ code: 0, stdout: 'Paris is the capital of France.\n' })
    expect(run.stderr).toBe('')
    const body = s.requests[0].body as {
      model: string
      messages: { role: string; content: unknown }[]
      stream: boolean
    }
    expect(body.model).toBe('deepseek-v4-flash')
    expect(body.stream).toBe(true)
    expect(body.messages.at(-1)).toMatchObject({ role: 'user' })
    expect(JSON.stringify(body.messages.at(-1))).toContain('capital of France?')
    expect(s.requests[0].headers['user-agent']).toMatch(/^dsh\//)
  })

  it('runs a task with tool calls against real files and bash', async () => {
    const { home, cwd } = workspace()
    writeFileSync(join(cwd, 'notes.txt'), 'alpha\nbeta\n')
    const s = await withMock([
      { toolCalls: [{ name: 'read', arguments: { file_path: 'notes.txt' } }] },
      { toolCalls: [{ name: 'edit', arguments: { file_path: 'notes.txt', old_string: 'beta', new_string: 'gamma' } }] },
      { toolCalls: [{ name: 'bash', arguments: { command: 'cat notes.txt | wc -l', description: 'count lines' } }] },
      { text: 'Edited.' },
    ])
    const run = await dsh(
      ['--profile', 'headless', '--output-format', 'json', 'replace beta with gamma'],
      envFor(home, s),
      cwd,
    )
    expect(run.code).toBe(0)
    const result = JSON.parse(run.stdout)
    expect(result).toMatchObject({ type: 'result', result: 'Edited.', reason: 'completed', turns: 1, steps: 4 })
    expect(typeof result.sessionId).toBe('string')
    expect(result.usage.input).toBeGreaterThan(0)
    expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('alpha\ngamma\n')
    // What the model saw as tool results, in the request after each call.
    const toolText = (i: number) => {
      const messages = (s.requests[i].body as { messages: { role: string; content: string }[] }).messages
      return messages.filter((m) => m.role === 'tool').at(-1)!.content
    }
    expect(toolText(1)).toContain('beta')
    expect(toolText(3)).toMatch(/2\s*\n?[\s\S]*exit code: 0/)
  })

  it('stream-json prints one JSON line per session event, then the result', async () => {
    const { home, cwd } = workspace()
    const s = await withMock([{ text: 'streamed answer' }])
    const run = await dsh(['--profile', 'headless', '--output-format', 'stream-json', 'hi'], envFor(home, s), cwd)
    expect(run.code).toBe(0)
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    const types = lines.filter((l) => l.type === 'event').map((l) => l.event.type)
    expect(types[0]).toBe('turn/start')
    expect(types).toContain('assistant/chunk')
    expect(types.at(-1)).toBe('turn/end')
    expect(lines.at(-1)).toMatchObject({ type: 'result', result: 'streamed answer' })
    const seqs = lines.filter((l) => l.type === 'event').map((l) => l.event.seq)
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b))
  })

  it('the json result usage adds the usage of every subagent (child and grandchild) to the parent turn', async () => {
    const { home, cwd } = workspace()
    const u = (completion: number) => ({ prompt: 1000, completion })
    const s = await withMock([
      { toolCalls: [{ name: 'subagent', arguments: { description: 'outer', prompt: 'delegate again' } }], usage: u(1) },
      { toolCalls: [{ name: 'subagent', arguments: { description: 'inner', prompt: 'answer' } }], usage: u(10) },
      { text: 'inner answer', usage: u(100) },
      { text: 'outer answer', usage: u(20) },
      { text: 'all done', usage: u(2) },
    ])
    const run = await dsh(['--profile', 'headless', '--output-format', 'json', 'delegate'], envFor(home, s), cwd)
    expect(run.code).toBe(0)
    const result = JSON.parse(run.stdout)
    expect(result).toMatchObject({ type: 'result', result: 'all done', subagents: 2 })
    // parent 1+2, child 10+20, grandchild 100
    expect(result.usage.output).toBe(133)
    expect(result.subagentUsage.output).toBe(130)
    expect(result.usage.input).toBe((5 * result.subagentUsage.input) / 3)
    // Without children the result has no rollup fields.
    await server!.close()
    const plain = await dsh(
      ['--profile', 'headless', '--output-format', 'json', 'hi'],
      envFor(home, (server = await withMock([{ text: 'hello', usage: u(7) }]))),
      cwd,
    )
    const alone = JSON.parse(plain.stdout)
    expect(alone.usage.output).toBe(7)
    expect(alone).not.toHaveProperty('subagentUsage')
    expect(alone).not.toHaveProperty('subagents')
  })

  it('reads the task from stdin with "-"', async () => {
    const { home, cwd } = workspace()
    const s = await withMock([{ text: 'got it' }])
    const run = await dsh(['--profile', 'headless', '-'], envFor(home, s), cwd, 'task from stdin')
    expect(run).toMatchObject({ code: 0, stdout: 'got it\n' })
    expect(JSON.stringify(s.requests[0].body)).toContain('task from stdin')
  })

  it('a missing API key is one line on stderr and exit 1, with no request made', async () => {
    const { home, cwd } = workspace()
    const s = await withMock([{ text: 'never' }])
    const run = await dsh(['--profile', 'headless', 'hi'], { DSH_HOME: home, DEEPSEEK_BASE_URL: s.baseURL }, cwd)
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr.trim().split('\n')).toHaveLength(1)
    expect(run.stderr).toContain('MISSING_CREDENTIAL')
    expect(run.stderr).toContain('DEEPSEEK_API_KEY')
    expect(run.stderr).not.toMatch(/\n\s+at /)
    expect(s.requests).toHaveLength(0)
  })

  it('a bad --model names the known models and exits 2', async () => {
    const { home, cwd } = workspace()
    const s = await withMock([{ text: 'never' }])
    const run = await dsh(['--profile', 'headless', '--model', 'gpt-nonexistent', 'hi'], envFor(home, s), cwd)
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("no model 'gpt-nonexistent'")
    expect(run.stderr).toContain('deepseek-v4-flash')
    expect(run.stderr.trim().split('\n')).toHaveLength(1)
    expect(s.requests).toHaveLength(0)
  })

  it('usage errors exit 2 with one line; --help documents the flags', async () => {
    const { home, cwd } = workspace()
    const noTask = await dsh(['--profile', 'headless'], { DSH_HOME: home }, cwd)
    expect(noTask.code).toBe(2)
    expect(noTask.stderr).toContain('no task given')
    const badFlag = await dsh(['--profile', 'headless', '--frobnicate', 'x'], { DSH_HOME: home }, cwd)
    expect(badFlag.code).toBe(2)
    expect(badFlag.stderr).toContain('--frobnicate')
    const badFormat = await dsh(['--profile', 'headless', '--output-format', 'xml', 'x'], { DSH_HOME: home }, cwd)
    expect(badFormat.code).toBe(2)
    const help = await dsh(['--profile', 'headless', '--help'], { DSH_HOME: home }, cwd)
    expect(help.code).toBe(0)
    for (const flag of [
      '--output-format',
      '--model',
      '--max-steps',
      '-r, --resume',
      '-c, --continue',
      '-p, --print',
      '--all',
      '--patch FILE',
      '--profile NAME',
    ])
      expect(help.stdout).toContain(flag)
  })

  it('a one-shot reads settings.yaml once: the settings row runs without a file watcher', async () => {
    const { home, cwd } = workspace()
    const dump = await dsh(['--profile', 'headless', '--dump-config'], { DSH_HOME: home }, cwd)
    expect(dump.code).toBe(0)
    expect(dump.stdout).toMatch(/- id: settings\n\s+name: "@dsh\/settings-file"\n\s+config:\n\s+watch: false\n/)
  })

  it('a turn that does not complete exits 1 with the reason on stderr', async () => {
    const { home, cwd } = workspace()
    const s = await withMock([{ error: { status: 400, message: 'bad request body' } }])
    const run = await dsh(['--profile', 'headless', 'hi'], envFor(home, s), cwd)
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/^dsh: the turn failed: BAD_REQUEST: /m)
    expect(s.requests).toHaveLength(1) // a 400 is not retried
  })

  it('--resume and --continue reopen a stored session; dsh sessions lists it', async () => {
    const { home, cwd } = workspace()
    const s = await withMock([{ text: 'first answer' }, { text: 'second answer' }, { text: 'third answer' }])
    const env = envFor(home, s)
    const first = await dsh(['--profile', 'headless', '--output-format', 'json', 'remember the word kiwi'], env, cwd)
    expect(first.code).toBe(0)
    const { sessionId } = JSON.parse(first.stdout)
    const second = await dsh(
      ['--profile', 'headless', '--resume', sessionId, '--output-format', 'json', 'which word?'],
      env,
      cwd,
    )
    expect(second.code).toBe(0)
    expect(JSON.parse(second.stdout)).toMatchObject({ sessionId, result: 'second answer', turns: 2 })
    const history = (s.requests[1].body as { messages: { role: string; content: unknown }[] }).messages
    expect(JSON.stringify(history)).toContain('remember the word kiwi')
    expect(JSON.stringify(history)).toContain('first answer')
    const third = await dsh(['--profile', 'headless', '--continue', 'and again'], env, cwd)
    expect(third).toMatchObject({ code: 0, stdout: 'third answer\n' })
    expect(JSON.stringify(s.requests[2].body)).toContain('which word?')
    const listed = await dsh(['sessions', '--output-format', 'json'], { DSH_HOME: home }, cwd)
    expect(listed.code).toBe(0)
    const sessions = JSON.parse(listed.stdout)
    expect(sessions).toHaveLength(1)
    expect(sessions[0]).toMatchObject({ id: sessionId, cwd, turns: 3, firstPrompt: 'remember the word kiwi' })
    const table = await dsh(['sessions'], { DSH_HOME: home }, cwd)
    expect(table.stdout).toContain(sessionId)
    expect(table.stdout).toContain('remember the word kiwi')
  }, 60_000) // five launches of the bin

  it('--resume of an unknown session is one clear line', async () => {
    const { home, cwd } = workspace()
    const s = await withMock([{ text: 'never' }])
    const run = await dsh(
      ['--profile', 'headless', '--resume', '00000000-0000-4000-8000-000000000000', 'hi'],
      envFor(home, s),
      cwd,
    )
    expect(run.code).not.toBe(0)
    expect(run.stderr.trim().split('\n')).toHaveLength(1)
    expect(run.stderr).toMatch(/00000000-0000-4000-8000-000000000000/)
    expect(s.requests).toHaveLength(0)
  })

  it('--permission-mode validates the preset name', async () => {
    const { home, cwd } = workspace()
    const s = await withMock([{ text: 'ok' }])
    const bad = await dsh(['--profile', 'headless', '--permission-mode', 'yolo', 'hi'], envFor(home, s), cwd)
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain("unknown --permission-mode 'yolo'")
    expect(bad.stderr).toContain('danger-full-access')
    const good = await dsh(
      ['--profile', 'headless', '--permission-mode', 'danger-full-access', 'hi'],
      envFor(home, s),
      cwd,
    )
    expect(good).toMatchObject({ code: 0, stdout: 'ok\n' })
  })

  // Several launches of the bin one after another: 20 s is too short on a loaded machine.
  it('runs a /command task without a model turn: /help, and /compact on a continued session', async () => {
    const { home, cwd } = workspace()
    const s = await withMock([
      { text: 'the long answer' },
      { text: 'the second answer' },
      { text: 'Summary: the user asked for a long answer, then more.' },
    ])
    const env = envFor(home, s)
    // Keep nothing verbatim but the first human message, so a short session has something to compact.
    const patch = join(cwd, 'compact.patch.yml')
    writeFileSync(patch, '- id: compaction\n  config:\n    keepRecentTokens: 0\n')
    const help = await dsh(['--profile', 'headless', '/help'], env, cwd)
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('/compact')
    expect(s.requests).toHaveLength(0)
    expect((await dsh(['--profile', 'headless', 'write a long answer'], env, cwd)).code).toBe(0)
    expect((await dsh(['--profile', 'headless', '--continue', 'and more'], env, cwd)).code).toBe(0)
    const compact = await dsh(
      ['--patch', patch, '--profile', 'headless', '--continue', '--output-format', 'stream-json', '/compact'],
      env,
      cwd,
    )
    expect(compact.stderr).toBe('')
    expect(compact.code).toBe(0)
    const lines = compact.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    const types = lines.filter((l) => l.type === 'event').map((l) => l.event.type)
    expect(types).toEqual(expect.arrayContaining(['compaction/start', 'compaction/summary', 'compaction/end']))
    expect(lines.at(-1)).toMatchObject({ type: 'command', command: 'compact' })
    // The summary call replays the conversation and asks for a summary.
    expect(JSON.stringify(s.requests[2].body)).toContain('write a long answer')
    const unknown = await dsh(['--profile', 'headless', '/frobnicate'], env, cwd)
    expect(unknown.code).toBe(1)
    expect(unknown.stderr.trim().split('\n')).toHaveLength(1)
  }, 60_000)

  it('finds the DeepSeek key in $DSH_HOME/.credentials.yaml (mode 0600) through ctx.credentials', async () => {
    const { home, cwd } = workspace()
    const s = await withMock([{ text: 'keyed' }])
    mkdirSync(home, { recursive: true })
    writeFileSync(join(home, '.credentials.yaml'), 'DEEPSEEK_API_KEY: sk-from-credentials-file\n', { mode: 0o600 })
    const run = await dsh(['--profile', 'headless', 'hi'], { DSH_HOME: home, DEEPSEEK_BASE_URL: s.baseURL }, cwd)
    expect(run).toMatchObject({ code: 0, stdout: 'keyed\n' })
    expect(s.requests[0].headers.authorization).toBe('Bearer sk-from-credentials-file')
    expect(run.stderr).not.toContain('sk-from-credentials-file')
  })

  it('a run killed mid-tool loses nothing: --continue repairs the turn and the orphaned call', async () => {
    const { home, cwd } = workspace()
    const s = await withMock([
      {
        toolCalls: [
          { name: 'bash', arguments: { command: 'echo started > marker; sleep 30', description: 'long job' } },
        ],
      },
      { text: 'picked up after the crash' },
    ])
    const env = { PATH: process.env.PATH!, HOME: process.env.HOME!, ...envFor(home, s) }
    const child = spawn(
      process.execPath,
      [DSH_BIN, '--profile', 'headless', '--output-format', 'stream-json', 'run the long job'],
      { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
    // Wait until the tool body is running (its marker file exists), then kill dsh outright.
    for (let i = 0; i < 400 && !existsSync(join(cwd, 'marker')); i++) await new Promise((r) => setTimeout(r, 25))
    expect(existsSync(join(cwd, 'marker'))).toBe(true)
    child.kill('SIGKILL')
    await new Promise((r) => child.on('close', r))
    const sessionId = JSON.parse(out.split('\n')[0]).sessionId
    const resumed = await dsh(
      ['--profile', 'headless', '--continue', '--output-format', 'json', 'what happened?'],
      envFor(home, s),
      cwd,
    )
    expect(resumed.code).toBe(0)
    expect(JSON.parse(resumed.stdout)).toMatchObject({ sessionId, result: 'picked up after the crash' })
    // The repair is reported once on stderr and is part of what the model sees.
    expect(resumed.stderr).toMatch(/interrupted|had no result/)
    const history = JSON.stringify((s.requests[1].body as { messages: unknown[] }).messages)
    expect(history).toContain('run the long job')
    expect(history).toMatch(/interrupted while this tool call was running/)
    expect(history).toContain('what happened?')
  })

  describe('signals mid-turn', () => {
    // Plain JSONL logs (no zstd) so the test can read what was stored.
    const plainLogs = (cwd: string) => {
      const file = join(cwd, 'plain-log.patch.yml')
      writeFileSync(file, '- id: session-persistence-jsonl\n  config:\n    compression: none\n')
      return ['--patch', file]
    }
    const sessionDir = (home: string, id: string) => {
      const root = join(home, 'sessions')
      const key = readdirSync(root).find((k) => existsSync(join(root, k, id)))
      return join(root, key!, id)
    }
    const until = async (cond: () => boolean, what: string) => {
      for (let i = 0; i < 800 && !cond(); i++) await new Promise((r) => setTimeout(r, 25))
      if (!cond()) throw new Error(`timed out waiting for ${what}`)
    }
    function start(args: string[], env: Record<string, string>, cwd: string) {
      const child = spawn(process.execPath, [DSH_BIN, ...args], {
        cwd,
        env: { PATH: process.env.PATH!, HOME: cwd, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      const run = {
        child,
        stdout: '',
        stderr: '',
        exit: new Promise<{ code: number | null; signal: string | null }>((r) =>
          child.on('close', (code, signal) => r({ code, signal })),
        ),
      }
      child.stdout.setEncoding('utf8').on('data', (d: string) => (run.stdout += d))
      child.stderr.setEncoding('utf8').on('data', (d: string) => (run.stderr += d))
      return run
    }

    for (const [signal, status] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
    ] as const) {
      it(`${signal} while the model streams exits ${status}, logs turn/end cancelled and leaves no lock`, async () => {
        const { home, cwd } = workspace()
        const s = await withMock([{ events: [{ text: 'working on it' }, { stall: true }] }, { text: 'resumed fine' }])
        const run = start(
          [...plainLogs(cwd), '--profile', 'headless', '--output-format', 'stream-json', 'long task'],
          envFor(home, s),
          cwd,
        )
        await until(() => run.stdout.includes('working on it'), 'the first chunk')
        run.child.kill(signal)
        expect(await run.exit).toEqual({ code: status, signal: null })
        expect(run.stderr).not.toMatch(/inactive context|\n\s+at /)
        const sessionId = JSON.parse(run.stdout.split('\n')[0]).sessionId
        const dir = sessionDir(home, sessionId)
        const log = readFileSync(join(dir, 'session.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l))
        expect(log.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 0, reason: 'cancelled' } })
        expect(existsSync(join(dir, 'writer.lock'))).toBe(false)
        // The next run continues the closed turn: nothing to repair.
        const next = await dsh(
          [...plainLogs(cwd), '--profile', 'headless', '--continue', '--output-format', 'json', 'go on'],
          envFor(home, s),
          cwd,
        )
        expect(next.code).toBe(0)
        expect(next.stderr).toBe('')
        expect(JSON.parse(next.stdout)).toMatchObject({ sessionId, result: 'resumed fine', turns: 2 })
      })
    }

    it('SIGTERM during a running bash tool closes the tool call and the turn', async () => {
      const { home, cwd } = workspace()
      const s = await withMock([
        {
          toolCalls: [
            { name: 'bash', arguments: { command: 'echo started > marker; sleep 30', description: 'long job' } },
          ],
        },
      ])
      const run = start(
        [...plainLogs(cwd), '--profile', 'headless', '--output-format', 'stream-json', 'run the long job'],
        envFor(home, s),
        cwd,
      )
      await until(() => existsSync(join(cwd, 'marker')), 'the tool to start')
      run.child.kill('SIGTERM')
      expect(await run.exit).toEqual({ code: 143, signal: null })
      expect(run.stderr).not.toMatch(/inactive context|\n\s+at /)
      const sessionId = JSON.parse(run.stdout.split('\n')[0]).sessionId
      const dir = sessionDir(home, sessionId)
      const types = readFileSync(join(dir, 'session.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
      expect(types.map((e) => e.type)).toContain('tool/result')
      expect(types.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'cancelled' } })
      expect(existsSync(join(dir, 'writer.lock'))).toBe(false)
    })

    it('a second SIGINT while stopping exits at once with one line', async () => {
      const { home, cwd } = workspace()
      const marker = join(cwd, 'stopping.marker')
      const fixture = fileURLToPath(new URL('./fixtures/stall-stop.mjs', import.meta.url))
      const patch = join(cwd, 'stall.patch.yml')
      writeFileSync(
        patch,
        `- insert:\n    - id: stall-stop\n      name: ${JSON.stringify(fixture)}\n      config:\n        marker: ${JSON.stringify(marker)}\n`,
      )
      const s = await withMock([{ events: [{ text: 'working on it' }, { stall: true }] }])
      const run = start(
        ['--patch', patch, '--profile', 'headless', '--output-format', 'stream-json', 'long task'],
        envFor(home, s),
        cwd,
      )
      await until(() => run.stdout.includes('working on it'), 'the first chunk')
      run.child.kill('SIGINT')
      await until(() => existsSync(marker), 'the stopping phase')
      run.child.kill('SIGINT')
      expect(await run.exit).toEqual({ code: 130, signal: null })
      expect(run.stderr).toContain('dsh: SIGINT again while stopping; exiting now')
      expect(run.stderr).not.toMatch(/inactive context|\n\s+at /)
    })
  })
})
