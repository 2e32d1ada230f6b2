// End-to-end: the E2B control plane answering 429/500 outside create, through the real bin, the
// stand-in (its scripted faults) and the mock model. Each call is retried a bounded number of
// times (`retries: 2`: three tries), then one line says what is left where: a reconnect that keeps
// failing leaves the session's sandbox as it was and creates no other; a kill at the end that
// keeps failing names the sandbox id so the user can end it.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'
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
  standin.faults.splice(0)
})

function workspace(onExit: 'kill' | 'pause') {
  const cwd = mkdtempSync(join(tmpdir(), 'dsh-e2b-control-'))
  writeFileSync(join(cwd, '.gitignore'), 'home/\nlayer.yml\n')
  const layer = join(cwd, 'layer.yml')
  // Short retry waits keep the test quick; the count is the default (2 retries, 3 tries).
  writeFileSync(layer, `- id: e2b\n  config:\n    onExit: ${onExit}\n    retryDelayMs: 20\n`)
  return { home: join(cwd, 'home'), cwd, layer }
}

const env = (home: string, s: MockServer) => ({
  DSH_HOME: home,
  DEEPSEEK_BASE_URL: s.baseURL,
  DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
  ...standin.env,
})

const bash = (command: string) => ({ toolCalls: [{ name: 'bash', arguments: { command, description: 'run' } }] })

const toolText = (s: MockServer, i: number) => {
  const messages = (s.requests[i].body as { messages: { role: string; content: string }[] }).messages
  return messages.filter((m) => m.role === 'tool').at(-1)?.content ?? ''
}

/** One run whose bash prints the sandbox id (changing no file, so no patch line). */
async function once(home: string, cwd: string, layer: string, extra: string[] = []) {
  const s = (server = await startMockServer({ steps: [bash('hostname'), bash('hostname'), { text: 'Ran.' }] as never }))
  const mark = standin.requests.length
  const run = await runDsh(['-p', '--world', 'e2b', '--patch', layer, ...extra, 'where am I'], {
    cwd,
    env: env(home, s),
    timeoutMs: 90_000,
  })
  return { run, s, requests: standin.requests.slice(mark) }
}

describe('control plane 429/500 outside create', () => {
  it('the kill at the end is retried through 429s, and the sandbox is gone', async () => {
    const { home, cwd, layer } = workspace('kill')
    standin.faults.push({ method: 'DELETE', path: '/sandboxes/', status: 429, times: 2 })
    const { run, s, requests } = await once(home, cwd, layer)
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Ran.\n', stderr: '' })
    const id = toolText(s, 1).split('\n')[0]
    expect(id).toMatch(/^i[0-9a-f]+$/)
    const deletes = requests.filter((r) => r.method === 'DELETE' && r.path === `/sandboxes/${id}`)
    expect(deletes.map((r) => r.status)).toEqual([429, 429, 204])
    expect(standin.get(id)).toBeUndefined()
  }, 60_000)

  it('a kill that keeps failing: three tries, then one line naming the sandbox id', async () => {
    const { home, cwd, layer } = workspace('kill')
    standin.faults.push({ method: 'DELETE', path: '/sandboxes/', status: 500, times: 10 })
    const { run, s, requests } = await once(home, cwd, layer)
    const id = toolText(s, 1).split('\n')[0]
    expect(id).toMatch(/^i[0-9a-f]+$/)
    expect(run.code).toBe(0)
    expect(run.stdout).toBe('Ran.\n')
    expect(run.stderr).toBe(
      `dsh: the E2B sandbox ${id} could not be killed (500: injected fault 500, 3 tries); it runs until its timeout (600 s after its last use); to end it now: e2b sandbox kill ${id}\n`,
    )
    expect(requests.filter((r) => r.method === 'DELETE').map((r) => r.status)).toEqual([500, 500, 500])
    // Still running: the line is true, and the user can end it.
    expect(standin.get(id)?.record.state).toBe('running')
    standin.faults.splice(0)
    expect(standin.kill(id)).toBe(true)
  }, 60_000)

  it('-c whose reconnect keeps failing: bounded tries, one line, no second sandbox, the old one kept', async () => {
    const { home, cwd, layer } = workspace('pause')
    const first = await once(home, cwd, layer)
    expect(first.run, first.run.stderr).toMatchObject({ code: 0, stdout: 'Ran.\n' })
    const id = toolText(first.s, 1).split('\n')[0]
    expect(standin.get(id)?.record.state).toBe('paused')
    await first.s.close()
    standin.faults.push({ method: 'POST', path: `/sandboxes/${id}/connect`, status: 500, times: 10 })
    const { run, s, requests } = await once(home, cwd, layer, ['-c'])
    expect(run.code, run.stderr).toBe(0)
    const line = `could not reconnect to the session's E2B sandbox ${id} (500: injected fault 500, 3 tries); it was left as it was: continue the session again later, or end it with: e2b sandbox kill ${id}`
    expect(run.stderr).toBe(`dsh: ${line}\n`)
    // The model reads the same sentence, for both commands, and the second asked E2B nothing more.
    expect(toolText(s, 1)).toContain(line)
    expect(toolText(s, 2)).toContain(line)
    expect(requests.filter((r) => r.path === `/sandboxes/${id}/connect`).map((r) => r.status)).toEqual([500, 500, 500])
    // Nothing created, nothing killed: the session's sandbox is still there for the next -c.
    expect(requests.filter((r) => r.method === 'POST' && r.path === '/sandboxes')).toHaveLength(0)
    expect(requests.filter((r) => r.method === 'DELETE')).toHaveLength(0)
    expect(standin.get(id)?.record.state).toBe('paused')
    // And once E2B answers again, -c reconnects to it.
    standin.faults.splice(0)
    await s.close()
    const again = await once(home, cwd, layer, ['-c'])
    expect(again.run, again.run.stderr).toMatchObject({ code: 0, stdout: 'Ran.\n', stderr: '' })
    expect(toolText(again.s, 1).split('\n')[0]).toBe(id)
    expect(standin.kill(id)).toBe(true)
  }, 90_000)
})
