// Issue 43: every face shows exactly what happened. Seeded sessions (turns x steps x parallel
// calls, reasoning on/off, unique / repeated / empty / missing provider call ids, a tool error) are
// played through the scripted model; for each, the web page's DOM (live, after a reload, after the
// host restarts), the ACP `session/update` stream (live, and replayed by `session/load` in a new
// process) and the TUI's final screen (`dsh --resume`) must list exactly the items of the stored
// log, in order. Plus the two cases of the issue by name, live in the TUI too.
//
// Seeds: a fixed set in CI; `DSH_GEN_SEEDS=N` (or `scripts/session-faces.mjs --seeds N`) runs N
// seeds from DSH_GEN_FIRST_SEED (1000). A failure names the seed and the session's shape.
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import {
  hasChromium,
  launchBrowser,
  openPage,
  startWebApp,
  withArtifacts,
  type Browser,
  type Page,
  type WebApp,
} from '@dsh/web-testkit'
import {
  expectedMarkers,
  foldLog,
  generateSession,
  seedsFromEnv,
  sessionTag,
  type GeneratedSession,
  type LogEvent,
  type MockStep,
} from '../src/index.ts'
import {
  UNPARSED_CALL,
  storedSessionIds,
  writeOldFormatLog,
  acpMarkers,
  readLog,
  startAcpPeer,
  tuiMarkers,
  tuiScreen,
  untilScreen,
  webMarkers,
  type AcpPeer,
} from './faces.ts'

vi.setConfig({ testTimeout: 240_000, hookTimeout: 120_000 })

const FIXED_SEEDS = [18, 20, 30]
const THOUGHT = '<r>'

/** A hand-written session in the generator's shape (markers tagged with `seed`). */
function named(seed: number, label: string, turns: Array<{ steps: MockStep[] }>): GeneratedSession {
  const tag = sessionTag(seed)
  const withPrompts = turns.map((t, i) => ({ prompt: `task u${tag}n${900 + i}`, steps: t.steps }))
  return {
    seed,
    idMode: 'repeated',
    turns: withPrompts,
    steps: withPrompts.flatMap((t) => t.steps),
    describe: () => `${label} (seed ${seed})`,
  }
}
const bash = (tag: string, n: number, id: string | null) => ({
  id,
  name: 'bash',
  arguments: { command: `echo m${tag}n${n}x$((40+2))`, description: `run m${tag}n${n}` },
})
// Two turns whose first call both carry `call_0_0`, each with reasoning (the doubled-row case).
const REUSED = named(
  90001,
  'two turns reusing call_0_0',
  [0, 1].map((t) => ({
    steps: [
      { reasoning: `plan r${sessionTag(90001)}n${10 + t}`, toolCalls: [bash(sessionTag(90001), 20 + t, 'call_0_0')] },
      { text: `answer a${sessionTag(90001)}n${30 + t} done` },
    ],
  })),
)
// A provider that names no call: the adapter fills `call_<index>`, so every step's first call is `call_0`.
const NO_IDS = named(90002, 'a provider that sends no ids', [
  {
    steps: [
      { toolCalls: [bash(sessionTag(90002), 20, null), bash(sessionTag(90002), 21, null)] },
      { toolCalls: [bash(sessionTag(90002), 22, null)] },
      { text: `answer a${sessionTag(90002)}n30 done` },
    ],
  },
])

const generated = seedsFromEnv(FIXED_SEEDS).map((seed) => generateSession(seed))
const SESSIONS = [REUSED, NO_IDS, ...generated]
const allSteps = SESSIONS.flatMap((s) => s.steps)

/** Fails with the seed and the shape of the session, and both marker lists. */
function same(session: GeneratedSession, face: string, shown: string[], wanted: string[]): void {
  expect(shown, `${face} of ${session.describe()}\nshown:  ${shown.join(' ')}\nwanted: ${wanted.join(' ')}`).toEqual(
    wanted,
  )
}

const callIds = (log: LogEvent[]) => log.filter((e) => e.type === 'tool/call').map((e) => String(e.data.callId))

let app: WebApp
let browser: Browser | undefined
let page: Page
const webSessions = new Map<GeneratedSession, string>()
let acpMock: MockServer
let acpHome: string
let acpCwd: string
const acpSessions = new Map<GeneratedSession, string>()

beforeAll(async () => {
  app = await startWebApp({ steps: allSteps as never })
  acpMock = await startMockServer({ steps: allSteps as never })
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-gen-acp-')))
  acpHome = join(root, 'home')
  acpCwd = join(root, 'work')
  mkdirSync(acpHome)
  mkdirSync(acpCwd)
})

afterAll(async () => {
  await browser?.close()
  await app?.close()
  await acpMock?.close()
  if (acpHome) rmSync(join(acpHome, '..'), { recursive: true, force: true })
})

const acpEnv = () => ({
  DSH_HOME: acpHome,
  HOME: join(acpHome, '..'),
  DEEPSEEK_BASE_URL: acpMock.baseURL,
  DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
})
const lastMarker = (session: GeneratedSession, log: LogEvent[]) =>
  expectedMarkers(foldLog(log), sessionTag(session.seed)).at(-1)!

describe.skipIf(!hasChromium())('generated sessions on every face', () => {
  it('web: live, after a reload', async () => {
    browser = await launchBrowser()
    const opened = await openPage(browser, app.url)
    page = opened.page
    await page.waitForURL(/\/s\/[^/]+$/)
    const input = page.locator('textarea.dsh-composer-input')
    const idle = () => expect.poll(() => page.locator('.dsh-chat[data-running]').count(), { timeout: 30_000 }).toBe(0)
    let first = true
    for (const session of SESSIONS) {
      const tag = sessionTag(session.seed)
      if (!first) {
        const before = page.url()
        await page.locator('[data-testid="new-session"]').click()
        await expect.poll(() => page.url()).not.toBe(before)
        await expect.poll(() => page.locator('[data-node="user"]').count()).toBe(0)
      }
      first = false
      const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)
      for (const turn of session.turns) {
        await withArtifacts(page, `gen-${session.seed}`, () => input.fill(turn.prompt, { timeout: 10_000 }))
        await input.press('Enter')
        const answer = turn.steps.at(-1)!.text as string
        await expect
          .poll(async () => (await page.locator('[data-node="assistant"]').allInnerTexts()).join('\n'), {
            timeout: 30_000,
          })
          .toContain(answer)
        await idle()
      }
      webSessions.set(session, id)
      const log = await readLog(join(app.home, '.dsh'), id, session.turns.length)
      const wanted = expectedMarkers(foldLog(log), tag, { reasoningAs: THOUGHT, resultsInCards: true })
      expect(new Set(callIds(log)).size, session.describe()).toBe(callIds(log).length)
      same(session, 'web (live)', await webMarkers(page, tag, THOUGHT), wanted)
      await page.reload()
      await page.waitForSelector('html[data-ready="true"]')
      await expect
        .poll(async () => (await page.locator('.dsh-chat').innerText()).includes(lastMarker(session, log)), {
          timeout: 30_000,
        })
        .toBe(true)
      same(session, 'web (after reload)', await webMarkers(page, tag, THOUGHT), wanted)
    }
    expect(opened.errors).toEqual([])
  })

  it('web: after the host restarts', async () => {
    await page.close()
    await app.restart()
    const opened = await openPage(browser!, app.url)
    page = opened.page
    for (const session of SESSIONS) {
      const id = webSessions.get(session)
      if (!id) throw new Error(`${session.describe()} was not played live`)
      const tag = sessionTag(session.seed)
      const log = await readLog(join(app.home, '.dsh'), id, session.turns.length)
      await page.goto(`${app.url}/s/${encodeURIComponent(id)}`)
      await page.waitForSelector('html[data-ready="true"]')
      await expect
        .poll(async () => (await page.locator('.dsh-chat').innerText()).includes(lastMarker(session, log)), {
          timeout: 30_000,
        })
        .toBe(true)
      same(
        session,
        'web (after restart)',
        await webMarkers(page, tag, THOUGHT),
        expectedMarkers(foldLog(log), tag, { reasoningAs: THOUGHT, resultsInCards: true }),
      )
    }
    await page.close()
  })
})

describe('generated sessions over ACP and in the TUI', () => {
  let peer: AcpPeer | undefined
  afterAll(async () => {
    await peer?.close()
  })

  it('ACP: live, one unique toolCallId per logged call', async () => {
    peer = await startAcpPeer(acpEnv(), acpCwd)
    onTestFinished(async () => {
      await peer?.close()
      peer = undefined
    })
    for (const session of SESSIONS) {
      const { sessionId } = await peer.agent.request('session/new', { cwd: acpCwd, mcpServers: [] })
      for (const turn of session.turns) {
        const response = await peer.agent.request('session/prompt', {
          sessionId,
          prompt: [{ type: 'text', text: turn.prompt }],
        })
        expect(response.stopReason, session.describe()).toBe('end_turn')
      }
      acpSessions.set(session, sessionId)
      const log = await readLog(acpHome, sessionId, session.turns.length)
      const tag = sessionTag(session.seed)
      const shown = acpMarkers(peer.updates, sessionId, tag)
      expect(shown.problems, session.describe()).toEqual([])
      // Live, the prompt is the editor's own: not echoed back.
      same(
        session,
        'ACP (live)',
        shown.markers,
        expectedMarkers(foldLog(log), tag, { skip: ['user'], unparsedCallAs: UNPARSED_CALL }),
      )
      expect(shown.toolCallIds, session.describe()).toEqual(callIds(log))
      expect(new Set(shown.toolCallIds).size, session.describe()).toBe(shown.toolCallIds.length)
    }
    await peer.close()
    peer = undefined
  })

  it('ACP: replayed by session/load in a new process', async () => {
    peer = await startAcpPeer(acpEnv(), acpCwd)
    onTestFinished(async () => {
      await peer?.close()
      peer = undefined
    })
    for (const session of SESSIONS) {
      const sessionId = acpSessions.get(session)
      if (!sessionId) throw new Error(`${session.describe()} was not played over ACP`)
      const from = peer.updates.length
      await peer.agent.request('session/load', { sessionId, cwd: acpCwd, mcpServers: [] })
      const log = await readLog(acpHome, sessionId, session.turns.length)
      const tag = sessionTag(session.seed)
      const shown = acpMarkers(peer.updates.slice(from), sessionId, tag)
      expect(shown.problems, session.describe()).toEqual([])
      same(
        session,
        'ACP (session/load)',
        shown.markers,
        expectedMarkers(foldLog(log), tag, { unparsedCallAs: UNPARSED_CALL }),
      )
      expect(shown.toolCallIds, session.describe()).toEqual(callIds(log))
    }
    await peer.close()
    peer = undefined
  })

  it('TUI: the final screen after `dsh --resume`', async () => {
    for (const session of SESSIONS) {
      const sessionId = acpSessions.get(session)
      if (!sessionId) throw new Error(`${session.describe()} was not played over ACP`)
      const log = await readLog(acpHome, sessionId, session.turns.length)
      const tag = sessionTag(session.seed)
      const last = lastMarker(session, log)
      const screen = await tuiScreen(['--resume', sessionId], acpEnv(), acpCwd, (t) => t.includes(last))
      same(
        session,
        'TUI (--resume)',
        tuiMarkers(screen.lines, tag, THOUGHT),
        expectedMarkers(foldLog(log), tag, { reasoningAs: THOUGHT, resultsInCards: true }),
      )
    }
  })
})

describe('a log written before call identities (ids repeat, no providerCallId)', () => {
  it('loads and renders one card per call over ACP, in the TUI and on the web page', async () => {
    const source = acpSessions.get(REUSED)
    if (!source) throw new Error('the named case was not played over ACP')
    const events = await readLog(acpHome, source, REUSED.turns.length)
    const tag = sessionTag(REUSED.seed)
    const acpId = writeOldFormatLog(acpHome, acpCwd, events)
    const old = await readLog(acpHome, acpId, REUSED.turns.length)
    // The copy really is old-format: both turns' calls are `call_0_0`.
    expect(callIds(old)).toEqual(['call_0_0', 'call_0_0'])
    expect(old.some((e) => e.type === 'tool/call' && 'providerCallId' in e.data)).toBe(false)
    const items = foldLog(old)

    const peer = await startAcpPeer(acpEnv(), acpCwd)
    try {
      await peer.agent.request('session/load', { sessionId: acpId, cwd: acpCwd, mcpServers: [] })
      const shown = acpMarkers(peer.updates, acpId, tag)
      expect(shown.problems).toEqual([])
      expect(shown.toolCallIds).toEqual(['call_0_0', 'call_0_0-2'])
      same(
        REUSED,
        'ACP (old log, session/load)',
        shown.markers,
        expectedMarkers(items, tag, { unparsedCallAs: UNPARSED_CALL }),
      )
    } finally {
      await peer.close()
    }

    const last = expectedMarkers(items, tag).at(-1)!
    const screen = await tuiScreen(['--resume', acpId], acpEnv(), acpCwd, (t) => t.includes(last))
    same(
      REUSED,
      'TUI (old log, --resume)',
      tuiMarkers(screen.lines, tag, THOUGHT),
      expectedMarkers(items, tag, { reasoningAs: THOUGHT, resultsInCards: true }),
    )

    if (!browser) return // no Chromium on this machine: the web part is skipped with its describe
    const webId = writeOldFormatLog(join(app.home, '.dsh'), app.cwd, events)
    const opened = await openPage(browser, `${app.url}/s/${encodeURIComponent(webId)}`)
    try {
      await expect
        .poll(async () => (await opened.page.locator('.dsh-chat').innerText()).includes(last), { timeout: 30_000 })
        .toBe(true)
      same(
        REUSED,
        'web (old log)',
        await webMarkers(opened.page, tag, THOUGHT),
        expectedMarkers(items, tag, { reasoningAs: THOUGHT, resultsInCards: true }),
      )
    } finally {
      await opened.page.close()
    }
  })
})

describe('the named cases live in the TUI, then after `dsh -c`', () => {
  for (const session of [REUSED, NO_IDS]) {
    it(session.describe(), async () => {
      const mock = await startMockServer({ steps: session.steps as never })
      const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-gen-tui-')))
      const home = join(root, 'home')
      const cwd = join(root, 'work')
      mkdirSync(home)
      mkdirSync(cwd)
      const env = {
        DSH_HOME: home,
        HOME: root,
        DEEPSEEK_BASE_URL: mock.baseURL,
        DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
      }
      const tag = sessionTag(session.seed)
      try {
        const answers = session.turns.map((t) => t.steps.at(-1)!.text as string)
        const live = await tuiScreen(
          [],
          env,
          cwd,
          (t) => t.includes(answers.at(-1)!),
          async (input, text) => {
            await untilScreen(text, (t) => t.includes('workspace-write'), 'the first frame')
            for (const [i, turn] of session.turns.entries()) {
              input(turn.prompt)
              await untilScreen(text, (t) => t.includes(turn.prompt), 'the typed prompt')
              input('\r')
              await untilScreen(text, (t) => t.includes(answers[i]), `answer ${i}`)
            }
          },
        )
        const ids = storedSessionIds(home)
        expect(ids).toHaveLength(1)
        const [sessionId] = ids
        const log = await readLog(home, sessionId, session.turns.length)
        expect(new Set(callIds(log)).size, session.describe()).toBe(callIds(log).length)
        const wanted = expectedMarkers(foldLog(log), tag, { reasoningAs: THOUGHT, resultsInCards: true })
        same(session, 'TUI (live)', tuiMarkers(live.lines, tag, THOUGHT), wanted)
        const resumed = await tuiScreen(['-c'], env, cwd, (t) => t.includes(answers.at(-1)!))
        same(session, 'TUI (dsh -c)', tuiMarkers(resumed.lines, tag, THOUGHT), wanted)
      } finally {
        await mock.close()
        rmSync(root, { recursive: true, force: true, maxRetries: 3 })
      }
    })
  }
})
