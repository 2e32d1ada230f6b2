// A reader that goes away early (`dsh -p --output-format stream-json ... | head -1`) ends dsh
// quietly, through the real bin: exit 141 (as a SIGPIPE'd program) or 0, nothing on stderr, and
// a turn that would stream forever is stopped rather than left running. The pipe is closed by the
// test itself: stdout is a pipe whose read end is destroyed after the first line (or at once).
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { DSH_BIN, runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

const mocks: MockServer[] = []
const children: ChildProcess[] = []
afterEach(async () => {
  // A run that failed to stop its turn would stream forever: the test's timeout must not leave it.
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  for (const m of mocks.splice(0)) await m.close()
})

function workspace() {
  const root = mkdtempSync(join(tmpdir(), 'dsh-closed-output-'))
  const home = join(root, 'home')
  const cwd = join(root, 'work')
  mkdirSync(cwd, { recursive: true })
  return { home, cwd }
}

interface Closed {
  code: number | null
  signal: NodeJS.Signals | null
  stderr: string
  /** What arrived on stdout before the test closed it. */
  seen: string
}

/**
 * Runs the bin with stdout a pipe; once `closeWhen(stdoutSoFar)` holds (checked at spawn and on
 * every chunk) the read end is destroyed, so the child's next write fails with EPIPE.
 */
function runAndClose(
  args: string[],
  env: Record<string, string>,
  cwd: string,
  closeWhen: (seen: string) => boolean,
): Promise<Closed> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [DSH_BIN, ...args], {
      cwd,
      env: { PATH: process.env.PATH!, HOME: process.env.HOME!, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.push(child)
    let seen = ''
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const close = () => {
      if (closeWhen(seen)) child.stdout.destroy()
    }
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      seen += d
      close()
    })
    close()
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code, signal, stderr, seen }))
  })
}

const quiet = (r: Closed) => {
  expect(r.signal).toBeNull()
  expect([0, 141]).toContain(r.code)
  expect(r.stderr).toBe('')
}

describe('dsh with a stdout whose reader went away', () => {
  it('stream-json | head -1: the endless turn stops, exit 141, no stack trace', async () => {
    const { home, cwd } = workspace()
    // The model streams until the client disconnects: only a run that stops its turn can exit.
    const mock = await startMockServer({
      steps: [{ events: [{ text: 'first ' }, { forever: { text: 'more ', intervalMs: 2 } }] }] as never,
    })
    mocks.push(mock)
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: mock.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' }
    const r = await runAndClose(['-p', '--output-format', 'stream-json', 'talk forever'], env, cwd, (seen) =>
      seen.includes('\n'),
    )
    expect(JSON.parse(r.seen.split('\n')[0])).toMatchObject({ type: 'event' })
    quiet(r)
    expect(r.code).toBe(141)
    // The stopped turn was closed in the log like a cancelled one: a continuation needs no repair.
    const next = await startMockServer({ steps: [{ expect: { lastContains: 'go on' }, text: 'continued' }] as never })
    mocks.push(next)
    const continued = await runDsh(['-p', '-c', 'go on'], { cwd, env: { ...env, DEEPSEEK_BASE_URL: next.baseURL } })
    expect(continued, continued.stderr).toMatchObject({ code: 0, stdout: 'continued\n', stderr: '' })
  }, 60_000)

  it.each([['text'], ['json']])(
    '--output-format %s with stdout closed before the result: exit 141, nothing on stderr',
    async (format) => {
      const { home, cwd } = workspace()
      const mock = await startMockServer({ steps: [{ text: 'x'.repeat(200_000) }] as never })
      mocks.push(mock)
      const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: mock.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' }
      const r = await runAndClose(['-p', '--output-format', format, 'say a lot'], env, cwd, () => true)
      quiet(r)
      expect(r.code).toBe(141)
      // Positive control: the turn did run (the model was asked), only its output went nowhere.
      expect(mock.requests).toHaveLength(1)
    },
    60_000,
  )

  it('the launcher and the sessions listing write to a closed pipe quietly', async () => {
    const { home, cwd } = workspace()
    const mock = await startMockServer({ steps: [{ text: 'one' }] as never })
    mocks.push(mock)
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: mock.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' }
    // A stored session, so the listing has rows to print.
    const stored = await runAndClose(['-p', 'hi'], env, cwd, () => false)
    expect(stored.code, stored.stderr).toBe(0)
    for (const args of [
      ['--help'],
      ['sessions', '--all'],
      ['sessions', '--all', '--output-format', 'json'],
      ['--dump-config'],
    ]) {
      const r = await runAndClose(args, env, cwd, () => true)
      expect(r.stderr, args.join(' ')).toBe('')
      expect(r.signal).toBeNull()
      expect([0, 141], args.join(' ')).toContain(r.code)
    }
  }, 120_000)
})
