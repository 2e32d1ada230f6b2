#!/usr/bin/env node
// Initial JS of `dsh web` (issue 38 budget: under 250 KB compressed): boots a real `dsh web` with
// the mock model, loads the page twice in Debian chromium (the first warms the host's compression
// cache) and prints the JavaScript bytes the page transferred until `html[data-ready]`, with the
// biggest files. Needs `node scripts/build-client.mjs` first.
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../../../..', import.meta.url))
const { startWebApp, launchBrowser } = await import(root + 'packages/test-support/web-testkit/dist/index.js')
const app = await startWebApp({ steps: [] })
const browser = await launchBrowser()
const kb = (n) => `${(n / 1024).toFixed(1)} KB`
try {
  let figures
  for (let i = 0; i < 2; i++) {
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(app.url)
    await page.waitForSelector('html[data-ready="true"]')
    figures = await page.evaluate(() =>
      performance
        .getEntriesByType('resource')
        .filter((r) => r.initiatorType === 'script' || r.name.endsWith('.js'))
        .map((r) => ({ name: new URL(r.name).pathname, transferred: r.encodedBodySize, decoded: r.decodedBodySize })),
    )
    await context.close()
  }
  const total = figures.reduce((n, f) => n + f.transferred, 0)
  const decoded = figures.reduce((n, f) => n + f.decoded, 0)
  console.log(
    `initial JS ${kb(total)} compressed in ${figures.length} files (${kb(decoded)} uncompressed); goal < 250 KB: ${total < 250 * 1024 ? 'met' : 'MISSED'}`,
  )
  for (const f of figures.sort((a, b) => b.transferred - a.transferred).slice(0, 12))
    console.log(`  ${kb(f.transferred).padStart(9)}  ${f.name}`)
} finally {
  await browser.close()
  await app.close()
}
