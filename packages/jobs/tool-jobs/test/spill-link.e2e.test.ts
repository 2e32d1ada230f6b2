// Issue #35 through the real headless bin: a background job's long output used to be spilled to
// the guessable `/tmp/dsh-jobs-<pid>/bash-N.log`, opened through whatever link was planted there,
// so a link to $DSH_HOME/cordis.patch.yml made the job's output the next run's config. The links
// are planted as a confined command could (the temp dir is writable inside the sandbox); the job
// spills into a fresh private directory instead and the user's file is untouched.
import { spawn } from 'node:child_process'
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { DSH_BIN } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

let server: MockServer | undefined
const cleanup: string[] = []
afterAll(async () => {
  await server?.close()
  for (const path of cleanup) rmSync(path, { recursive: true, force: true })
})

const call = (id: string, name: string, args: object) => ({ toolCalls: [{ id, name, arguments: args }] })

function toolText(i: number, callId: string): string {
  const messages = (
    server!.requests[i].body as { messages: Array<{ role: string; content: string; tool_call_id?: string }> }
  ).messages
  return messages.find((m) => m.role === 'tool' && m.tool_call_id === callId)?.content ?? '(none)'
}

it('a long background job never spills through a planted link; its spill file is private', {
  timeout: 120_000,
}, async () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-jobs-link-e2e-')))
  cleanup.push(root)
  const cwd = join(root, 'work')
  const home = join(root, 'home')
  mkdirSync(cwd)
  mkdirSync(home)
  const victim = join(home, 'cordis.patch.yml')
  writeFileSync(victim, '# my own layer\n')
  server = await startMockServer({
    steps: [
      call('b1', 'bash', {
        command: "head -c 300000 /dev/zero | tr '\\0' x; touch job-done",
        description: 'long output',
        run_in_background: true,
      }),
      // Waits for the job's own event (its marker file), then for its end.
      call('w1', 'bash', {
        command: 'until [ -e job-done ]; do sleep 0.02; done; echo seen',
        description: 'wait for the job',
      }),
      call('k1', 'job_kill', { id: 'bash-1' }),
      call('o1', 'job_output', { id: 'bash-1', since: 0 }),
      { text: 'done' },
    ] as never,
  })
  const child = spawn(process.execPath, [DSH_BIN, '--profile', 'headless', 'make long output'], {
    cwd,
    env: {
      PATH: process.env.PATH,
      HOME: root,
      DSH_HOME: home,
      DEEPSEEK_BASE_URL: server.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  // The old spill path of this dsh process, planted before it could spill: the directory is a link
  // to a place the attacker controls, whose `bash-1.log` is a link to the user's layer file.
  const planted = join(root, 'planted')
  mkdirSync(planted)
  symlinkSync(victim, join(planted, 'bash-1.log'))
  const predictable = join('/tmp', `dsh-jobs-${child.pid}`)
  rmSync(predictable, { recursive: true, force: true })
  symlinkSync(planted, predictable)
  cleanup.push(predictable)
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000)
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  clearTimeout(timer)
  expect({ code, stdout }, stderr).toEqual({ code: 0, stdout: 'done\n' })
  expect(readFileSync(victim, 'utf8')).toBe('# my own layer\n')
  expect(toolText(2, 'w1')).toContain('seen')
  const output = toolText(4, 'o1')
  const spillPath = /the whole output is in (\S+\.log)/.exec(output)?.[1]
  expect(spillPath, output).toBeDefined()
  expect(spillPath!.startsWith(predictable)).toBe(false)
  expect(statSync(spillPath!).size).toBe(300000)
  expect(statSync(spillPath!).mode & 0o777).toBe(0o600)
  expect(statSync(join(spillPath!, '..')).mode & 0o777).toBe(0o700)
  cleanup.push(join(spillPath!, '..', '..'))
})
