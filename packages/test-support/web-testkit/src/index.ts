// @dsh/web-testkit: browser tests against the real `dsh web`. `startWebApp()` runs the bin
// (`dsh web --no-open --port 0`) with a temporary HOME and DSH_HOME against a scripted
// @dsh/llm-mock-server; `launchBrowser()` gives Debian chromium through playwright-core (in a vitest
// run, the run's one shared browser: broker.ts);
// `openPage()` records console errors; `withArtifacts()` saves a screenshot when a step fails.
import { spawn, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { DSH_BIN } from '@dsh/cli-testkit'
import { startMockServer, type MockServer, type MockStep } from '@dsh/llm-mock-server'
import { BROWSER_BROKER_ENV, BROWSER_LAUNCH_OPTIONS, brokerEndpoint, CHROMIUM_PATH } from './broker.ts'

export type { Browser, BrowserContext, Page } from 'playwright-core'
export {
  BROWSER_BROKER_ENV,
  BROWSER_LAUNCH_OPTIONS,
  CHROMIUM_PATH,
  startBrowserBroker,
  type BrowserBroker,
} from './broker.ts'
export { type FileMock, type UseWebAppOptions, useWebApp, type WebFixture, webAppBoots } from './fixture.ts'

export const hasChromium = (): boolean => existsSync(CHROMIUM_PATH)

/** Where failure screenshots go: `$DSH_TEST_ARTIFACTS`, else `<repo>/test-artifacts/web`. */
export const ARTIFACTS_DIR =
  process.env.DSH_TEST_ARTIFACTS || fileURLToPath(new URL('../../../../test-artifacts/web/', import.meta.url))

export interface WebAppOptions {
  /** Mock model steps (see @dsh/llm-mock-server); default: one plain answer. */
  steps?: MockStep[]
  /** Extra environment for dsh. */
  env?: Record<string, string>
  /** Extra command-line arguments (e.g. `--patch FILE`). */
  args?: string[]
  /** A patch layer (YAML text) written to the project folder and passed with `--patch`. */
  patch?: string
  /** Files or folders copied into the project folder before the start: `{'hello-ui': '/abs/fixture/dir'}`. */
  copy?: Record<string, string>
  /** Fixed port (default 0: any free one). */
  port?: number
  /** Leave DEEPSEEK_API_KEY unset (to see the missing-key notice). */
  noKey?: boolean
  /**
   * Run the host under a small node parent that stops it when this process's end of its stdin
   * closes: the host dies with this process even when nothing calls `close()` (a vitest worker
   * killed with a host shared across files).
   */
  tether?: boolean
}

export interface WebApp {
  url: string
  port: number
  /** The temporary root (removed by `close()`), the HOME, and the launch folder. */
  root: string
  home: string
  cwd: string
  mock: MockServer
  /** Stops the host (SIGTERM); resolves with its exit code. */
  stop(): Promise<number | null>
  /** Starts the host again on the same port, HOME and folder. */
  restart(): Promise<void>
  /** A method call over HTTP, as the page makes it. */
  call<T = any>(method: string, params?: unknown): Promise<T>
  stderr(): string
  /** Stops everything and removes the temporary folders. */
  close(): Promise<void>
}

// The tether's parent: runs argv[1..] and stops it (SIGTERM) when stdin ends or on SIGTERM/SIGINT,
// exiting with the host's code.
const TETHER = `const c = require('node:child_process').spawn(process.argv[1], process.argv.slice(2), { stdio: ['ignore', 'inherit', 'inherit'] });
const stop = () => { if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM') };
process.stdin.on('end', stop).on('error', stop).resume();
process.on('SIGTERM', stop); process.on('SIGINT', stop);
c.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));`

export async function startWebApp(options: WebAppOptions = {}): Promise<WebApp> {
  const root = mkdtempSync(join(tmpdir(), 'dsh-web-test-'))
  const home = join(root, 'home')
  const cwd = join(root, 'project')
  mkdirSync(home)
  mkdirSync(cwd)
  for (const [dest, source] of Object.entries(options.copy ?? {})) cpSync(source, join(cwd, dest), { recursive: true })
  const mock = await startMockServer({ steps: options.steps ?? [{ text: 'Hello from the mock model.' }] })
  const args = ['web', '--no-open', '--port', String(options.port ?? 0), ...(options.args ?? [])]
  if (options.patch) {
    writeFileSync(join(cwd, 'test.patch.yml'), options.patch)
    args.push('--patch', 'test.patch.yml')
  }
  const env: Record<string, string> = {
    PATH: process.env.PATH!,
    HOME: home,
    DSH_HOME: join(home, '.dsh'),
    // The suite's one stack code cache directory (scripts/vitest-global-setup.ts): a fresh home
    // does not compile the stack again.
    ...(process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {}),
    DEEPSEEK_BASE_URL: mock.baseURL,
    ...(options.noKey ? {} : { DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' }),
    DSH_PERMISSION_MODE: 'danger-full-access',
    ...options.env,
  }
  let child: ChildProcess | undefined
  let exited: Promise<number | null> = Promise.resolve(null)
  let stderr = ''
  let port = options.port ?? 0
  const start = async (): Promise<string> => {
    const argv = [DSH_BIN, ...args.map((a, i) => (args[i - 1] === '--port' ? String(port) : a))]
    const proc = spawn(process.execPath, options.tether ? ['-e', TETHER, process.execPath, ...argv] : argv, {
      cwd,
      env,
      stdio: [options.tether ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    })
    child = proc
    proc.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    exited = new Promise((resolve) => proc.on('close', (code) => resolve(code)))
    const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000)
    try {
      return await new Promise<string>((resolve, reject) => {
        let stdout = ''
        proc.stdout!.setEncoding('utf8').on('data', (d: string) => {
          stdout += d
          const hit = /http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout)
          if (hit) resolve(hit[0])
        })
        void exited.then((code) =>
          reject(new Error(`dsh web exited (${code}) before printing its URL; stderr:\n${stderr}`)),
        )
      })
    } finally {
      clearTimeout(timer)
    }
  }
  const url = await start()
  port = Number(new URL(url).port)
  const app: WebApp = {
    url,
    port,
    root,
    home,
    cwd,
    mock,
    stderr: () => stderr,
    async stop() {
      if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null
      child.kill('SIGTERM')
      const timer = setTimeout(() => child?.kill('SIGKILL'), 15_000)
      const code = await exited
      clearTimeout(timer)
      return code
    },
    async restart() {
      await app.stop()
      await start()
    },
    async call(method, params = {}) {
      const res = await fetch(`${url}/api/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: url },
        body: JSON.stringify(params),
      })
      const body = (await res.json()) as { result?: unknown; error?: { code: string; message: string } }
      if (!res.ok) throw new Error(`${method}: ${res.status} ${body.error?.code}: ${body.error?.message}`)
      return body.result as never
    },
    async close() {
      await app.stop().catch(() => {})
      await mock.close().catch(() => {})
      rmSync(root, { recursive: true, force: true })
    },
  }
  return app
}

/**
 * A browser for one test file. Inside a vitest run whose global setup started the browser broker
 * (`DSH_TEST_BROWSER_BROKER`), this connects to the run's one shared Chromium; `close()` then closes
 * this file's contexts and disconnects, leaving the browser to the other files. Elsewhere (a script,
 * a run without the broker) it launches its own Chromium, which `close()` stops.
 */
export async function launchBrowser(): Promise<Browser> {
  const broker = process.env[BROWSER_BROKER_ENV]
  if (broker) return chromium.connect(await brokerEndpoint(broker))
  return chromium.launch(BROWSER_LAUNCH_OPTIONS)
}

export interface OpenedPage {
  page: Page
  context: BrowserContext
  /** Console errors and uncaught page errors seen so far. */
  errors: string[]
}

/** One event of a session's log, as the host's event stream sends it. */
export interface SessionEvent {
  seq: number
  type: string
  data?: unknown
}

/**
 * Resolves with the first event of `type` in a session's log, read from the host's own event stream
 * (`GET /api/events/session/<id>`, from seq 0, as the page reads it): a test waits for the event
 * itself (a turn's `turn/end`) instead of polling the history. Rejects after `timeoutMs`, or when
 * the stream ends without one.
 */
export async function waitForSessionEvent(
  app: Pick<WebApp, 'url'>,
  sessionId: string,
  type: string,
  timeoutMs = 60_000,
): Promise<SessionEvent> {
  const abort = new AbortController()
  const timer = setTimeout(
    () => abort.abort(new Error(`no ${type} event in session ${sessionId} within ${timeoutMs} ms`)),
    timeoutMs,
  )
  try {
    const res = await fetch(`${app.url}/api/events/session/${encodeURIComponent(sessionId)}`, {
      headers: { origin: app.url, accept: 'text/event-stream' },
      signal: abort.signal,
    })
    if (!res.ok || !res.body) throw new Error(`the event stream of session ${sessionId} answered ${res.status}`)
    const decoder = new TextDecoder()
    let buffered = ''
    let name = 'message'
    let data = ''
    for await (const piece of res.body as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(piece, { stream: true })
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const line = buffered.slice(0, nl).replace(/\r$/, '')
        buffered = buffered.slice(nl + 1)
        if (line === '') {
          const event = name === 'message' && data ? (JSON.parse(data) as SessionEvent) : undefined
          if (event?.type === type) return event
          name = 'message'
          data = ''
        } else if (line.startsWith('event:')) name = line.slice(6).trim()
        else if (line.startsWith('data:')) data += (data ? '\n' : '') + line.slice(5).replace(/^ /, '')
      }
    }
    throw new Error(`the event stream of session ${sessionId} ended without a ${type} event`)
  } finally {
    clearTimeout(timer)
    abort.abort()
  }
}

/** A fresh browser context (own storage) and page at `url`, waiting until the app has booted. */
export async function openPage(
  browser: Browser,
  url: string,
  options: { locale?: string; waitReady?: boolean } = {},
): Promise<OpenedPage> {
  const context = await browser.newContext({
    locale: options.locale ?? 'en-US',
    viewport: { width: 1280, height: 800 },
  })
  const page = await context.newPage()
  const errors: string[] = []
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text())
  })
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`))
  await page.goto(url)
  if (options.waitReady !== false) await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 })
  return { page, context, errors }
}

/** Runs `fn`; when it throws, saves a full-page screenshot as `<ARTIFACTS_DIR>/<name>.png` and rethrows. */
export async function withArtifacts<T>(page: Page, name: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (error) {
    try {
      mkdirSync(ARTIFACTS_DIR, { recursive: true })
      if (!existsSync(join(ARTIFACTS_DIR, '.gitignore'))) writeFileSync(join(ARTIFACTS_DIR, '.gitignore'), '*\n')
      const file = join(ARTIFACTS_DIR, `${name.replace(/[^A-Za-z0-9_.-]+/g, '-')}.png`)
      await page.screenshot({ path: file, fullPage: true })
      ;(error as Error).message += `\n(screenshot: ${file})`
    } catch {
      // the page is gone: nothing to save
    }
    throw error
  }
}
