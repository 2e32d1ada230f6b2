// The web test kit against the real components: one `dsh web` host started by startWebApp (with
// every option it documents) over @dsh/llm-mock-server, and one Debian chromium through
// playwright-core. The host tests run in order: options first, then a turn served by the mock,
// a restart, and last close() (which must stop the host and free its port).
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import {
  ARTIFACTS_DIR,
  CHROMIUM_PATH,
  hasChromium,
  launchBrowser,
  openPage,
  startWebApp,
  withArtifacts,
  type Browser,
  type OpenedPage,
  type WebApp,
} from '../src/index.ts'

vi.setConfig({ testTimeout: 30_000, hookTimeout: 60_000 })

const ANSWER = 'Served by the web-testkit mock step.'
const PROBE = 'DSH_WEB_TESTKIT_PROBE'
const TRUSTED = 'wtk-trusted.test'
const DISABLED_ROWS = [
  'ui-goal',
  'ui-conversation',
  'ui-tool',
  'ui-takeover',
  'ui-pickers',
  'ui-settings',
  'ui-model-selection',
  'ui-subagent',
]
/** A same-origin page that is not the app (never sets data-ready): quick to open. */
const plainPage = () => openPage(browser!, `${app.url}/client-manifest.json`, { waitReady: false })

let app: WebApp
let browser: Browser | undefined
let copySource: string

beforeAll(async () => {
  copySource = mkdtempSync(join(tmpdir(), 'wtk-copy-'))
  writeFileSync(join(copySource, 'note.txt'), 'copied into the launch folder\n')
  ;[app, browser] = await Promise.all([
    startWebApp({
      noKey: true,
      steps: [{ text: ANSWER }],
      env: { [PROBE]: 'set-by-the-env-option' },
      args: ['--trusted-host', TRUSTED],
      // Lighter pages: most browser halves off (this also shows the patch applied).
      patch: DISABLED_ROWS.map((id) => `- id: ${id}\n  disabled: true\n`).join(''),
      copy: { 'copied-dir': copySource },
    }),
    hasChromium() ? launchBrowser() : Promise.resolve(undefined),
  ])
})

afterAll(async () => {
  await browser?.close()
  await app?.close()
  rmSync(copySource, { recursive: true, force: true })
})

/** GET `path` on the host with an explicit Host header; resolves with the status code. */
function statusWithHost(host: string, path = '/'): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: app.port, path, headers: { host: `${host}:${app.port}` } },
      (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      },
    )
    req.on('error', reject)
    req.end()
  })
}

const credential = async (name: string) => (await app.call('credentials.describe', { names: [name] })).credentials[0]

describe('startWebApp', () => {
  it('boots a host that answers HTTP on its url, with a temporary HOME, DSH_HOME and launch folder', async () => {
    expect(app.url).toBe(`http://127.0.0.1:${app.port}`)
    expect(app.port).toBeGreaterThan(0)
    const res = await fetch(app.url)
    expect(res.status).toBe(200)
    expect(await res.text()).toMatch(/<html/i)
    const manifest = await (await fetch(`${app.url}/client-manifest.json`)).json()
    expect(manifest.launchCwd).toBe(app.cwd)
    expect(app.home).toBe(join(app.root, 'home'))
    expect(app.cwd).toBe(join(app.root, 'project'))
    // DSH_HOME is <home>/.dsh: the credentials layers live there.
    const layers = (await credential('DEEPSEEK_API_KEY')).layers as { id: string; path?: string }[]
    expect(layers.find((l) => l.id === 'home-env')?.path).toBe(join(app.home, '.dsh', '.env'))
    expect(typeof app.stderr()).toBe('string')
  })

  it('noKey leaves DEEPSEEK_API_KEY unset; env reaches the host; args are passed to dsh web', async () => {
    expect(await credential('DEEPSEEK_API_KEY')).toMatchObject({ configured: false })
    expect(await credential(PROBE)).toMatchObject({ configured: true, source: 'env' })
    // --trusted-host from `args`: that Host is accepted, another one is refused.
    expect(await statusWithHost(TRUSTED)).toBe(200)
    expect(await statusWithHost('not-trusted.test')).not.toBe(200)
  })

  it('copy puts folders into the launch folder; patch is written there and applied', async () => {
    expect(readFileSync(join(app.cwd, 'copied-dir', 'note.txt'), 'utf8')).toBe('copied into the launch folder\n')
    expect(readFileSync(join(app.cwd, 'test.patch.yml'), 'utf8')).toContain('ui-goal')
    const manifest = await (await fetch(`${app.url}/client-manifest.json`)).json()
    const packages = (manifest.plugins as { package: string }[]).map((p) => p.package)
    expect(packages).toContain('@dsh/ui-plan')
    expect(packages).not.toContain('@dsh/ui-goal')
  })

  it('call() makes method calls over HTTP and throws a clear error for a failed one', async () => {
    expect(await app.call('sessions.list', {})).toHaveProperty('sessions')
    await expect(app.call('no.such.method', {})).rejects.toThrow(/^no\.such\.method: 4\d\d /)
  })

  it('the mock serves the given steps to the host', async () => {
    // noKey: store a key the way the Settings dialog does, then run a turn.
    await app.call('credentials.set', { name: 'DEEPSEEK_API_KEY', value: 'sk-set-through-the-api' })
    const { session } = await app.call('sessions.create', { cwd: app.cwd })
    await app.call('sessions.prompt', { sessionId: session.sessionId, text: 'answer from the script' })
    const chats = () => app.mock.requests.filter((r) => r.path.endsWith('/chat/completions'))
    await vi.waitFor(() => expect(chats().map((r) => r.outcome)).toEqual(['served']), {
      timeout: 20_000,
      interval: 100,
    })
    expect(chats()[0].step).toBe(0)
    expect(chats()[0].headers.authorization).toBe('Bearer sk-set-through-the-api')
    await vi.waitFor(
      async () =>
        expect(JSON.stringify((await app.call('sessions.history', { sessionId: session.sessionId })).events)).toContain(
          ANSWER,
        ),
      { timeout: 20_000, interval: 100 },
    )
  })
})

describe('CHROMIUM_PATH', () => {
  it('is read from DSH_CHROMIUM when the module loads; hasChromium checks that path', async () => {
    vi.stubEnv('DSH_CHROMIUM', '/nonexistent/chromium-for-web-testkit')
    vi.resetModules()
    try {
      const fresh = await import('../src/index.ts')
      expect(fresh.CHROMIUM_PATH).toBe('/nonexistent/chromium-for-web-testkit')
      expect(fresh.hasChromium()).toBe(false)
    } finally {
      vi.unstubAllEnvs()
      vi.resetModules()
    }
    expect(hasChromium()).toBe(existsSync(CHROMIUM_PATH))
  })
})

describe.skipIf(!hasChromium())('openPage and withArtifacts in Chromium', () => {
  it('waits until the app has booted (html[data-ready="true"]) in a fresh context, en-US by default', async () => {
    const { page, context, errors } = await openPage(browser!, app.url)
    try {
      expect(await page.evaluate(() => document.documentElement.dataset.ready)).toBe('true')
      expect(await page.evaluate(() => navigator.language)).toBe('en-US')
      expect(page.viewportSize()).toEqual({ width: 1280, height: 800 })
      expect(errors).toEqual([])
    } finally {
      await context.close()
    }
  })

  it('waitReady: false returns for a page that never becomes ready; locale sets the browser language', async () => {
    const { page, context } = await openPage(browser!, `${app.url}/client-manifest.json`, {
      waitReady: false,
      locale: 'zh-CN',
    })
    try {
      expect(await page.evaluate(() => document.documentElement.dataset.ready ?? null)).toBe(null)
      expect(await page.evaluate(() => navigator.language)).toBe('zh-CN')
    } finally {
      await context.close()
    }
  })

  it('collects console.error messages and uncaught page errors (not other console output), per page', async () => {
    const a = await plainPage()
    const b = await plainPage()
    try {
      await a.page.evaluate(() => {
        console.log('just a log line')
        console.warn('just a warning')
        console.error('web-testkit console error')
      })
      await a.page.evaluate(() => {
        setTimeout(() => {
          throw new Error('web-testkit uncaught error')
        })
      })
      await expect.poll(() => a.errors).toEqual(['web-testkit console error', 'pageerror: web-testkit uncaught error'])
      // Each page has its own context: no shared errors, no shared storage.
      expect(b.errors).toEqual([])
      expect(a.context).not.toBe(b.context)
      await a.page.evaluate(() => localStorage.setItem('wtk-probe', 'a'))
      expect(await b.page.evaluate(() => localStorage.getItem('wtk-probe'))).toBe(null)
    } finally {
      await a.context.close()
      await b.context.close()
    }
  })

  describe('withArtifacts', () => {
    let opened: OpenedPage

    beforeAll(async () => {
      opened = await plainPage()
    })

    afterAll(async () => {
      await opened?.context.close()
    })

    it('on success returns the value and saves nothing', async () => {
      const name = `wtk-ok-${process.pid}`
      const file = join(ARTIFACTS_DIR, `${name}.png`)
      rmSync(file, { force: true })
      try {
        expect(await withArtifacts(opened.page, name, async () => 42)).toBe(42)
        expect(existsSync(file)).toBe(false)
      } finally {
        rmSync(file, { force: true })
      }
    })

    it('on a failure saves <ARTIFACTS_DIR>/<name>.png (folder ignored by git) and rethrows the same error with the path', async () => {
      const file = join(ARTIFACTS_DIR, `wtk-fail-${process.pid}.png`)
      rmSync(file, { force: true })
      try {
        const original = new Error('the step failed')
        let caught: unknown
        try {
          await withArtifacts(opened.page, `wtk fail/${process.pid}`, async () => {
            throw original
          })
        } catch (error) {
          caught = error
        }
        expect(caught).toBe(original)
        expect(original.message).toBe(`the step failed\n(screenshot: ${file})`)
        expect(readFileSync(file).subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
        expect(readFileSync(join(ARTIFACTS_DIR, '.gitignore'), 'utf8')).toBe('*\n')
      } finally {
        rmSync(file, { force: true })
      }
    })

    it('creates the folder named by DSH_TEST_ARTIFACTS (read at import) with a .gitignore', async () => {
      const dir = join(mkdtempSync(join(tmpdir(), 'wtk-artifacts-')), 'nested', 'web')
      vi.stubEnv('DSH_TEST_ARTIFACTS', dir)
      vi.resetModules()
      try {
        const fresh = await import('../src/index.ts')
        expect(fresh.ARTIFACTS_DIR).toBe(dir)
        await expect(
          fresh.withArtifacts(opened.page, 'in-temp', async () => Promise.reject(new Error('boom'))),
        ).rejects.toThrow(`boom\n(screenshot: ${join(dir, 'in-temp.png')})`)
        expect(readdirSync(dir).sort()).toEqual(['.gitignore', 'in-temp.png'])
        expect(readFileSync(join(dir, '.gitignore'), 'utf8')).toBe('*\n')
      } finally {
        vi.unstubAllEnvs()
        vi.resetModules()
        rmSync(join(dir, '..', '..'), { recursive: true, force: true })
      }
    })

    it('with the page gone still rethrows the original error, saving nothing', async () => {
      const name = `wtk-gone-${process.pid}`
      const file = join(ARTIFACTS_DIR, `${name}.png`)
      await opened.page.close()
      const original = new Error('after close')
      await expect(withArtifacts(opened.page, name, async () => Promise.reject(original))).rejects.toBe(original)
      expect(original.message).toBe('after close')
      expect(existsSync(file)).toBe(false)
    })
  })
})

describe('host lifecycle', () => {
  it('restart() starts the host again on the same port, HOME and folder', async () => {
    const { port, url } = app
    await app.restart()
    expect(app.port).toBe(port)
    expect((await fetch(url)).status).toBe(200)
    // The key stored before the restart is still in the same HOME.
    expect(await credential('DEEPSEEK_API_KEY')).toMatchObject({ configured: true, source: 'credentials-file' })
  })

  it('close() stops the host (exit 0), frees the port, stops the mock and removes the temporary root', async () => {
    await app.close()
    await expect(fetch(app.url)).rejects.toThrow()
    await expect(fetch(`${app.mock.baseURL}/models`)).rejects.toThrow()
    expect(existsSync(app.root)).toBe(false)
    expect(await app.stop()).toBe(0)
  })
})
