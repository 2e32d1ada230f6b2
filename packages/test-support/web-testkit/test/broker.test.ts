// The test browser broker: one Chromium per vitest run, launched on the first request only.
import { afterAll, describe, expect, it } from 'vitest'
import { chromium } from 'playwright-core'
import {
  BROWSER_BROKER_ENV,
  BROWSER_LAUNCH_OPTIONS,
  hasChromium,
  launchBrowser,
  startBrowserBroker,
} from '../src/index.ts'

describe.skipIf(!hasChromium())('browser broker', () => {
  const brokers: Array<{ close(): Promise<void> }> = []
  afterAll(async () => {
    for (const broker of brokers) await broker.close()
  })

  it('launches nothing until asked, then one browser that every client shares', async () => {
    const broker = await startBrowserBroker(BROWSER_LAUNCH_OPTIONS)
    brokers.push(broker)
    expect(broker.launches).toBe(0)
    const [first, second] = await Promise.all([
      fetch(`${broker.url}/ws`).then((r) => r.text()),
      fetch(`${broker.url}/ws`).then((r) => r.text()),
    ])
    expect(first).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\//)
    expect(second).toBe(first)
    expect(broker.launches).toBe(1)

    // Two clients, one browser: a client's close() only disconnects it; the other keeps working.
    const a = await chromium.connect(first)
    const b = await chromium.connect(first)
    const page = await (await a.newContext()).newPage()
    await page.setContent('<p id="x">one browser</p>')
    expect(await page.textContent('#x')).toBe('one browser')
    await a.close()
    const other = await (await b.newContext()).newPage()
    await other.setContent('<p id="y">still here</p>')
    expect(await other.textContent('#y')).toBe('still here')
    await b.close()
    expect(await fetch(`${broker.url}/ws`).then((r) => r.text())).toBe(first)
    expect(broker.launches).toBe(1)
  })

  it('answers a launch failure with 500 and the reason, and any other route with 404', async () => {
    const broker = await startBrowserBroker({ ...BROWSER_LAUNCH_OPTIONS, executablePath: '/nonexistent/chromium' })
    brokers.push(broker)
    const failed = await fetch(`${broker.url}/ws`)
    expect(failed.status).toBe(500)
    expect(await failed.text()).toMatch(/^could not launch chromium: .*nonexistent/s)
    expect((await fetch(`${broker.url}/other`)).status).toBe(404)

    const saved = process.env[BROWSER_BROKER_ENV]
    process.env[BROWSER_BROKER_ENV] = broker.url
    try {
      await expect(launchBrowser()).rejects.toThrow(/test browser broker at .* answered 500: could not launch chromium/)
    } finally {
      process.env[BROWSER_BROKER_ENV] = saved
    }
  })

  it('launchBrowser() asks the broker named in the environment, which the global setup sets', async () => {
    // This suite's global setup started the run's broker and handed its URL to the workers.
    expect(process.env[BROWSER_BROKER_ENV]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    const broker = await startBrowserBroker(BROWSER_LAUNCH_OPTIONS)
    brokers.push(broker)
    const saved = process.env[BROWSER_BROKER_ENV]
    process.env[BROWSER_BROKER_ENV] = broker.url
    try {
      const browser = await launchBrowser()
      // The broker launched the browser: launchBrowser() connected instead of launching its own.
      expect(broker.launches).toBe(1)
      const page = await (await browser.newContext()).newPage()
      await page.setContent('<p>shared</p>')
      expect(await page.textContent('p')).toBe('shared')
      await browser.close()
      // Closing the connection left the shared browser running for the next file.
      const next = await launchBrowser()
      expect(broker.launches).toBe(1)
      await next.close()
    } finally {
      process.env[BROWSER_BROKER_ENV] = saved
    }
  })
})
