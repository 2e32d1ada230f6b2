// End-to-end: the real `dsh` bin in a directory whose `.env` a confined command could have
// written. It may supply the provider key, never the permission mode, the base URL or DSH_HOME.
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
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

/** A 127.0.0.1 port nothing listens on (bound, then released). */
async function deadPort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as { port: number }
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  return port
}

function layout() {
  const root = mkdtempSync(join(tmpdir(), 'dsh-project-env-'))
  const home = join(root, 'home')
  const cwd = join(root, 'project')
  mkdirSync(home)
  mkdirSync(cwd)
  return { root, home, cwd }
}

const requestText = (s: MockServer) => JSON.stringify(s.requests.map((r) => r.body))

describe('a project .env written by a confined command', () => {
  it('supplies the key but not the permission mode, the base URL or DSH_HOME', { timeout: 60_000 }, async () => {
    const { root, home, cwd } = layout()
    server = await startMockServer({ steps: [{ text: 'done' }] })
    const elsewhere = join(root, 'attacker-home')
    writeFileSync(
      join(cwd, '.env'),
      [
        'DSH_PERMISSION_MODE=danger-full-access',
        `DEEPSEEK_BASE_URL=http://127.0.0.1:${await deadPort()}/v1`,
        `DSH_HOME=${elsewhere}`,
        'DEEPSEEK_API_KEY=sk-from-project-env',
        '',
      ].join('\n'),
    )
    // The user's own file names the real endpoint: explicit configuration outside the workspace.
    writeFileSync(join(home, '.env'), `DEEPSEEK_BASE_URL=${server.baseURL}\n`)

    const run = await runDsh(['--profile', 'headless', 'hello'], { cwd, env: { HOME: root, DSH_HOME: home } })

    expect(run.stdout).toBe('done\n')
    expect(run.code).toBe(0)
    // The configured endpoint got the request, authenticated with the project's key.
    expect(server.requests).toHaveLength(1)
    expect(server.requests[0].headers.authorization).toBe('Bearer sk-from-project-env')
    // The model was told the confined mode, not the one the .env asked for.
    expect(requestText(server)).toContain('[sandbox policy] workspace-write')
    expect(requestText(server)).not.toContain('danger-full-access')
    // One warning line naming the file and the ignored names, never a value.
    expect(run.stderr).toBe(
      `dsh: warning: ${join(cwd, '.env')}: ignored DEEPSEEK_BASE_URL, DSH_HOME, DSH_PERMISSION_MODE: a project .env supplies only provider credentials (add credential names with DSH_PROJECT_ENV_ALLOW in the environment or $DSH_HOME/.env)\n`,
    )
    expect(run.stderr).not.toContain('danger-full-access')
    expect(run.stderr).not.toContain('sk-from-project-env')
    // No plugin followed the .env's DSH_HOME.
    expect(existsSync(elsewhere)).toBe(false)
  })

  it('gives the key to the adapter but never to a command (the default scrub list applies)', {
    timeout: 60_000,
  }, async () => {
    const { root, home, cwd } = layout()
    server = await startMockServer({
      steps: [
        {
          toolCalls: [
            { id: 'c_env', name: 'bash', arguments: { command: 'env', description: 'show the environment' } },
          ],
        },
        { text: 'done' },
      ] as never,
    })
    writeFileSync(join(cwd, '.env'), 'DEEPSEEK_API_KEY=sk-project-key\n')
    const run = await runDsh(['--profile', 'headless', 'hello'], {
      cwd,
      env: {
        HOME: root,
        DSH_HOME: home,
        DEEPSEEK_BASE_URL: server.baseURL,
        GITHUB_TOKEN: 'ghp-inherited',
        AWS_REGION: 'xx-test-1',
        MY_ORDINARY_VAR: 'visible',
      },
    })
    expect(run.stdout).toBe('done\n')
    expect(run.code).toBe(0)
    expect(server.requests).toHaveLength(2)
    expect(server.requests[0].headers.authorization).toBe('Bearer sk-project-key')
    const toolResult = JSON.stringify(server.requests[1].body)
    expect(toolResult).toContain('MY_ORDINARY_VAR=visible')
    expect(toolResult).not.toContain('sk-project-key')
    expect(toolResult).not.toContain('DEEPSEEK_API_KEY')
    expect(toolResult).not.toContain('ghp-inherited')
    expect(toolResult).not.toContain('xx-test-1')
  })

  it('refuses a non-credential name in DSH_PROJECT_ENV_ALLOW before any request', { timeout: 60_000 }, async () => {
    const { root, home, cwd } = layout()
    server = await startMockServer({ steps: [{ text: 'done' }] })
    writeFileSync(join(cwd, '.env'), 'DEEPSEEK_API_KEY=sk-p\n')
    const env = { HOME: root, DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL }
    const bad = await runDsh(['--profile', 'headless', 'hello'], {
      cwd,
      env: { ...env, DSH_PROJECT_ENV_ALLOW: 'MY_API_KEY,DEEPSEEK_BASE_URL' },
    })
    expect(bad.stderr).toBe(
      'dsh: DSH_PROJECT_ENV_ALLOW: "DEEPSEEK_BASE_URL" is not a credential name (it must end in _KEY, _TOKEN, _SECRET or _PASSWORD)\n',
    )
    expect(bad.code).toBe(1)
    expect(server.requests).toHaveLength(0)
  })

  it('stops at a malformed .env with one line naming the file and line', { timeout: 60_000 }, async () => {
    const { root, home, cwd } = layout()
    server = await startMockServer({ steps: [{ text: 'done' }] })
    writeFileSync(join(home, '.env'), '# keys\nDEEPSEEK_API_KEY="sk-unclosed\n')
    const run = await runDsh(['--profile', 'headless', 'hello'], {
      cwd,
      env: { HOME: root, DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL },
    })
    expect(run.stderr).toBe(`dsh: ${join(home, '.env')}:2: malformed .env file: the "-quoted value is never closed\n`)
    expect(run.code).toBe(1)
    expect(server.requests).toHaveLength(0)
  })
})
