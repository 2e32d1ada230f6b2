// Desktop notifications through the real `dsh -p` (headless) with @dsh/llm-mock-server as the
// model. The notifier is a real subprocess: a fake `notify-send` script first on PATH that
// appends its arguments to a file. The approval case comes from a model-written plugin
// (@dsh/cordis-host-runner) whose run asks for approval, refused by the one-shot's policy.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

vi.setConfig({ testTimeout: 60_000 })

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

function workspace(withNotifier: boolean, patch: string) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-notify-')))
  const bin = join(root, 'bin')
  mkdirSync(bin)
  const record = join(root, 'notifications.txt')
  if (withNotifier) {
    const script = join(bin, 'notify-send')
    writeFileSync(script, `#!/bin/sh\nfor a in "$@"; do printf '%s|' "$a" >> '${record}'; done\necho >> '${record}'\n`)
    chmodSync(script, 0o755)
  }
  writeFileSync(join(root, 'patch.yml'), patch)
  return {
    root,
    record,
    env: (s: MockServer) => ({
      PATH: `${bin}:${process.env.PATH}`,
      DSH_HOME: join(root, 'home'),
      DEEPSEEK_BASE_URL: s.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
    }),
  }
}

const ROW = (on: string) => `- insert:
    - id: desktop-notifications
      name: "@dsh/desktop-notifications"
      config: { minTurnMs: 0, on: [${on}] }
`

describe('@dsh/desktop-notifications', () => {
  it('a finished turn runs notify-send with the app name, urgency, title and the reply', async () => {
    server = await startMockServer({ steps: [{ text: 'All   tests\npass now.' }] as never })
    const w = workspace(true, ROW('turn-end'))
    const run = await runDsh(['-p', '--patch', join(w.root, 'patch.yml'), 'fix it'], {
      cwd: w.root,
      env: w.env(server),
    })
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'All   tests\npass now.\n' })
    expect(readFileSync(w.record, 'utf8')).toBe(
      '--app-name=dsh|--urgency=normal|dsh: turn finished|All tests pass now.|\n',
    )
  })

  it('an approval the turn waits for notifies as critical, naming what is asked', async () => {
    server = await startMockServer({
      steps: [
        { toolCalls: [{ name: 'cordis_define', arguments: { name: 'p', description: 'd', code: 'dsh.log(1)' } }] },
        { toolCalls: [{ name: 'cordis_run', arguments: { name: 'p' } }] },
        { text: 'Refused.' },
      ] as never,
    })
    const w = workspace(
      true,
      `${ROW('approval')}    - id: cordis-host-runner\n      name: "@dsh/cordis-host-runner"\n    - id: tool-cordis\n      name: "@dsh/tool-cordis"\n`,
    )
    const run = await runDsh(['-p', '--patch', join(w.root, 'patch.yml'), 'go'], { cwd: w.root, env: w.env(server) })
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Refused.\n' })
    expect(readFileSync(w.record, 'utf8')).toBe(
      '--app-name=dsh|--urgency=critical|dsh needs your approval|Run the model-written plugin "p" inside dsh|\n',
    )
  })

  it('a question to the user notifies as critical with the question', async () => {
    server = await startMockServer({
      steps: [
        {
          toolCalls: [
            {
              name: 'ask_user_question',
              arguments: { questions: [{ id: 'db', question: 'Which database should I migrate?' }] },
            },
          ],
        },
        { text: 'Nobody answered.' },
      ] as never,
    })
    // The question tool ships in the terminal UI's bundle; the one-shot gets it from its file here.
    const askUser = fileURLToPath(new URL('../../../interaction/tool-ask-user/dist/index.js', import.meta.url))
    const w = workspace(true, `${ROW('question')}    - id: tool-ask-user\n      name: ${JSON.stringify(askUser)}\n`)
    const run = await runDsh(['-p', '--patch', join(w.root, 'patch.yml'), 'go'], { cwd: w.root, env: w.env(server) })
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Nobody answered.\n' })
    expect(readFileSync(w.record, 'utf8')).toBe(
      '--app-name=dsh|--urgency=critical|dsh has a question|Which database should I migrate?|\n',
    )
  })

  it('without notify-send on PATH the row shows nothing and the run is unaffected', async () => {
    server = await startMockServer({ steps: [{ text: 'Done.' }] as never })
    const w = workspace(false, ROW('turn-end'))
    const env = { ...w.env(server), PATH: `${join(w.root, 'bin')}:/usr/bin:/bin` }
    const run = await runDsh(['-p', '--patch', join(w.root, 'patch.yml'), 'go'], { cwd: w.root, env })
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Done.\n', stderr: '' })
    expect(existsSync(w.record)).toBe(false)
  })

  it('a relative command path fails the row at load, naming it', async () => {
    server = await startMockServer({ steps: [] as never })
    const w = workspace(
      true,
      `- insert:\n    - id: desktop-notifications\n      name: "@dsh/desktop-notifications"\n      config: { command: ./notify }\n`,
    )
    const run = await runDsh(['-p', '--patch', join(w.root, 'patch.yml'), 'go'], { cwd: w.root, env: w.env(server) })
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/desktop-notifications.*"\.\/notify" must be a name on PATH or an absolute path/)
  })
})
