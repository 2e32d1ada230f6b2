// The browser half of model-written plugins in real Chromium against the real `dsh web`, the real
// host runner and the mock model. The model defines a dual-half plugin and runs it; the user
// allows it in the page's takeover; its browser half runs in a sandboxed frame of the side panel,
// draws there, logs through the page, and answers a cordis_invoke the model makes. A hostile
// browser half tries the page's API, its cookie, the parent document and storage: every attempt
// fails, as the frame itself reports, and the page refuses its forged messages. Retracting takes
// the frame out of the page.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
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

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

const PATCH = `- insert:
    - id: cordis-host-runner
      name: "@dsh/cordis-host-runner"
    - id: tool-cordis
      name: "@dsh/tool-cordis"
    - id: ui-cordis
      name: "@dsh/ui-cordis"
    - id: cordis-client-runner
      name: "@dsh/cordis-client-runner"
`

const HELLO = [
  'dsh.root.innerHTML = \'<p id="hello">Hello from the browser half</p>\'',
  "dsh.handle('greet', (input) => ({ hello: input.name, drawn: document.getElementById('hello').textContent }))",
  "dsh.log('browser up')",
].join('\n')

// Each attempt reports what it got; nothing here may succeed.
const PROBE = [
  'const out = []',
  'const attempt = async (label, fn) => {',
  "  try { out.push(label + ':got:' + String(await fn())) } catch (e) { out.push(label + ':' + e.name) }",
  '}',
  "await attempt('fetch', () => fetch('/api/sessions.list', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).then((r) => r.status))",
  "await attempt('nocors', () => fetch('/api/sessions.list', { mode: 'no-cors' }).then((r) => r.type))",
  "await attempt('cookie', () => JSON.stringify(document.cookie))",
  "await attempt('parent', () => parent.document.title)",
  "await attempt('storage', () => localStorage.length)",
  "await attempt('session', () => sessionStorage.length)",
  "dsh.log(out.join(' '))",
  // Forged messages the page must refuse: too large, an answer to no call, an unknown kind.
  "const P = 'dsh-cordis-frame/1'",
  "parent.postMessage({ protocol: P, kind: 'log', text: 'x'.repeat(20000) }, '*')",
  "parent.postMessage({ protocol: P, kind: 'result', id: 99, value: 'forged' }, '*')",
  "parent.postMessage({ protocol: P, kind: 'evaluate', code: 'alert(1)' }, '*')",
  "dsh.log('probe done')",
].join('\n')

const call = (name: string, args: Record<string, unknown>) => ({ toolCalls: [{ name, arguments: args }] })
const STEPS = [
  call('cordis_define', { name: 'hello', description: 'Shows a greeting in the page.', code: '', browser: HELLO }),
  call('cordis_run', { name: 'hello' }),
  { text: 'Hello is running.' },
  call('cordis_invoke', { name: 'hello', handler: 'greet', input: { name: 'Ada' } }),
  { text: 'Greeted.' },
  call('cordis_define', {
    name: 'probe',
    description: 'Tries what a browser half can reach.',
    code: '',
    browser: PROBE,
  }),
  call('cordis_run', { name: 'probe' }),
  { text: 'Probe is running.' },
  call('cordis_define', {
    name: 'broken',
    description: 'Does not compile.',
    code: '',
    browser: 'this is not javascript',
  }),
  call('cordis_run', { name: 'broken' }),
  { text: 'Broken is running.' },
  call('cordis_retract', { name: 'hello' }),
  { text: 'Hello is gone.' },
]

describe.skipIf(!hasChromium())('cordis-client-runner in the browser', () => {
  let app: WebApp
  let browser: Browser
  let page: Page
  let errors: string[]
  beforeAll(async () => {
    // workspace-write: the user is asked before a plugin runs (the takeover).
    app = await startWebApp({ steps: STEPS as never, patch: PATCH, env: { DSH_PERMISSION_MODE: 'workspace-write' } })
    browser = await launchBrowser()
    ;({ page, errors } = await openPage(browser, app.url))
    await page.waitForURL(/\/s\/[^/]+$/)
    // A cookie of the page's origin the frames must not read.
    await page.evaluate(() => {
      // biome-ignore lint/suspicious/noDocumentCookie: a plain cookie of the page, the one the frames must not see
      document.cookie = 'dsh_page_secret=1; path=/'
    })
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
  })
  const input = () => page.locator('textarea.dsh-composer-input')
  const send = async (text: string) => {
    await input().fill(text)
    await input().press('Enter')
  }
  const allow = async (plugin: string) => {
    const takeover = page.locator('.dsh-approval')
    await takeover.locator('h3', { hasText: plugin }).waitFor()
    await takeover.getByRole('button', { name: 'Allow once' }).click()
  }
  /** The last tool result the model was sent. */
  const lastToolText = () => {
    const body = app.mock.requests.at(-1)!.body as { messages: { role: string; content: string }[] }
    return body.messages.filter((m) => m.role === 'tool').at(-1)?.content ?? ''
  }

  it('runs the browser half the user approved in a sandboxed frame: it draws, logs and answers a call', async () => {
    await withArtifacts(page, 'cordis-client-runner-hello', async () => {
      await send('show me a greeting plugin')
      await allow('hello')
      const figure = page.locator('[data-cordis-frame="hello"][data-cordis-frame-state="started"]')
      await figure.waitFor()
      expect(await figure.locator('iframe').getAttribute('sandbox')).toBe('allow-scripts')
      const frame = page.frameLocator('[data-cordis-frame="hello"] iframe')
      expect(await frame.locator('#hello').textContent()).toBe('Hello from the browser half')
      await page.locator('[data-node="assistant"]', { hasText: 'Hello is running.' }).waitFor()
      await page.locator('[data-cordis-log="hello"]', { hasText: '[browser] browser up' }).waitFor()
      await page.locator('[data-cordis-definition="hello"] [data-cordis-browser="running"]').waitFor()

      await send('greet Ada')
      await page.locator('[data-node="assistant"]', { hasText: 'Greeted.' }).waitFor()
      expect(JSON.parse(lastToolText())).toEqual({ hello: 'Ada', drawn: 'Hello from the browser half' })
      expect(errors).toEqual([])
    })
  })

  it('a hostile browser half reaches neither the API, the cookie, the parent page nor storage', async () => {
    await withArtifacts(page, 'cordis-client-runner-probe', async () => {
      await send('probe what you can reach')
      await allow('probe')
      const log = page.locator('[data-cordis-log="probe"]')
      await log.filter({ hasText: 'probe done' }).waitFor()
      const lines = (await log.textContent())!.split('\n')
      expect(lines).toContain(
        '[browser] fetch:TypeError nocors:TypeError cookie:SecurityError parent:SecurityError storage:SecurityError session:SecurityError',
      )
      // The forged messages came before "probe done": all three were refused, none reached the host.
      const figure = page.locator('[data-cordis-frame="probe"]')
      expect(await figure.getAttribute('data-cordis-refused')).toBe('3')
      expect(lines.some((l) => l.includes('xxxx'))).toBe(false)
      // Opened on its own (not framed), the document is still sandboxed by its CSP: an opaque origin.
      const src = await figure.locator('iframe').getAttribute('src')
      const alone = await page.context().newPage()
      await alone.goto(new URL(src!, app.url).href)
      expect(
        await alone.evaluate(() => {
          try {
            return `${origin} ${localStorage.length}`
          } catch (e) {
            return `${origin} ${(e as Error).name}`
          }
        }),
      ).toBe('null SecurityError')
      await alone.close()
      // The page frames only while this row asks for it; the frame document has its own policy.
      const pageCsp = (await fetch(app.url)).headers.get('content-security-policy')!
      expect(pageCsp).toContain("frame-src 'self'")
      const frameCsp = (await fetch(new URL(src!, app.url))).headers.get('content-security-policy')!
      expect(frameCsp).toMatch(/^default-src 'none'; script-src 'sha256-[^ ]+' 'sha256-[^ ;]+';/)
      expect(frameCsp).toContain("connect-src 'none'")
      expect(frameCsp).toContain('sandbox allow-scripts')
      expect(frameCsp).not.toContain('unsafe-eval')
      // Only the approved code of a running plugin is served.
      const wrong = await fetch(new URL(src!.replace(/[0-9a-f]{64}$/, '0'.repeat(64)), app.url))
      expect(wrong.status).toBe(404)
    })
  })

  it('a browser half that does not compile is reported failed, in the frame and in the panel', async () => {
    await withArtifacts(page, 'cordis-client-runner-broken', async () => {
      await send('run the broken one')
      await allow('broken')
      await page.locator('[data-cordis-frame="broken"][data-cordis-frame-state="failed"]').waitFor()
      await page.locator('[data-cordis-definition="broken"] [data-cordis-browser="failed"]').waitFor()
      expect(await page.locator('[data-cordis-definition="broken"] .dsh-cordis-error').textContent()).toMatch(
        /SyntaxError|Unexpected/,
      )
    })
  })

  it('retracting a plugin removes its frame from the page', async () => {
    await withArtifacts(page, 'cordis-client-runner-retract', async () => {
      await send('retract the greeting')
      await page.locator('[data-node="assistant"]', { hasText: 'Hello is gone.' }).waitFor()
      await page.locator('[data-cordis-frame="hello"]').waitFor({ state: 'detached' })
      // Playwright drops a detached frame on its own event: wait for it.
      await expect.poll(() => page.frames().some((f) => f.url().includes('/hello/'))).toBe(false)
      // Another is retracted from the panel.
      await page.locator('[data-cordis-retract="broken"]').click()
      await page.locator('[data-cordis-frame="broken"]').waitFor({ state: 'detached' })
    })
  })

  it('the session ending takes the last one down: its frame is gone and its document no longer served', async () => {
    await withArtifacts(page, 'cordis-client-runner-session-end', async () => {
      const sessionId = new URL(page.url()).pathname.split('/').pop()!
      const src = await page.locator('[data-cordis-frame="probe"] iframe').getAttribute('src')
      await app.call('sessions.remove', { sessionId })
      await page.locator('[data-cordis-frames]').waitFor({ state: 'detached' })
      await expect.poll(() => page.frames().length).toBe(1)
      // The runner retracted it with the session (not only the page leaving it).
      await expect.poll(async () => (await app.call('cordis.definitions', { sessionId })).definitions).toEqual([])
      expect((await fetch(new URL(src!, app.url))).status).toBe(404)
    })
  })
})
