#!/usr/bin/env node
// Browser client benchmark (a bench, not a test): the real `dsh web` and Debian chromium on
// loopback. Prints each figure with a ratio against a baseline taken in the same run.
//   initial JS      bytes of JavaScript the page transferred (compressed) until it was ready;
//                   goal under 250 KB. Baseline: the same bytes uncompressed.
//   shell painted   navigation to the shell's first commit (`dsh-shell`), median of RUNS loads.
//   ready           navigation to `dsh-ready` (browser halves loaded too).
//                   Baseline of both: navigation to a tiny JSON file from the same host.
//   1,000 sessions  ready with 1,000 sessions in the sidebar vs with 1; a search keystroke over
//                   them (input to filtered list painted); the longest main-thread task seen.
// RUNS (default 5). Needs `node scripts/build-client.mjs` (done here) and /usr/bin/chromium.
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
execFileSync(process.execPath, [root + 'scripts/build.mjs', '--quiet'], { stdio: 'inherit' })
execFileSync(process.execPath, [root + 'scripts/build-client.mjs', '--quiet'], { stdio: 'inherit' })
const { startWebApp, launchBrowser, hasChromium } = await import(root + 'packages/test-support/web-testkit/dist/index.js')
if (!hasChromium()) {
  console.log('web-client bench: no chromium at /usr/bin/chromium (set DSH_CHROMIUM); skipped')
  process.exit(0)
}
const RUNS = Number(process.env.RUNS ?? 5)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const kb = (n) => `${(n / 1024).toFixed(1)} KB`
const ms = (n) => `${n.toFixed(1)} ms`

const app = await startWebApp({ steps: [] })
const browser = await launchBrowser()

async function load(url, { waitReady = true } = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  const page = await context.newPage()
  await page.addInitScript(() => {
    globalThis.__longest = 0
    try {
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) globalThis.__longest = Math.max(globalThis.__longest, entry.duration)
      }).observe({ type: 'longtask', buffered: true })
    } catch {}
  })
  await page.goto(url)
  if (waitReady) await page.waitForSelector('html[data-ready="true"]')
  return { page, context }
}

async function readyFigures(url) {
  const { page, context } = await load(url)
  const figures = await page.evaluate(() => {
    const ready = performance.getEntriesByName('dsh-ready')[0]?.startTime ?? NaN
    const shell = performance.getEntriesByName('dsh-shell')[0]?.startTime ?? NaN
    const scripts = performance.getEntriesByType('resource').filter((r) => r.initiatorType === 'script' || r.name.endsWith('.js'))
    return {
      ready,
      shell,
      transferred: scripts.reduce((n, r) => n + r.encodedBodySize, 0),
      decoded: scripts.reduce((n, r) => n + r.decodedBodySize, 0),
      files: scripts.length,
      longest: globalThis.__longest,
    }
  })
  await context.close()
  return figures
}

async function baselineMs() {
  const context = await browser.newContext()
  const page = await context.newPage()
  await page.goto(app.url + '/client-manifest.json')
  const t = await page.evaluate(() => performance.getEntriesByType('navigation')[0].responseEnd)
  await context.close()
  return t
}

try {
  // A session exists first (first run would make one anyway).
  await app.call('sessions.create', { cwd: app.cwd })
  await readyFigures(app.url) // warm the host's compression cache and the browser's code cache
  const one = []
  const base = []
  for (let i = 0; i < RUNS; i++) {
    base.push(await baselineMs())
    one.push(await readyFigures(app.url))
  }
  const sizes = one[0]
  console.log(`initial JS         ${kb(sizes.transferred)} compressed in ${sizes.files} files (${kb(sizes.decoded)} uncompressed: x${(sizes.transferred / sizes.decoded).toFixed(2)}); goal < 250 KB: ${sizes.transferred < 250 * 1024 ? 'met' : 'MISSED'}`)
  const ready1 = median(one.map((f) => f.ready))
  const baseline = median(base)
  const shell1 = median(one.map((f) => f.shell))
  console.log(`shell painted      ${ms(shell1)} median of ${RUNS}; baseline tiny JSON ${ms(baseline)}: x${(shell1 / baseline).toFixed(1)}`)
  console.log(`ready (1 session)  ${ms(ready1)} (halves loaded: ${sizes.files} JS files in all): x${(ready1 / baseline).toFixed(1)}`)

  // 1,000 sessions.
  const started = Date.now()
  for (let i = 0; i < 999; i += 25) {
    await Promise.all(Array.from({ length: Math.min(25, 999 - i) }, (_, j) => app.call('sessions.create', { cwd: app.cwd, title: `bench session ${i + j}` })))
  }
  const total = (await app.call('sessions.list', { limit: 1 })).total
  console.log(`(created ${total} sessions in ${((Date.now() - started) / 1000).toFixed(1)} s)`)
  const many = []
  for (let i = 0; i < RUNS; i++) many.push(await readyFigures(app.url))
  const readyMany = median(many.map((f) => f.ready))
  console.log(`ready (1,000)      ${ms(readyMany)} median of ${RUNS}: x${(readyMany / ready1).toFixed(2)} of the 1-session page`)
  const { page, context } = await load(app.url)
  await page.waitForFunction(() => document.querySelectorAll('.session-item').length >= 100)
  const keystroke = await page.evaluate(async () => {
    const input = document.querySelector('input.search')
    const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set
    const t0 = performance.now()
    setter.call(input, 'session 99')
    input.dispatchEvent(new Event('input', { bubbles: true }))
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)))
    return { ms: performance.now() - t0, rows: document.querySelectorAll('.session-item').length }
  })
  const longest = await page.evaluate(() => globalThis.__longest)
  console.log(`search keystroke   ${ms(keystroke.ms)} over 1,000 sessions -> ${keystroke.rows} rows painted; longest main-thread task ${ms(longest)} (goal: none over 50 ms)`)
  await context.close()
} finally {
  await browser.close()
  await app.close()
}
