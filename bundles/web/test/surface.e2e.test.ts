// The web surface's context for the model, through the real bins against @dsh/llm-mock-server:
// in a `dsh web` session the model's request carries the web-surface and harness-source sections
// and a bash command sees DSH_WEB_URL; `dsh -p` (another surface) gets neither, and the web-startup
// row's `surfaceContext: false` removes both. A bad value stops the boot with one line.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { type MockStep, type RecordedRequest, startMockServer } from '@dsh/llm-mock-server'
import { startWebApp, waitForSessionEvent, type WebApp } from '@dsh/web-testkit'

/** The checkout this test runs in: the harness-source section names it. */
const CHECKOUT = fileURLToPath(new URL('../../../', import.meta.url)).replace(/\/$/, '')

/** One turn: a bash call printing the shell facts, then an answer. */
const STEPS: MockStep[] = [
  {
    toolCalls: [
      {
        id: 'c_env',
        name: 'bash',
        arguments: { command: 'echo "shell=[$DSH_SHELL] web=[$DSH_WEB_URL]"', description: 'Print the dsh variables' },
      },
    ],
  },
  { text: 'all done' },
]

interface WireBody {
  messages: Array<{ role: string; content: unknown; tool_call_id?: string }>
}
const chats = (requests: RecordedRequest[]) =>
  requests.filter((r) => Array.isArray((r.body as WireBody | undefined)?.messages))
const systemOf = (r: RecordedRequest) =>
  (r.body as WireBody).messages
    .filter((m) => m.role === 'system')
    .map((m) => String(m.content))
    .join('\n')
const toolOutput = (r: RecordedRequest) =>
  String((r.body as WireBody).messages.find((m) => m.role === 'tool' && m.tool_call_id === 'c_env')?.content ?? '')

/** Runs one turn in a fresh web session and returns the model's requests of that turn. */
async function webTurn(app: WebApp): Promise<RecordedRequest[]> {
  const { session } = await app.call('sessions.create', { cwd: app.cwd })
  await app.call('sessions.prompt', { sessionId: session.sessionId, text: 'go' })
  await waitForSessionEvent(app, session.sessionId, 'turn/end')
  return chats(app.mock.requests)
}

const root = mkdtempSync(join(tmpdir(), 'dsh-web-surface-'))
const apps: WebApp[] = []

/** Starts a web host with `patch`, runs one turn; the error, if any, is the test's to report. */
async function hostTurn(patch?: string): Promise<{ app: WebApp; requests: RecordedRequest[] }> {
  const app = await startWebApp({ steps: STEPS, ...(patch ? { patch } : {}) })
  apps.push(app)
  return { app, requests: await webTurn(app) }
}
let on: Promise<{ app: WebApp; requests: RecordedRequest[] }>
let off: Promise<{ app: WebApp; requests: RecordedRequest[] }>

beforeAll(async () => {
  // Both hosts boot at once; each test awaits its own, so one failing host fails only its test.
  on = hostTurn()
  off = hostTurn('- id: web-startup\n  config:\n    surfaceContext: false\n')
  await Promise.allSettled([on, off])
}, 90_000)

afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()))
  rmSync(root, { recursive: true, force: true })
})

describe('the web surface context (surfaceContext)', () => {
  it('a dsh web session: the request carries the web-surface and harness-source sections, bash sees DSH_WEB_URL', async () => {
    const { app, requests: onTurn } = await on
    const pageUrl = `${app.url}/`
    const system = systemOf(onTurn[0])
    expect(system).toContain(`Web surface: the user follows this session in the dsh web page at ${pageUrl}`)
    expect(system).toContain(`dsh itself is installed at ${CHECKOUT}: when asked about dsh`)
    expect(system).toContain('(packages/*/*/)')
    expect(toolOutput(onTurn[1])).toContain(`shell=[1] web=[${pageUrl}]`)
  })

  it('surfaceContext: false leaves out both sections and the variable', async () => {
    const { requests: offTurn } = await off
    const system = systemOf(offTurn[0])
    // Positive control: the same request carries the base sections.
    expect(system).toContain('Working rules:')
    expect(system).not.toContain('Web surface:')
    expect(system).not.toContain('dsh itself is installed at')
    expect(toolOutput(offTurn[1])).toContain('shell=[1] web=[]')
  })

  it('dsh -p (another surface) gets neither', async () => {
    const mock = await startMockServer({ steps: STEPS })
    try {
      const cwd = join(root, 'headless')
      mkdirSync(cwd)
      const run = await runDsh(['-p', 'go'], {
        cwd,
        env: {
          DSH_HOME: join(root, 'headless-home'),
          DEEPSEEK_BASE_URL: mock.baseURL,
          DEEPSEEK_API_KEY: 'sk-test',
          DSH_PERMISSION_MODE: 'danger-full-access',
        },
      })
      expect(run.code).toBe(0)
      const requests = chats(mock.requests)
      expect(systemOf(requests[0])).toContain('Working rules:')
      expect(systemOf(requests[0])).not.toContain('Web surface:')
      expect(systemOf(requests[0])).not.toContain('dsh itself is installed at')
      expect(toolOutput(requests[1])).toContain('shell=[1] web=[]')
    } finally {
      await mock.close()
    }
  })

  it('a bad surfaceContext value stops dsh web with one line naming it', async () => {
    const cwd = join(root, 'bad')
    mkdirSync(cwd)
    writeFileSync(join(cwd, 'bad.patch.yml'), '- id: web-startup\n  config:\n    surfaceContext: sometimes\n')
    // --help: without the check the row applies, prints the usage and exits 0 (no server to stop).
    const run = await runDsh(['web', '--help', '--patch', 'bad.patch.yml'], {
      cwd,
      env: { DSH_HOME: join(root, 'bad-home') },
    })
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr.trim().split('\n')).toHaveLength(1)
    expect(run.stderr).toMatch(
      /^dsh: boot failed: row web-startup .*bad\.patch\.yml:3: invalid config: field config\.surfaceContext: expected boolean but got sometimes\n$/,
    )
  })
})
