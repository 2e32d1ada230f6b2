// The CLI conventions of issue 15, end to end: the real `dsh` bin, the real base + headless
// bundles, the DeepSeek adapter against @dsh/llm-mock-server on loopback.
import { spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
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
  const root = mkdtempSync(join(tmpdir(), 'dsh-conv-'))
  const cwd = join(root, 'project')
  mkdirSync(cwd)
  return { root, home: join(root, 'home'), cwd }
}

async function mock(steps: unknown[]) {
  server = await startMockServer({ steps: steps as never })
  return server
}

const envFor = (home: string, s: MockServer) => ({
  DSH_HOME: home,
  DEEPSEEK_BASE_URL: s.baseURL,
  DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
})
const lastUser = (s: MockServer, i: number) =>
  JSON.stringify((s.requests[i].body as { messages: unknown[] }).messages.at(-1))

describe('dsh -p / --print', () => {
  it('dsh -p "task" and dsh --print "task" run one task and print the answer', async () => {
    const { home, cwd } = workspace()
    const s = await mock([{ text: 'one' }, { text: 'two' }])
    expect(await runDsh(['-p', 'first task'], { cwd, env: envFor(home, s) })).toMatchObject({
      code: 0,
      stdout: 'one\n',
      stderr: '',
    })
    expect(await runDsh(['--print', 'second task'], { cwd, env: envFor(home, s) })).toMatchObject({
      code: 0,
      stdout: 'two\n',
      stderr: '',
    })
    expect(lastUser(s, 0)).toContain('first task')
    expect(lastUser(s, 1)).toContain('second task')
  })

  it('accepts app options and launcher flags after the task', async () => {
    const { home, cwd } = workspace()
    const s = await mock([{ text: 'after' }])
    const patch = join(cwd, 'steps.patch.yml')
    writeFileSync(patch, '- id: headless-runner\n  config:\n    maxSteps: 1\n')
    const run = await runDsh(
      ['-p', 'fix it', '--output-format', 'json', '--model', 'deepseek-v4-flash', '--patch', patch],
      { cwd, env: envFor(home, s) },
    )
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({ result: 'after', steps: 1 })
    expect(lastUser(s, 0)).toContain('fix it')
    // `--` ends option parsing: what follows is task text.
    const s2 = await mock([{ text: 'literal' }])
    const literal = await runDsh(['-p', '--', '--model', 'is', 'text'], { cwd, env: envFor(home, s2) })
    expect(literal).toMatchObject({ code: 0, stdout: 'literal\n' })
    expect(lastUser(s2, 0)).toContain('--model is text')
  })

  it('json output carries session_id, is_error, result and usage next to our fields', async () => {
    const { home, cwd } = workspace()
    const s = await mock([{ text: 'fine' }, { error: { status: 400, message: 'bad request body' } }])
    const ok = JSON.parse((await runDsh(['-p', 'hi', '--output-format', 'json'], { cwd, env: envFor(home, s) })).stdout)
    expect(ok).toMatchObject({ type: 'result', is_error: false, result: 'fine', reason: 'completed' })
    expect(ok.session_id).toBe(ok.sessionId)
    expect(ok.usage.input).toBeGreaterThan(0)
    const failed = await runDsh(['-p', 'hi', '--output-format', 'json'], { cwd, env: envFor(home, s) })
    expect(failed.code).toBe(1)
    expect(JSON.parse(failed.stdout)).toMatchObject({ is_error: true, reason: 'error' })
  })

  it('an empty task is a usage error: exit 2, one line, no request', async () => {
    const { home, cwd } = workspace()
    const s = await mock([{ text: 'never' }])
    for (const args of [['-p'], ['-p', '   '], ['--print', '--output-format', 'json']]) {
      const run = await runDsh(args, { cwd, env: envFor(home, s), stdin: '' })
      expect(run.code).toBe(2)
      expect(run.stderr.trim().split('\n')).toHaveLength(1)
      expect(run.stderr).toContain('no task given')
    }
    expect(s.requests).toHaveLength(0)
  })
})

describe('piped stdin without "-"', () => {
  it('is the task when no task is given', async () => {
    const { home, cwd } = workspace()
    const s = await mock([{ text: 'piped' }])
    const run = await runDsh(['-p'], { cwd, env: envFor(home, s), stdin: 'the task came down a pipe\n' })
    expect(run).toMatchObject({ code: 0, stdout: 'piped\n' })
    expect(lastUser(s, 0)).toContain('the task came down a pipe')
  })

  it('is appended to the task as context when both are given', async () => {
    const { home, cwd } = workspace()
    const s = await mock([{ text: 'reviewed' }])
    const run = await runDsh(['-p', 'review this diff'], {
      cwd,
      env: envFor(home, s),
      stdin: '+added line\n-removed line\n',
    })
    expect(run).toMatchObject({ code: 0, stdout: 'reviewed\n' })
    const sent = JSON.parse(lastUser(s, 0)) as { content: unknown }
    const text = typeof sent.content === 'string' ? sent.content : JSON.stringify(sent.content)
    expect(text).toContain('review this diff')
    expect(text).toContain('+added line')
    expect(text.indexOf('review this diff')).toBeLessThan(text.indexOf('+added line'))
  })
  it('a task-given run does not hang on a stdin pipe its parent keeps open and silent', async () => {
    const { home, cwd } = workspace()
    const s = await mock([{ text: 'not stuck' }])
    const out = await new Promise<{ code: number | null; stdout: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [DSH_BIN, '-p', 'just the task'], {
        cwd,
        env: { PATH: process.env.PATH, HOME: home, ...envFor(home, s) },
        stdio: ['pipe', 'pipe', 'pipe'], // stdin is never written nor closed
      })
      let stdout = ''
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
      child.on('error', reject)
      child.on('close', (code) => {
        clearTimeout(timer)
        child.stdin.destroy()
        resolve({ code, stdout })
      })
    })
    expect(out).toEqual({ code: 0, stdout: 'not stuck\n' })
    expect(lastUser(s, 0)).toContain('just the task')
  })
})

describe('--continue, --resume and dsh sessions', () => {
  // Several launches of the bin one after another: 20 s is too short on a loaded machine.
  it('-c continues the latest session; -r ID resumes one; -r alone lists this directory and exits 2', async () => {
    const { home, cwd } = workspace()
    const s = await mock([{ text: 'a1' }, { text: 'a2' }, { text: 'a3' }])
    const env = envFor(home, s)
    const first = JSON.parse((await runDsh(['-p', 'remember kiwi', '--output-format', 'json'], { cwd, env })).stdout)
    expect(await runDsh(['-c', '-p', 'and then'], { cwd, env })).toMatchObject({ code: 0, stdout: 'a2\n' })
    expect(JSON.stringify(s.requests[1].body)).toContain('remember kiwi')
    const resumed = await runDsh(['-p', 'once more', '-r', first.session_id, '--output-format', 'json'], { cwd, env })
    expect(JSON.parse(resumed.stdout)).toMatchObject({ session_id: first.session_id, turns: 3 })
    for (const args of [['-r'], ['-p', 'x', '-r'], ['--resume', '-p', 'x']]) {
      const pick = await runDsh(args, { cwd, env })
      expect(pick.code).toBe(2)
      expect(pick.stdout).toBe('')
      expect(pick.stderr).toContain('--resume needs a session id')
      expect(pick.stderr).toContain(first.session_id)
      expect(pick.stderr).toContain('remember kiwi')
      expect(pick.stderr).toMatch(/just now|m ago/)
    }
    expect(s.requests).toHaveLength(3)
    // Another directory has none to offer.
    const elsewhere = join(cwd, 'sub')
    mkdirSync(elsewhere)
    const none = await runDsh(['-r'], { cwd: elsewhere, env })
    expect(none.code).toBe(2)
    expect(none.stderr.trim().split('\n')).toHaveLength(1)
  }, 60_000)

  it('/help creates no session that --continue picks up', async () => {
    const { home, cwd } = workspace()
    const s = await mock([{ text: 'first' }, { text: 'second' }])
    const env = envFor(home, s)
    const first = JSON.parse((await runDsh(['-p', 'remember kiwi', '--output-format', 'json'], { cwd, env })).stdout)
    expect((await runDsh(['-p', '/help'], { cwd, env })).code).toBe(0)
    const next = await runDsh(['-c', '-p', 'which fruit?', '--output-format', 'json'], { cwd, env })
    expect(JSON.parse(next.stdout)).toMatchObject({ session_id: first.session_id, turns: 2 })
    const listed = JSON.parse((await runDsh(['sessions', '--output-format', 'json'], { cwd, env })).stdout)
    expect(listed.map((r: { id: string }) => r.id)).toEqual([first.session_id])
  })

  it('dsh sessions lists this directory by default and every directory with --all, aligned', async () => {
    const { home, cwd } = workspace()
    const other = join(cwd, 'other')
    mkdirSync(other)
    const s = await mock([{ text: 'here' }, { text: 'there' }])
    const env = envFor(home, s)
    const here = JSON.parse(
      (await runDsh(['-p', 'task in project', '--output-format', 'json'], { cwd, env })).stdout,
    ).session_id
    const there = JSON.parse(
      (await runDsh(['-p', 'task in other', '--output-format', 'json'], { cwd: other, env })).stdout,
    ).session_id
    const local = await runDsh(['sessions'], { cwd, env: { DSH_HOME: home } })
    expect(local.code).toBe(0)
    expect(local.stdout).toContain(here)
    expect(local.stdout).not.toContain(there)
    expect(local.stdout).toContain('task in project')
    const all = await runDsh(['sessions', '--all'], { cwd, env: { DSH_HOME: home } })
    const lines = all.stdout.trimEnd().split('\n')
    expect(lines).toHaveLength(3)
    expect(lines[0]).toMatch(/^ID\s+UPDATED\s+TURNS\s+CWD\s+TITLE$/)
    // Aligned: the TITLE column starts at the same offset on every line.
    const titleAt = lines[0].indexOf('TITLE')
    expect(lines[1].slice(titleAt)).toMatch(/^task in (project|other)$/)
    expect(lines[2].slice(titleAt)).toMatch(/^task in (project|other)$/)
    expect(all.stdout).toContain(other)
    const json = JSON.parse(
      (await runDsh(['sessions', '--all', '--output-format', 'json'], { cwd, env: { DSH_HOME: home } })).stdout,
    )
    expect(json).toHaveLength(2)
  })
})

describe('progress and failures on stderr', () => {
  it('is quiet when stderr is not a terminal, even with tool calls', async () => {
    const { home, cwd } = workspace()
    const s = await mock([
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo hi', description: 'say hi' } }] },
      { text: 'done' },
    ])
    const run = await runDsh(['-p', 'say hi', '--permission-mode', 'danger-full-access'], { cwd, env: envFor(home, s) })
    expect(run).toMatchObject({ code: 0, stdout: 'done\n', stderr: '' })
  })

  it('shows the model wait, each tool with its title and each retry with its reason when stderr is a terminal (a real PTY)', async () => {
    const { home, cwd } = workspace()
    const s = await mock([
      { error: { status: 503, message: 'overloaded right now' } },
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo hi', description: 'say hi' } }] },
      { text: 'done' },
    ])
    const patch = join(cwd, 'fast-retry.patch.yml')
    writeFileSync(patch, '- id: llm-retry\n  config:\n    initialDelayMs: 10\n')
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(DSH_BIN)} -p 'say hi' --permission-mode danger-full-access --patch ${JSON.stringify(patch)}`
    // util-linux `script` gives the child a pseudo-terminal for stdin, stdout and stderr.
    const out = await new Promise<{ code: number | null; text: string }>((resolve, reject) => {
      const child = spawn('script', ['-qec', command, '/dev/null'], {
        cwd,
        env: { PATH: process.env.PATH, HOME: home, TERM: 'dumb', ...envFor(home, s) },
        stdio: ['pipe', 'pipe', 'pipe'],
      })
      let text = ''
      child.stdout.setEncoding('utf8').on('data', (d: string) => (text += d))
      child.stderr.setEncoding('utf8').on('data', (d: string) => (text += d))
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
      child.on('error', reject)
      child.on('close', (code) => {
        clearTimeout(timer)
        resolve({ code, text })
      })
    })
    expect(out.text).toMatch(/dsh: waiting for deepseek[a-z-]*\/deepseek-/)
    expect(out.text).toMatch(/dsh: retrying in [\d.]+s after [A-Z_]+: .*overloaded right now/)
    expect(out.text).toContain('dsh: running bash: say hi')
    expect(out.text).toContain('done')
    expect(out.code).toBe(0)
  })

  it('an unreachable base URL fails fast: one line naming the URL, at most one quick retry', async () => {
    const { home, cwd } = workspace()
    // A port that was just free: connections are refused.
    const probe = createServer()
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()))
    const port = (probe.address() as { port: number }).port
    await new Promise<void>((r) => probe.close(() => r()))
    const url = `http://127.0.0.1:${port}/v1`
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: url, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' }
    const text = await runDsh(['-p', 'hi'], { cwd, env })
    expect(text.code).toBe(1)
    expect(text.stderr.trim().split('\n')).toHaveLength(1)
    expect(text.stderr).toContain(url)
    expect(text.stderr).toContain('ECONNREFUSED')
    // Every retry is a fresh step in the log: one request and at most one retry.
    const stream = await runDsh(['-p', 'hi', '--output-format', 'stream-json'], { cwd, env })
    const steps = stream.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => l.type === 'event' && l.event.type === 'step/start')
    expect(steps.length).toBeGreaterThanOrEqual(1)
    expect(steps.length).toBeLessThanOrEqual(2)
  })
})

describe('--permission-mode and the sandbox probe', () => {
  /** A stand-in bubblewrap that records each invocation (the probe runs `bwrap ... -- true`). */
  function fakeBwrap(root: string) {
    const marker = join(root, 'bwrap-calls.txt')
    const script = join(root, 'fake-bwrap.sh')
    writeFileSync(script, `#!/bin/sh\necho "$*" >> ${JSON.stringify(marker)}\nexit 0\n`, { mode: 0o755 })
    const patch = join(root, 'sandbox.patch.yml')
    writeFileSync(patch, `- id: sandbox\n  config:\n    runner: bwrap\n    bwrap: ${JSON.stringify(script)}\n`)
    return { marker, patch }
  }

  it('danger-full-access never spawns the probe; the default confining mode prewarms it', async () => {
    const { root, home, cwd } = workspace()
    const { marker, patch } = fakeBwrap(root)
    // The answer comes 0.7 s after the request: a prewarm 50 ms after app/ready would have run.
    const s = await mock([
      { text: 'unconfined', delayMs: 700 },
      { text: 'confined', delayMs: 700 },
    ])
    const danger = await runDsh(['-p', 'say hi', '--permission-mode', 'danger-full-access', '--patch', patch], {
      cwd,
      env: envFor(home, s),
    })
    expect(danger).toMatchObject({ code: 0, stdout: 'unconfined\n' })
    expect(existsSync(marker)).toBe(false)
    const confined = await runDsh(['-p', 'say hi', '--patch', patch], { cwd, env: envFor(home, s) })
    expect(confined).toMatchObject({ code: 0, stdout: 'confined\n' })
    expect(readFileSync(marker, 'utf8')).toMatch(/--unshare-pid .*-- true/)
  })
})
