// End-to-end: Ctrl-C (SIGINT) while the workspace is being uploaded into a new E2B sandbox. The
// stand-in holds the upload request, so the test knows the upload is under way without sleeping;
// then dsh gets SIGINT. The upload stops, the sandbox created for it is killed (the stand-in sees
// the DELETE), dsh exits 130 with one line, and nothing is left half-done locally: the tree is as
// it was, no patch is saved, the session log holds the closed turn and the kill, no writer lock.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { DSH_BIN } from '@dsh/cli-testkit'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'

let standin: E2bStandin
let server: MockServer | undefined
beforeAll(async () => {
  standin = await startE2bStandin()
})
afterAll(async () => {
  await standin.close()
})
afterEach(async () => {
  await server?.close()
  server = undefined
})

/** The real bin as a child this test can signal; stdout and stderr collected. */
function start(args: string[], cwd: string, env: Record<string, string>) {
  const child = spawn(process.execPath, [DSH_BIN, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: cwd, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const run = {
    child,
    stdout: '',
    stderr: '',
    exit: new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      child.on('close', (code, signal) => resolve({ code, signal })),
    ),
  }
  child.stdout.setEncoding('utf8').on('data', (d: string) => (run.stdout += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (run.stderr += d))
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
  void run.exit.then(() => clearTimeout(timer))
  return run
}

/** Every file under `dir` with its bytes, for "unchanged" checks. */
function snapshot(dir: string, skip: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (at: string, rel: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name)
      const name = rel ? `${rel}/${entry.name}` : entry.name
      if (name === skip) continue
      if (entry.isDirectory()) walk(path, name)
      else out[name] = readFileSync(path, 'latin1')
    }
  }
  walk(dir, '')
  return out
}

describe('Ctrl-C during the workspace upload', () => {
  it('stops the upload, kills the new sandbox, exits 130 with one line, leaves nothing half-done', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-e2b-interrupt-'))
    writeFileSync(join(cwd, '.gitignore'), 'home/\nlayer.yml\n')
    writeFileSync(join(cwd, 'notes.txt'), 'alpha\nbeta\n')
    // Plain JSONL session logs, so the test can read what was stored.
    writeFileSync(join(cwd, 'layer.yml'), '- id: session-persistence-jsonl\n  config:\n    compression: none\n')
    const home = join(cwd, 'home')
    const before = snapshot(cwd, 'home')
    const s = (server = await startMockServer({
      steps: [
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo hi > out.txt', description: 'write' } }] },
        { text: 'never reached' },
      ] as never,
    }))
    const mark = standin.requests.length
    // The upload of the packed workspace is the first POST /files of a new sandbox.
    const hold = standin.hold('POST', '/files')
    const run = start(['--patch', join(cwd, 'layer.yml'), '-p', '--world', 'e2b', 'write a file'], cwd, {
      DSH_HOME: home,
      DEEPSEEK_BASE_URL: s.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
      ...standin.env,
    })
    try {
      const upload = await Promise.race([hold.arrived, run.exit.then(() => undefined)])
      expect(upload, run.stderr).toBeDefined()
      const id = (upload as { sandboxId?: string }).sandboxId as string
      expect(id).toMatch(/^i[0-9a-f]+$/)
      expect(standin.get(id)?.record.state).toBe('running')
      run.child.kill('SIGINT')
      expect(await run.exit).toEqual({ code: 130, signal: null })
      // One line, naming the interrupted upload and the killed sandbox.
      expect(run.stderr).toBe(
        `dsh: interrupted while uploading the workspace; the E2B sandbox ${id} created for it was killed\n`,
      )
      expect(run.stdout).toBe('')
      // The stand-in saw the kill, and the sandbox is gone.
      const mine = standin.requests.slice(mark)
      expect(mine.some((r) => r.method === 'DELETE' && r.path === `/sandboxes/${id}`)).toBe(true)
      expect(standin.get(id)).toBeUndefined()
    } finally {
      hold.release()
    }
    // Nothing half-done locally: the tree is byte for byte what it was, no patch was saved, the
    // session log closed the turn and recorded the kill, and no writer lock is left.
    expect(snapshot(cwd, 'home')).toEqual(before)
    expect(existsSync(join(home, 'e2b-patches'))).toBe(false)
    const sessions = join(home, 'sessions')
    const key = readdirSync(sessions, { withFileTypes: true }).find((e) => e.isDirectory())?.name as string
    const [sessionId] = readdirSync(join(sessions, key))
    const dir = join(sessions, key, sessionId)
    const log = readFileSync(join(dir, 'session.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; data: Record<string, unknown> })
    expect(log.filter((e) => e.type === 'turn/end')).toMatchObject([{ data: { reason: 'cancelled' } }])
    // The sandbox's end is the log's last word: killed because the upload was interrupted.
    const sandbox = log.filter((e) => e.type === 'e2b/sandbox').map((e) => e.data)
    expect(sandbox).toEqual([
      {
        sandboxId: expect.stringMatching(/^i/),
        template: 'base',
        action: 'killed',
        reason: 'interrupted while uploading the workspace',
      },
    ])
    expect(log.at(-1)?.type).toBe('e2b/sandbox')
    expect(existsSync(join(dir, 'writer.lock'))).toBe(false)
    // The model was asked once (the turn stopped at the interrupted tool call).
    expect(s.requests).toHaveLength(1)
  }, 60_000)
})
