// End-to-end (issue #14 item 5): the real `dsh --profile headless` bin against a provider whose
// 401 body echoes the request headers, Authorization included. The key must reach none of stdout,
// stderr or the saved session log; the redaction marker must appear instead.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { REDACTED } from '@dsh/llm'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
// cli-testkit is not a dependency of this package; its source is imported directly so the test
// needs no lockfile change.
import { runDsh } from '@dsh/cli-testkit'

const KEY = 'sk-e2e-redaction-4f9c2a7e1b3d5f60'
let server: MockServer | undefined

afterEach(async () => {
  await server?.close()
  server = undefined
})

/** Every file under `dir`, recursively. */
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : [path]
  })
}

describe('dsh headless: a provider error echoing the Authorization header', () => {
  it('never prints or logs the key, in JSON and in text output', { timeout: 60_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-redact-'))
    const home = join(root, 'home')
    const cwd = join(root, 'work')
    mkdirSync(cwd, { recursive: true })
    // Plain JSONL so the log can be searched as text.
    const patch = join(root, 'plain-log.patch.yml')
    writeFileSync(patch, '- id: session-persistence-jsonl\n  config:\n    compression: none\n')
    const echo = { error: { status: 401, message: 'Authentication Fails', echoHeaders: true } }
    server = await startMockServer({ steps: [echo, echo] })
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: KEY }

    const json = await runDsh(['--profile', 'headless', '--patch', patch, '--output-format', 'json', 'hello'], {
      cwd,
      env,
    })
    const text = await runDsh(['--profile', 'headless', '--patch', patch, 'hello again'], { cwd, env })

    // The server really did echo the key: the leak is real without redaction.
    expect(server.requests).toHaveLength(2)
    for (const request of server.requests) expect(request.headers.authorization).toBe(`Bearer ${KEY}`)

    expect(json.code).toBe(1)
    const result = JSON.parse(json.stdout)
    expect(result).toMatchObject({ type: 'result', reason: 'error', error: { code: 'AUTH' } })
    expect(result.error.message).toContain(`"authorization":"Bearer ${REDACTED}"`)
    expect(json.stdout).not.toContain(KEY)
    expect(json.stderr).not.toContain(KEY)

    expect(text.code).toBe(1)
    expect(text.stderr).toContain('AUTH')
    expect(text.stderr).toContain(`Bearer ${REDACTED}`)
    expect(text.stdout).not.toContain(KEY)
    expect(text.stderr).not.toContain(KEY)

    // The saved session logs (and everything else under DSH_HOME) hold the marker, never the key.
    const saved = files(home)
    const logs = saved.filter((path) => path.endsWith('session.jsonl'))
    expect(logs).toHaveLength(2)
    for (const log of logs) expect(readFileSync(log, 'utf8')).toContain(REDACTED)
    for (const path of saved) expect(readFileSync(path, 'utf8'), path).not.toContain(KEY)
  })
})
