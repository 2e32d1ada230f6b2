// useWebApp(): the `dsh web` host of a browser test file, shared with the other files of the same
// vitest worker that ask for the same configuration: the default one, or the same patch text. The
// suite runs most files in shared workers (`isolate: false`), so this module, and the hosts it
// keeps, outlive one file: the first file of a configuration boots its host and a mock model with
// an empty script; every file of it then installs its own script on that mock when it starts,
// works in a folder of its own (its own workspace and sessions), and on its end stops its jobs and
// turns, removes its sessions and workspace and clears the script. A file with configuration of
// its own (env, args, copied files, a fixed port, no key, `private`) gets a private host, closed
// by its own afterAll.
import { mkdirSync, mkdtempSync } from 'node:fs'
import { basename, join } from 'node:path'
import type { RecordedRequest } from '@dsh/llm-mock-server'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect } from 'vitest'
import { launchBrowser, type OpenedPage, openPage, startWebApp, type WebApp, type WebAppOptions } from './index.ts'

export interface UseWebAppOptions extends WebAppOptions {
  /** Never share: boot a host of this file's own even in the default configuration. */
  private?: boolean
}

/** The mock model as one file sees it: its own script, and only the requests since the file began. */
export interface FileMock {
  readonly url: string
  readonly baseURL: string
  readonly port: number
  /** The chat and model requests received since this file's script was installed. */
  readonly requests: RecordedRequest[]
  readonly served: number
  readonly remaining: number
  release(name: string): void
}

export interface WebFixture {
  /** The host's URL (`http://127.0.0.1:<port>`). */
  readonly url: string
  /** This file's own folder: the cwd of the sessions `newSession()` and `openPage()` create. */
  readonly cwd: string
  /** The host's HOME (shared with the other files of the worker when `shared`). */
  readonly home: string
  readonly mock: FileMock
  /** The underlying host (restart it only from a private one: see `shared`). */
  readonly app: WebApp
  /** True when the host serves other files of this worker too. */
  readonly shared: boolean
  /** The run's browser, connected on first use and disconnected when the file ends. */
  browser(): Promise<Browser>
  /** A method call over HTTP, as the page makes it. */
  // biome-ignore lint/suspicious/noExplicitAny: wire JSON, as WebApp.call
  call<T = any>(method: string, params?: unknown): Promise<T>
  /** A new session in this file's folder (registered as a workspace, as the page does); its id. */
  newSession(): Promise<string>
  /**
   * A fresh browser context on a new session of this file's folder (`/s/<id>`), waiting until the
   * app has booted; with `path`, that page of the host instead (`'/'`: the launch page).
   */
  openPage(options?: { locale?: string; waitReady?: boolean; path?: string }): Promise<OpenedPage>
}

/** The worker's shared hosts, by configuration: '' is the default one, else the patch text. */
const sharedHosts = new Map<string, Promise<WebApp>>()
let boots = 0
let files = 0

/** How many hosts this process booted through useWebApp (for the fixture's own test). */
export const webAppBoots = (): number => boots

/** With DSH_WEB_TESTKIT_TRACE set, each boot is written to stderr (to count the boots of a run). */
const trace = (what: string): void => {
  if (process.env.DSH_WEB_TESTKIT_TRACE)
    process.stderr.write(`web-testkit: pid ${process.pid} boots ${what} for ${expect.getState().testPath ?? '?'}\n`)
}

/**
 * The key of the shared host a file may use: '' for the default configuration, the patch text for a
 * file whose only option is a patch (a patch is the host's whole configuration, so files with the
 * same text see the same host); undefined when the file needs a host of its own.
 */
const shareKey = (o: UseWebAppOptions): string | undefined =>
  !o.private &&
  !o.noKey &&
  !o.port &&
  !Object.keys(o.env ?? {}).length &&
  !(o.args ?? []).length &&
  !Object.keys(o.copy ?? {}).length
    ? (o.patch ?? '')
    : undefined

async function sharedHost(key: string): Promise<WebApp> {
  const known = sharedHosts.get(key)
  if (known !== undefined) {
    // A host that died (or that a file could not clean) is not handed on: the next file would fail
    // for a reason not its own. It is replaced by a fresh boot.
    const app = await known.catch(() => undefined)
    if (app && (await alive(app))) return app
    await app?.close().catch(() => {})
    if (sharedHosts.get(key) === known) sharedHosts.delete(key)
  }
  boots++
  trace(key ? `the shared host of a patch (${key.length} chars)` : 'the shared default host')
  // Tethered: the worker may be killed without running any hook, and the host must die with it.
  const started = startWebApp({ steps: [], tether: true, ...(key ? { patch: key } : {}) })
  sharedHosts.set(key, started)
  started.catch(() => {
    if (sharedHosts.get(key) === started) sharedHosts.delete(key)
  })
  return started
}

/**
 * The file's steps with its gate names made its own (`<prefix><name>`): a released gate stays open
 * on the mock for good, so a later file of the same host waiting at a gate of the same name would
 * pass at once. The file's `mock.release(name)` releases the renamed gate.
 */
export function ownGates(steps: unknown[], prefix: string): unknown[] {
  return steps.map((step) => {
    const events = (step as { events?: unknown })?.events
    if (!Array.isArray(events)) return step
    return {
      ...(step as object),
      events: events.map((event) =>
        typeof (event as { gate?: unknown })?.gate === 'string'
          ? { ...(event as object), gate: prefix + (event as { gate: string }).gate }
          : event,
      ),
    }
  })
}

const alive = (app: WebApp): Promise<boolean> =>
  fetch(`${app.url}/client-manifest.json`).then(
    (res) => res.ok,
    () => false,
  )

/** Drops the shared host after a file could not clean up after itself (the next file boots anew). */
async function discard(app: WebApp): Promise<void> {
  for (const [key, host] of sharedHosts) if ((await host.catch(() => undefined)) === app) sharedHosts.delete(key)
  await app.close().catch(() => {})
}

/**
 * Registers this file's beforeAll/afterAll and returns its host; read its fields inside tests or
 * hooks (they throw before the beforeAll ran).
 */
export function useWebApp(options: UseWebAppOptions = {}): WebFixture {
  const steps = options.steps ?? [{ text: 'Hello from the mock model.' }]
  const key = shareKey(options)
  const isShared = key !== undefined
  let app: WebApp | undefined
  let cwd: string | undefined
  let from = 0
  // Gate names of this file on a shared mock (see ownGates); none on a private one.
  let gatePrefix = ''
  let browser: Promise<Browser> | undefined
  const ready = (): WebApp => {
    if (!app) throw new Error('useWebApp: the host is not started yet (read it inside a test or hook)')
    return app
  }

  beforeAll(async () => {
    if (key !== undefined) {
      app = await sharedHost(key)
      const name = basename(expect.getState().testPath ?? 'file').replace(/\.test\.ts$|[^\w.-]+/g, '')
      const parent = join(app.root, 'files')
      mkdirSync(parent, { recursive: true })
      cwd = mkdtempSync(join(parent, `${++files}-${name}-`))
      from = app.mock.requests.length
      gatePrefix = `file${files}:`
      app.mock.setScript(ownGates(steps, gatePrefix) as typeof steps)
    } else {
      boots++
      trace('a private host')
      app = await startWebApp(options)
      cwd = app.cwd
    }
  })

  afterAll(async () => {
    const opened = browser
    browser = undefined
    if (opened !== undefined) await (await opened.catch(() => undefined))?.close().catch(() => {})
    if (!app) return
    if (!isShared) {
      await app.close()
      return
    }
    // The worker's next file must not meet this one: stop its jobs and turns, remove its sessions
    // and its workspace, clear the script (a request still under way is then refused, never
    // answered with the next file's step).
    const host = app
    host.mock.setScript([])
    // A host the file stopped (or that died) has nothing to clean: the next file boots a new one.
    if (!(await alive(host))) return discard(host)
    try {
      await forget(host, cwd!)
    } catch (error) {
      await discard(host)
      throw error
    }
  })

  const mock: FileMock = {
    get url() {
      return ready().mock.url
    },
    get baseURL() {
      return ready().mock.baseURL
    },
    get port() {
      return ready().mock.port
    },
    get requests() {
      return ready().mock.requests.slice(from)
    },
    get served() {
      return ready().mock.served
    },
    get remaining() {
      return ready().mock.remaining
    },
    release(name) {
      ready().mock.release(gatePrefix + name)
    },
  }

  const fixture: WebFixture = {
    get url() {
      return ready().url
    },
    get cwd() {
      ready()
      return cwd!
    },
    get home() {
      return ready().home
    },
    get app() {
      return ready()
    },
    shared: isShared,
    mock,
    browser() {
      browser ??= launchBrowser()
      return browser
    },
    call(method, params) {
      return ready().call(method, params)
    },
    async newSession() {
      const host = ready()
      const { workspace } = await host.call<{ workspace?: { id: string } }>('workspaces.create', { path: cwd })
      const { session } = await host.call<{ session: { sessionId: string } }>(
        'sessions.create',
        workspace ? { workspaceId: workspace.id } : { cwd },
      )
      return session.sessionId
    },
    async openPage(opts = {}) {
      const host = ready()
      const path = opts.path ?? `/s/${await fixture.newSession()}`
      return openPage(await fixture.browser(), host.url + path, opts)
    },
  }
  return fixture
}

interface Row {
  sessionId: string
  cwd: string
  status: string
}

/** Stops and removes every session of `cwd` on the host, then its workspace. */
async function forget(app: WebApp, cwd: string): Promise<void> {
  const list = async (): Promise<Row[]> =>
    (await app.call<{ sessions: Row[] }>('sessions.list', { cwd, includeArchived: true })).sessions
  for (const row of await list()) {
    const { jobs } = await app
      .call<{ jobs: { id: string; status: string }[] }>('jobs.list', { sessionId: row.sessionId })
      .catch(() => ({ jobs: [] }))
    for (const job of jobs)
      if (job.status === 'running')
        await app.call('jobs.kill', { sessionId: row.sessionId, jobId: job.id }).catch(() => {})
    if (row.status === 'running' || row.status === 'waiting')
      await app.call('sessions.cancel', { sessionId: row.sessionId }).catch(() => {})
  }
  // A cancelled turn ends on its own; removal is refused (409 SESSION_BUSY) until it has.
  const deadline = Date.now() + 15_000
  for (;;) {
    const left = await list()
    if (!left.length) break
    if (Date.now() > deadline)
      throw new Error(`useWebApp: sessions of ${cwd} still busy after 15 s: ${left.map((r) => r.status).join(', ')}`)
    for (const row of left) await app.call('sessions.remove', { sessionId: row.sessionId }).catch(() => undefined)
    if ((await list()).length) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const { workspaces } = await app.call<{ workspaces: { id: string; path: string }[] }>('workspaces.list', {})
  for (const w of workspaces) if (w.path === cwd) await app.call('workspaces.remove', { id: w.id })
}
