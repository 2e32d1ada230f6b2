// End-to-end: the real `dsh --profile headless` bin (base bundle rows: plan-mode with its
// no-human policy) against @dsh/llm-mock-server, real files.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

function workspace() {
  const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-plan-'))
  const cwd = join(root, 'work')
  mkdirSync(cwd, { recursive: true })
  writeFileSync(join(cwd, 'notes.txt'), 'alpha\n')
  return { home: join(root, 'home'), cwd }
}

const call = (id: string, name: string, args: object) => ({ toolCalls: [{ id, name, arguments: args }] })
type Body = { tools?: { function: { name: string } }[]; messages: { role: string; content: unknown }[] }
const toolsOf = (body: unknown) => ((body as Body).tools ?? []).map((t) => t.function.name)

describe('plan mode in dsh --profile headless', () => {
  it('refuses an edit while planning, then after the approved exit_plan_mode the edit runs', {
    timeout: 60_000,
  }, async () => {
    const { home, cwd } = workspace()
    server = await startMockServer({
      steps: [
        call('c_read', 'read', { file_path: 'notes.txt' }),
        call('c_edit1', 'edit', { file_path: 'notes.txt', old_string: 'alpha', new_string: 'beta' }),
        call('c_exit', 'exit_plan_mode', { plan: '1. Replace alpha with beta in notes.txt' }),
        call('c_edit2', 'edit', { file_path: 'notes.txt', old_string: 'alpha', new_string: 'beta' }),
        { text: 'done' },
      ] as never,
    })
    const run = await runDsh(
      ['--profile', 'headless', '--output-format', 'stream-json', '/plan change alpha to beta'],
      {
        cwd,
        env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' },
      },
    )
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(lines.find((l) => l.type === 'command')).toMatchObject({
      type: 'command',
      command: 'plan',
      output: expect.stringContaining('Plan mode is on'),
    })
    expect(lines.at(-1)).toMatchObject({ type: 'result', result: 'done', reason: 'completed' })
    const events = lines.filter((l) => l.type === 'event').map((l) => l.event)
    // stream-json shows the plan state as it changes
    expect(events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([
      { active: true, by: 'command' },
      { active: false, by: 'policy', plan: '1. Replace alpha with beta in notes.txt' },
    ])
    const results = Object.fromEntries(
      events.filter((e) => e.type === 'tool/result').map((e) => [e.data.message.callId, e.data]),
    )
    expect(results.c_edit1.error.code).toBe('PLAN_MODE')
    expect(results.c_exit.message.content[0].text).toContain("approved by this deployment's policy")
    expect(results.c_edit2.error).toBeUndefined()
    expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('beta\n')
    // The model was told to plan, and offered exit_plan_mode, only until the approval.
    const bodies = server.requests.map((r) => r.body)
    expect(JSON.stringify((bodies[0] as Body).messages[0])).toContain('Plan mode is on')
    expect(toolsOf(bodies[0])).toContain('exit_plan_mode')
    expect(toolsOf(bodies[3])).not.toContain('exit_plan_mode')
    expect(JSON.stringify((bodies[3] as Body).messages[0])).not.toContain('Plan mode is on')
  })

  it('a session resumed with --resume is still in plan mode', { timeout: 60_000 }, async () => {
    const { home, cwd } = workspace()
    server = await startMockServer({
      steps: [
        call('c_edit', 'edit', { file_path: 'notes.txt', old_string: 'alpha', new_string: 'beta' }),
        { text: 'planned' },
      ] as never,
    })
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' }
    const first = await runDsh(['--profile', 'headless', '--output-format', 'json', '/plan'], { cwd, env })
    expect(first.code).toBe(0)
    const { sessionId } = JSON.parse(first.stdout)
    const second = await runDsh(
      ['--profile', 'headless', '--output-format', 'json', '--resume', sessionId, 'change alpha'],
      { cwd, env },
    )
    expect(second.stderr).toBe('')
    expect(JSON.parse(second.stdout)).toMatchObject({ result: 'planned', reason: 'completed' })
    expect(toolsOf(server.requests[0].body)).toContain('exit_plan_mode')
    expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('alpha\n')
  })

  it("under the code preset a program's edit is refused while planning", { timeout: 60_000 }, async () => {
    const { home, cwd } = workspace()
    const program =
      "try { await tools.edit({ file_path: 'notes.txt', old_string: 'alpha', new_string: 'beta' }); return 'edited' } catch (e) { return 'refused: ' + e.code }"
    server = await startMockServer({
      steps: [call('c_code', 'run_code', { code: program }), { text: 'planned' }] as never,
    })
    const run = await runDsh(
      ['--profile', 'headless', '--output-format', 'stream-json', '--preset', 'code', '/plan change alpha'],
      {
        cwd,
        env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' },
      },
    )
    expect(run.stderr).toBe('')
    const events = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((l) => l.type === 'event')
      .map((l) => l.event)
    const result = events.find((e) => e.type === 'tool/result' && e.data.message.callId === 'c_code')
    expect(JSON.stringify(result.data.message.content)).toContain('refused: PLAN_MODE')
    expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('alpha\n')
  })

  it("a preset's tool set does not hide exit_plan_mode", { timeout: 60_000 }, async () => {
    const { home, cwd } = workspace()
    server = await startMockServer({ steps: [{ text: 'planned' }] as never })
    const run = await runDsh(['--profile', 'headless', '--preset', 'minimal', '/plan look first'], {
      cwd,
      env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' },
    })
    // Text mode: the command's output goes to stderr, the turn's answer to stdout.
    expect(run.stderr).toBe(
      'dsh: Plan mode is on: the agent investigates and proposes a plan before changing anything (/plan off leaves).\n',
    )
    expect(run.stdout).toBe('planned\n')
    expect(toolsOf(server.requests[0].body)).toEqual(['bash', 'exit_plan_mode', 'str_replace_editor'])
  })
})
