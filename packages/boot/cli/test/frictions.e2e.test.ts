// Small frictions of a first use, through the real bin with the scripted model: `-r` takes a
// unique id prefix, a refused escalation with nobody to ask is told to the person on stderr and
// to the model as "refused (no one to ask)", and a turn that fails says so in plain words.
import { mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

const mocks: MockServer[] = []
afterEach(async () => {
  for (const m of mocks.splice(0)) await m.close()
})
async function mock(steps: unknown[]): Promise<MockServer> {
  const m = await startMockServer({ steps } as never)
  mocks.push(m)
  return m
}
function workspace(m?: MockServer) {
  const root = mkdtempSync(join(tmpdir(), 'dsh-frictions-e2e-'))
  const home = join(root, 'home')
  mkdirSync(home, { recursive: true })
  const env: Record<string, string> = { DSH_HOME: home }
  if (m) Object.assign(env, { DEEPSEEK_BASE_URL: m.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' })
  return { root, home, env }
}
const text = (body: unknown) => JSON.stringify(body)

it('dsh -r <prefix> resumes the one session whose id starts with it', async () => {
  const m = await mock([{ text: 'first answer' }, { text: 'second answer' }, { text: 'resumed' }])
  const w = workspace(m)
  expect((await runDsh(['-p', 'remember apples'], { cwd: w.root, env: w.env })).code).toBe(0)
  expect((await runDsh(['-p', 'remember pears'], { cwd: w.root, env: w.env })).code).toBe(0)
  const list = await runDsh(['sessions', '--output-format', 'json'], { cwd: w.root, env: w.env })
  const parsed = JSON.parse(list.stdout) as
    | { sessions?: { id: string; firstPrompt?: string }[] }
    | { id: string; firstPrompt?: string }[]
  const rows = Array.isArray(parsed) ? parsed : (parsed.sessions ?? [])
  const apples = rows.find((r) => r.firstPrompt === 'remember apples')!
  const run = await runDsh(['-r', apples.id.slice(0, 8), '-p', 'what did I say?'], { cwd: w.root, env: w.env })
  expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'resumed\n' })
  const last = text(m.requests.at(-1)!.body)
  expect(last).toContain('remember apples')
  expect(last).not.toContain('remember pears')
}, 60_000)

it('-p text mode: an escalation refused for lack of a human is on stderr and the model reads "refused (no one to ask)"', async () => {
  const m = await mock([
    {
      toolCalls: [
        {
          id: 'c1',
          name: 'bash',
          arguments: {
            command: 'echo hi',
            description: 'say hi',
            sandbox_escalation: { justification: 'needs the network' },
          },
        },
      ],
    },
    { expect: { lastRole: 'tool' }, text: 'Could not run it.' },
  ])
  const w = workspace(m)
  const run = await runDsh(['-p', 'run echo hi unconfined'], { cwd: w.root, env: w.env })
  expect(run.code, run.stderr).toBe(0)
  expect(run.stdout).toBe('Could not run it.\n')
  expect(run.stderr).toMatch(
    /^dsh: refused \(no one to ask\): Run `echo hi` outside the sandbox: approval policy "\S+" needs a human/m,
  )
  const toolTurn = text(m.requests[1].body)
  expect(toolTurn).toContain('refused (no one to ask)')
  expect(toolTurn).not.toContain('the user refused')
}, 60_000)

it('a failed turn says "the turn failed", MISSING_CREDENTIAL on one line', async () => {
  const m = await mock([{ text: 'never reached' }])
  const w = workspace()
  const run = await runDsh(['-p', 'hi'], { cwd: w.root, env: { ...w.env, DEEPSEEK_BASE_URL: m.baseURL } })
  expect(run.code).toBe(1)
  expect(run.stderr).toMatch(/^dsh: the turn failed: MISSING_CREDENTIAL: DEEPSEEK_API_KEY is not set[^\n]*\n$/)
  expect(m.requests).toHaveLength(0)
}, 60_000)
