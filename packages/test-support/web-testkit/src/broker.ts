// One Chromium for a whole test run. Launching Debian's chromium costs 0.7-1 s (and closing it
// 0.2-0.5 s) on this two-core machine; every browser test file launched its own. The broker is a
// loopback HTTP endpoint started by vitest's global setup in the main process, where it lives for
// the whole run: the first `launchBrowser()` of any test file asks it for the browser, the broker
// starts one `chromium.launchServer()` then, and every later file connects to the same server
// (each with its own contexts). A run without browser tests starts no browser at all.
//
// Protocol: `GET <broker>/ws` answers the browser server's WebSocket endpoint as plain text, or
// 500 with the launch error. A browser server that died is launched again on the next request.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chromium, type BrowserServer, type LaunchOptions } from 'playwright-core'

/** The browser binary: `$DSH_CHROMIUM`, else Debian's /usr/bin/chromium. */
export const CHROMIUM_PATH = process.env.DSH_CHROMIUM || '/usr/bin/chromium'

/** How the test browser is started: headless Debian chromium (no sandbox: CI runs as root). */
export const BROWSER_LAUNCH_OPTIONS: LaunchOptions = {
  executablePath: CHROMIUM_PATH,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
}

/** The environment variable that carries the broker's URL from the global setup to the workers. */
export const BROWSER_BROKER_ENV = 'DSH_TEST_BROWSER_BROKER'

export interface BrowserBroker {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** How many browser servers were launched so far (0 when no test asked for one). */
  readonly launches: number
  /** Stops the endpoint and the browser server, if one was launched. */
  close(): Promise<void>
}

export async function startBrowserBroker(launchOptions: LaunchOptions): Promise<BrowserBroker> {
  let current: Promise<BrowserServer> | undefined
  let launches = 0
  const browserServer = (): Promise<BrowserServer> => {
    if (!current) {
      launches++
      const launching = chromium.launchServer(launchOptions)
      current = launching
      launching.then(
        (server) => server.on('close', () => current === launching && (current = undefined)),
        () => current === launching && (current = undefined),
      )
    }
    return current
  }
  const http = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/ws') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /ws is the only route\n')
      return
    }
    browserServer().then(
      (server) => res.writeHead(200, { 'content-type': 'text/plain' }).end(server.wsEndpoint()),
      (error: unknown) =>
        res
          .writeHead(500, { 'content-type': 'text/plain' })
          .end(`could not launch chromium: ${error instanceof Error ? error.message : String(error)}`),
    )
  })
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject)
    http.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = http.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    get launches() {
      return launches
    },
    async close() {
      await new Promise<void>((resolve) => http.close(() => resolve()))
      const server = await current?.catch(() => undefined)
      current = undefined
      await server?.close()
    },
  }
}

/** The broker's browser endpoint, or a one-line error naming the broker and what it answered. */
export async function brokerEndpoint(brokerUrl: string): Promise<string> {
  let res: Response
  try {
    res = await fetch(`${brokerUrl}/ws`)
  } catch (error) {
    throw new Error(
      `the test browser broker at ${brokerUrl} (${BROWSER_BROKER_ENV}) does not answer: ${error instanceof Error ? error.message : String(error)}`,
    )
  }
  const text = await res.text()
  if (!res.ok) throw new Error(`the test browser broker at ${brokerUrl} answered ${res.status}: ${text.trim()}`)
  return text
}
