// The conversation packages (ui-conversation, ui-tool, ui-takeover, ui-pickers) in real Chromium
// against the real `dsh web` and the mock model: a streamed Markdown answer, a bash card and an
// edit diff, an approval allowed and one denied (after switching the session to the workspace
// sandbox with the picker), a question answered, a cancel mid-stream, a queued follow-up, and
// switching sessions. One host (the worker's host of this patch, in a folder of the file's own) and
// one browser for the file; the mock serves its steps in the order the tests run.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { hasChromium, type Page, useWebApp, withArtifacts } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

const ASK_USER = fileURLToPath(new URL('../../../interaction/tool-ask-user/dist/index.js', import.meta.url))
const slow = (parts: string[], delayMs: number) => ({
  events: parts.flatMap((text, i) => (i === 0 ? [{ text }] : [{ delayMs }, { text }])),
})
const escalate = (command: string) => ({
  toolCalls: [
    { name: 'bash', arguments: { command, description: command, sandbox_escalation: { justification: 'needs it' } } },
  ],
})

const BURST_REASONING = Array.from({ length: 4000 }, (_, i) => (i % 500 === 0 ? `line ${i}\n` : `r${i} `))
const BURST_TEXT = Array.from({ length: 2000 }, (_, i) => `a${i} `)
const STREAM = ['Here ', 'comes ', 'a table:\n\n', '| tool | result |\n|---|---|\n', '| bash | ok |\n']
const STEPS = [
  // 1. streaming
  slow(STREAM, 250),
  // 2. bash, read, edit
  {
    toolCalls: [
      { name: 'bash', arguments: { command: "printf 'one\\ntwo\\n'; exit 3", description: 'Print two lines' } },
    ],
  },
  { toolCalls: [{ name: 'read', arguments: { file_path: 'notes.txt' } }] },
  { toolCalls: [{ name: 'edit', arguments: { file_path: 'notes.txt', old_string: 'beta', new_string: 'BETA' } }] },
  { text: 'Edited the notes.' },
  // 3. approvals
  escalate('echo allowed-outside'),
  escalate('echo denied-outside'),
  { text: 'One allowed, one denied.' },
  // 4. question
  {
    toolCalls: [
      {
        name: 'ask_user_question',
        arguments: {
          questions: [
            {
              id: 'db',
              question: 'Which database?',
              header: 'Database',
              options: [{ label: 'SQLite', description: 'one file' }, { label: 'Postgres' }],
            },
          ],
        },
      },
    ],
  },
  { text: 'SQLite it is.' },
  // 5. cancel mid-stream
  { events: [{ text: 'Once upon ' }, { delayMs: 100 }, { text: 'a time' }, { stall: true }] },
  // 6. queued follow-up
  slow(['First ', 'answer ', 'arrives ', 'slowly.'], 400),
  { text: 'Second answer.' },
  // 7. steering the running turn
  slow(['Working ', 'on ', 'it ', 'slowly.'], 400),
  { text: 'Steered answer.' },
  // 8. another session
  { text: 'Hello from the second session.' },
  // 9. a reload in the middle of a reasoning + answer stream
  {
    events: [
      { reasoning: 'Thinking it over. ' },
      { delayMs: 300 },
      { reasoning: 'Still thinking.' },
      { delayMs: 300 },
      ...['Reloaded ', 'answer ', 'arrives ', 'once.'].flatMap((text) => [{ text }, { delayMs: 300 }]),
    ],
  },
  // 10. a burst: thousands of deltas as fast as the host sends them
  {
    events: [
      ...BURST_REASONING.map((reasoning) => ({ reasoning })),
      { delayMs: 2500 },
      ...BURST_TEXT.map((text) => ({ text })),
    ],
  },
]

let page: Page
let errors: string[]

const input = () => page.locator('textarea.dsh-composer-input')
/** The rendered Markdown of each assistant message (without its action buttons). */
const assistant = () => page.locator('[data-node="assistant"] .dsh-md')
/** Text of the last match, without waiting for one to exist (safe inside expect.poll). */
const lastText = async (selector: string) => (await page.locator(selector).allTextContents()).at(-1) ?? ''
const lastAnswer = () => lastText('[data-node="assistant"] .dsh-md')
const send = async (text: string) => {
  await input().fill(text)
  await input().press('Enter')
}
const idle = () => expect.poll(() => page.locator('.dsh-chat[data-running]').count(), { timeout: 20_000 }).toBe(0)

describe.skipIf(!hasChromium())('the conversation in Chromium', () => {
  // The worker's host of this patch (shared with the other files that pass the same patch text),
  // with this file's script and folder.
  const app = useWebApp({
    steps: STEPS as never,
    patch: `- insert:\n    - id: tool-ask-user\n      name: ${JSON.stringify(ASK_USER)}\n`,
  })

  beforeAll(async () => {
    writeFileSync(join(app.cwd, 'notes.txt'), 'alpha\nbeta\ngamma\n')
    const opened = await app.openPage()
    page = opened.page
    errors = opened.errors
  })

  it('streams an answer in visibly increasing pieces, then renders its Markdown table', async () => {
    await withArtifacts(page, 'conv-stream', async () => {
      // Every text the answer shows, recorded in the page as the DOM changes (a MutationObserver):
      // polling from here missed pieces on a loaded machine.
      await page.evaluate(() => {
        const seen: string[] = []
        const record = () => {
          const text = [...document.querySelectorAll('[data-node="assistant"] .dsh-md')].at(-1)?.textContent ?? ''
          if (text && seen.at(-1) !== text) seen.push(text)
        }
        const observer = new MutationObserver(record)
        observer.observe(document.body, { subtree: true, childList: true, characterData: true })
        Object.assign(window, { __seen: seen, __seenObserver: observer })
      })
      await send('show me a table')
      await page.locator('[data-node="assistant"]:not([data-streaming]) table').waitFor({ timeout: 20_000 })
      const seen = await page.evaluate(() => {
        const w = window as unknown as { __seen: string[]; __seenObserver: MutationObserver }
        w.__seenObserver.disconnect()
        return w.__seen
      })
      const final = STREAM.join('')
      expect(seen.length).toBeGreaterThan(2)
      // Each piece extends the previous one.
      for (let i = 1; i < seen.length; i++) expect(seen[i].length).toBeGreaterThanOrEqual(seen[i - 1].length)
      expect(seen[0].length).toBeLessThan(final.length - 10)
      await expect
        .poll(() => page.locator('[data-node="assistant"] table td').allTextContents())
        .toEqual(['bash', 'ok'])
      expect(await page.locator('[data-node="user"]').allTextContents()).toEqual(['show me a table'])
      expect(await assistant().count()).toBe(1)
      await idle()
    })
  })

  it('shows a bash card with its exit code and output, and an edit as a diff', async () => {
    await withArtifacts(page, 'conv-tools', async () => {
      await send('print and edit')
      await expect.poll(lastAnswer, { timeout: 20_000 }).toBe('Edited the notes.')
      const bash = page.locator('[data-node="tool"][data-tool="bash"]')
      await expect.poll(() => bash.locator('[data-exit-code="3"]').count()).toBe(1)
      expect(await bash.locator('.dsh-terminal-output .dsh-line').allTextContents()).toEqual(['one', 'two'])
      expect(await bash.locator('[data-duration-ms]').count()).toBe(1)
      const edit = page.locator('[data-node="tool"][data-tool="edit"]')
      expect(await edit.locator('[data-diff="del"]').allTextContents()).toEqual(['2-beta'])
      expect(await edit.locator('[data-diff="add"]').allTextContents()).toEqual(['2+BETA'])
      // read is a one-line summary that expands on demand.
      const read = page.locator('[data-node="tool"][data-tool="read"]')
      expect(await read.locator('.dsh-tool-body').count()).toBe(0)
      await read.locator('.dsh-tool-toggle').click()
      await expect.poll(async () => (await read.locator('.dsh-tool-body').allTextContents()).join('')).toContain('beta')
      await idle()
    })
  })

  it('switches the session to the workspace sandbox, then allows one escalation and denies another with a reason', async () => {
    await withArtifacts(page, 'conv-approvals', async () => {
      await page.locator('select[aria-label="Permissions"]').selectOption('workspace-write')
      const sessionId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)
      await expect
        .poll(
          async () =>
            (await app.call('sessions.list', {})).sessions.find((s: any) => s.sessionId === sessionId)?.permissionMode,
        )
        .toBe('workspace-write')
      await send('run things outside')
      const takeover = page.locator('.dsh-approval')
      await expect.poll(() => lastText('.dsh-approval h3'), { timeout: 20_000 }).toContain('echo allowed-outside')
      // Nothing is answered by default, and the composer is replaced.
      expect(await input().count()).toBe(0)
      await takeover.getByRole('button', { name: 'Allow once' }).click()
      await expect.poll(() => lastText('.dsh-approval h3'), { timeout: 20_000 }).toContain('echo denied-outside')
      await takeover.getByRole('button', { name: 'Deny', exact: true }).click()
      await takeover.locator('textarea').fill('not this one')
      await takeover.getByRole('button', { name: 'Deny with this reason' }).click()
      await expect.poll(lastAnswer, { timeout: 20_000 }).toBe('One allowed, one denied.')
      const outputs = await page.locator('[data-node="tool"][data-tool="bash"] .dsh-terminal').allTextContents()
      expect(outputs.at(-2)).toContain('allowed-outside')
      expect(outputs.at(-1)).toContain('refused')
      expect(outputs.at(-1)).toContain('not this one')
      expect(await input().count()).toBe(1)
      await idle()
    })
  })

  it('answers a question from the form', async () => {
    await withArtifacts(page, 'conv-question', async () => {
      await send('ask me')
      const form = page.locator('.dsh-question')
      await expect.poll(() => form.count(), { timeout: 20_000 }).toBe(1)
      const submit = form.getByRole('button', { name: 'Send answers' })
      expect(await submit.isDisabled()).toBe(true)
      await form.getByLabel('SQLite').check()
      await submit.click()
      await expect.poll(lastAnswer, { timeout: 20_000 }).toBe('SQLite it is.')
      const card = page.locator('[data-node="tool"][data-tool="ask_user_question"]')
      // Open the card. The "Jump to latest" pill can sit over a card at the bottom edge and take
      // a click meant for it (seen under CI load), so click until the toggle reports open.
      const toggle = card.locator('.dsh-tool-toggle')
      await toggle.scrollIntoViewIfNeeded()
      await expect
        .poll(
          async () => {
            if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click()
            return toggle.getAttribute('aria-expanded')
          },
          { timeout: 20_000 },
        )
        .toBe('true')
      await expect.poll(async () => (await card.allTextContents()).join('')).toContain('selected: SQLite')
      await idle()
    })
  })

  it('Esc cancels a streaming answer: the prefix stays, marked, and the turn shows as cancelled', async () => {
    await withArtifacts(page, 'conv-cancel', async () => {
      await send('tell a story')
      await expect.poll(lastAnswer, { timeout: 20_000 }).toContain('a time')
      await input().press('Escape')
      await expect
        .poll(() => page.locator('[data-node="turn-end"][data-reason="cancelled"]').count(), { timeout: 20_000 })
        .toBe(1)
      const last = page.locator('[data-node="assistant"]').last()
      expect(await last.locator('.dsh-md').textContent()).toBe('Once upon a time')
      expect(await last.textContent()).toContain('Stopped before the answer finished')
      await idle()
    })
  })

  it('a prompt sent while a turn runs is shown as queued, then runs after it', async () => {
    await withArtifacts(page, 'conv-queue', async () => {
      await send('first')
      await expect.poll(lastAnswer, { timeout: 20_000 }).toContain('First')
      await send('second')
      await expect.poll(() => lastText('[data-node="queued"]')).toContain('second')
      await expect.poll(lastAnswer, { timeout: 20_000 }).toBe('Second answer.')
      expect(await page.locator('[data-node="queued"]').count()).toBe(0)
      const users = await page.locator('[data-node="user"]').allTextContents()
      expect(users.slice(-2)).toEqual(['first', 'second'])
      await idle()
      // ↑ recalls the last prompt.
      await input().press('ArrowUp')
      expect(await input().inputValue()).toBe('second')
      await input().fill('')
    })
  })

  it('Steer hands a message to the running turn, which answers it in the same turn', async () => {
    await withArtifacts(page, 'conv-steer', async () => {
      await send('start working')
      await expect.poll(lastAnswer, { timeout: 20_000 }).toContain('Working')
      await input().fill('also this')
      await page.getByRole('button', { name: 'Steer' }).click()
      await expect.poll(lastAnswer, { timeout: 20_000 }).toBe('Steered answer.')
      const users = await page.locator('[data-node="user"]').allTextContents()
      expect(users.slice(-2)).toEqual(['start working', 'also this'])
      await idle()
      // One turn: no cancelled or failed turn row, and the steered prompt is not left as queued.
      expect(await page.locator('[data-node="queued"]').count()).toBe(0)
    })
  })

  it('switching sessions shows each its own conversation', async () => {
    await withArtifacts(page, 'conv-switch', async () => {
      const first = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)
      await page.locator('[data-testid="new-session"]').click()
      await expect.poll(() => decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)).not.toBe(first)
      await expect.poll(() => page.locator('[data-node="user"]').count()).toBe(0)
      await send('hello there')
      await expect.poll(lastAnswer, { timeout: 20_000 }).toBe('Hello from the second session.')
      await page.locator(`.session-item[data-session-id="${first}"]`).click()
      await expect
        .poll(async () => (await page.locator('[data-node="user"]').allTextContents())[0])
        .toBe('show me a table')
      expect(await page.getByText('Hello from the second session.').count()).toBe(0)
      expect(errors).toEqual([])
    })
  })

  it('a reload mid-stream resumes the turn: the thinking row and the answer appear once each', async () => {
    await withArtifacts(page, 'conv-reload', async () => {
      await send('think then answer')
      await expect
        .poll(() => page.locator('[data-node="thinking"][data-streaming]').count(), { timeout: 20_000 })
        .toBe(1)
      // While it streams, the closed row says so and previews the newest reasoning.
      expect((await page.locator('[data-node="thinking"] summary').allTextContents())[0]).toMatch(
        /^Thinking…Thinking it over/,
      )
      await expect.poll(lastAnswer, { timeout: 20_000 }).toContain('Reloaded')
      await page.reload()
      await page.waitForSelector('html[data-ready="true"]')
      await expect.poll(lastAnswer, { timeout: 20_000 }).toBe('Reloaded answer arrives once.')
      await idle()
      const answers = await assistant().allTextContents()
      expect(answers.filter((a) => a.includes('Reloaded'))).toEqual(['Reloaded answer arrives once.'])
      expect(await page.locator('[data-node="thinking"]').count()).toBe(1)
      // Opening the thinking row shows the whole reasoning. The row is clicked until it is open: on
      // a loaded machine a click can land while the card re-renders (or on the Jump to latest pill).
      const row = page.locator('[data-node="thinking"]')
      await expect
        .poll(
          async () => {
            if (!(await row.evaluate((el) => (el as HTMLDetailsElement).open))) await row.locator('summary').click()
            return (await page.locator('.dsh-thinking-body').allTextContents()).join('')
          },
          { timeout: 20_000 },
        )
        .toBe('Thinking it over. Still thinking.')
    })
  })

  it('a burst of 6,000 deltas: the thinking row previews the newest reasoning, then the exact texts show once', async () => {
    await withArtifacts(page, 'conv-burst', async () => {
      const rowsBefore = await page.locator('[data-node="thinking"]').count()
      await send('burst')
      // While it streams: the closed row previews the end of the newest line received (bounded,
      // with an ellipsis). Which delta is newest when the page looks depends on the machine's load.
      const streamingPreview = async () =>
        (await page.locator('[data-node="thinking"][data-streaming] .dsh-thinking-preview').allTextContents()).at(-1) ??
        ''
      await expect.poll(streamingPreview, { timeout: 30_000 }).toMatch(/^….*r\d+$/)
      const preview = await streamingPreview()
      expect(preview.length).toBeLessThanOrEqual(91)
      expect(BURST_REASONING.join('')).toContain(preview.slice(1))
      await expect.poll(lastAnswer, { timeout: 30_000 }).toBe(BURST_TEXT.join(''))
      await idle()
      expect(await page.locator('[data-node="thinking"]').count()).toBe(rowsBefore + 1)
      expect((await assistant().allTextContents()).filter((a) => a.startsWith('a0 a1 '))).toHaveLength(1)
      await page.locator('[data-node="thinking"] summary').last().click()
      await expect
        .poll(async () => (await page.locator('.dsh-thinking-body').allTextContents()).at(-1))
        .toBe(BURST_REASONING.join(''))
    })
  })

  it('the reasoning-effort picker changes the session model', async () => {
    await withArtifacts(page, 'conv-effort', async () => {
      const sessionId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)
      await page.locator('select[aria-label="Reasoning effort"]').selectOption('high')
      await expect
        .poll(
          async () =>
            (await app.call('sessions.list', {})).sessions.find((s: any) => s.sessionId === sessionId)?.model
              ?.reasoningEffort,
        )
        .toBe('high')
      await expect.poll(() => page.locator('select[aria-label="Reasoning effort"]').inputValue()).toBe('high')
    })
  })

  it('useSnapshotSlice re-renders a seat only when its slice changes, not on every streamed frame', async () => {
    const { page, context, errors } = await app.openPage()
    await withArtifacts(page, 'snapshot-slice', async () => {
      // The page's own React and this half's module (eval keeps vitest from rewriting the imports).
      const counts = await page.evaluate(async (url) => {
        // biome-ignore lint/security/noGlobalEval: a constant string run in the test page; written as code, vitest would rewrite the import to its own module graph
        const load = (0, eval)('(u) => import(u)') as (u: string) => Promise<any>
        const [react, dom, half] = await Promise.all([load('react'), load('react-dom/client'), load(url)])
        const model = new half.ConversationModel({ schedule: (run: () => void) => requestAnimationFrame(() => run()) })
        const renders = { slice: 0, full: 0 }
        const Slice = () => {
          half.useSnapshotSlice(model, (s: any) => [s.turnRunning])
          renders.slice++
          return null
        }
        const Full = () => {
          half.useSnapshot(model)
          renders.full++
          return null
        }
        const root = dom.createRoot(document.createElement('div'))
        root.render(react.createElement(react.Fragment, null, react.createElement(Slice), react.createElement(Full)))
        const frame = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)))
        await frame()
        let seq = 0
        const event = (type: string, data: unknown) => model.applyEvent({ seq: seq++, type, time: Date.now(), data })
        // Model changes render as transitions, in a task after the frame (later on a loaded
        // machine): wait for the slice reader to have rendered the turn's start before counting.
        const before = renders.slice
        event('turn/start', { turn: 1 })
        event('step/start', { turn: 1, step: 1 })
        for (let i = 0; i < 100 && renders.slice === before; i++) await frame()
        await frame()
        const atStart = { ...renders }
        for (let i = 0; i < 12; i++) {
          event('assistant/chunk', { chunk: { kind: 'reasoning-delta', text: `part ${i} ` } })
          await frame()
          await frame()
        }
        const streamed = { slice: renders.slice - atStart.slice, full: renders.full - atStart.full }
        const beforeEnd = renders.slice
        event('turn/end', { turn: 1, reason: 'completed' })
        for (let i = 0; i < 100 && renders.slice === beforeEnd; i++) await frame()
        const ended = renders.slice - atStart.slice - streamed.slice
        root.unmount()
        return { streamed, ended }
      }, `${app.url}/plugins/@dsh/ui-conversation/index.js`)
      // Twelve frames of reasoning: the full snapshot reader renders in each, the slice reader in none.
      expect(counts.streamed.full).toBeGreaterThanOrEqual(10)
      expect(counts.streamed.slice).toBe(0)
      // The turn ending changes the slice: it renders again.
      expect(counts.ended).toBeGreaterThanOrEqual(1)
      expect(errors).toEqual([])
    })
    await context.close()
  })
})
