// End-to-end: a broken settings or credentials file stops the real `dsh` bin at launch with one
// line naming the file and what is wrong (exit 1), before any model request is made.
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

async function launch(prepare: (home: string) => void, env: Record<string, string> = {}) {
  const root = mkdtempSync(join(tmpdir(), 'dsh-config-errors-'))
  const home = join(root, 'home')
  const cwd = join(root, 'project')
  mkdirSync(home)
  mkdirSync(cwd)
  prepare(home)
  server = await startMockServer({ steps: [{ text: 'done' }] })
  const run = await runDsh(['--profile', 'headless', 'hello'], {
    cwd,
    env: { HOME: root, DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, ...env },
  })
  return { run, home, requests: server.requests.length }
}

function credentials(home: string, text: string, mode = 0o600): void {
  writeFileSync(join(home, '.credentials.yaml'), text)
  chmodSync(join(home, '.credentials.yaml'), mode)
}

describe('a broken configuration file', () => {
  it('settings.yaml with a YAML error', { timeout: 60_000 }, async () => {
    const { run, home, requests } = await launch(
      (h) => writeFileSync(join(h, 'settings.yaml'), 'web:\n  list: [1, 2\nother: x\n'),
      { DEEPSEEK_API_KEY: 'sk-test' },
    )
    expect(run.stderr).toMatch(
      new RegExp(
        `^dsh: boot failed: row settings \\(@dsh/settings-file\\): apply failed: ${join(home, 'settings.yaml').replace(/[.]/g, '\\.')}:\\d+:\\d+: malformed settings file: [^\\n]+\\n$`,
      ),
    )
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(requests).toBe(0)
  })

  it('.credentials.yaml with a YAML error', { timeout: 60_000 }, async () => {
    const { run, home, requests } = await launch((h) => credentials(h, 'DEEPSEEK_API_KEY: "sk-unterminated\n'))
    const file = join(home, '.credentials.yaml')
    expect(run.stderr).toMatch(
      new RegExp(
        `^dsh: boot failed: row credentials \\(@dsh/credentials-local\\): apply failed: ${file.replace(/[.]/g, '\\.')}:\\d+:\\d+: malformed credentials file \\([A-Z_]+\\); expected lines of NAME: value\\n$`,
      ),
    )
    expect(run.stderr).not.toContain('sk-unterminated')
    expect(run.code).toBe(1)
    expect(requests).toBe(0)
  })

  it('.credentials.yaml readable by others', { timeout: 60_000 }, async () => {
    const { run, home, requests } = await launch((h) => credentials(h, 'DEEPSEEK_API_KEY: sk-test\n', 0o644))
    const file = join(home, '.credentials.yaml')
    expect(run.stderr).toBe(
      `dsh: boot failed: row credentials (@dsh/credentials-local): apply failed: refusing to read ${file}: its mode is 0644, readable beyond its owner; run: chmod 600 ${file}\n`,
    )
    expect(run.code).toBe(1)
    expect(requests).toBe(0)
  })
})
