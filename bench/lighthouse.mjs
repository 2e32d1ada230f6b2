#!/usr/bin/env node
// Lighthouse on the conversation view of `dsh web` (issue 38: accessibility and best practices at
// least 95, performance at least 90). Not part of CI: it takes a minute or more.
//
// It boots a real `dsh web` against the scripted model (@dsh/llm-mock-server), holds one
// conversation in it (a prompt, a bash tool card, a Markdown answer with a code block and a
// table), then runs Lighthouse (npm `lighthouse`, a devDependency of the root) in Debian chromium
// on that session's page, once with Lighthouse's mobile defaults (simulated slow 4G and a 4x
// slower CPU) and once with its desktop preset, and prints the three scores of each and every
// audit that cost points. Needs `node scripts/build-client.mjs` first.
// usage: node bench/lighthouse.mjs [--json figures.json] [--reports DIR] [--only mobile|desktop] [--runs N]
//          [--no-session-data] [--no-defer]
//   --reports keeps each run's full Lighthouse report (DIR/<mobile|desktop>[-<run>].json).
//   --runs N repeats each preset N times on the same session (default 1). The scores follow the
//   machine's load (Lighthouse multiplies the CPU time it observes), so each run prints the
//   1-minute load average before and after it.
//   --no-session-data serves the page without the session's replay embedded (frontend-static's
//   sessionDataBytes 0), so its first render waits for the events stream as it did before.
//   --no-defer preloads and loads every browser half at once (frontend-static's deferHalves
//   false), as before the halves marked `dsh.clientLoad: "deferred"` waited for the first screen.
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { loadavg } from 'node:os'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const CHROMIUM = process.env.DSH_CHROMIUM || '/usr/bin/chromium'
const args = process.argv.slice(2)
const option = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined)
const jsonOut = option('--json')
const reports = option('--reports')
const only = option('--only')
const runs = Math.max(1, Number(option('--runs') ?? 1))
const noSessionData = args.includes('--no-session-data')
const noDefer = args.includes('--no-defer')
if (!Number.isInteger(runs)) {
  console.error(`bench/lighthouse: --runs takes a whole number, not ${JSON.stringify(option('--runs'))}`)
  process.exit(2)
}
const load = () => loadavg()[0].toFixed(2)
const GOALS = { accessibility: 95, 'best-practices': 95, performance: 90 }

const requireRoot = createRequire(`${root}package.json`)
let lighthouseMain
try {
  lighthouseMain = requireRoot.resolve('lighthouse')
} catch {
  console.error('bench/lighthouse: the lighthouse package is not installed (run pnpm install at the root)')
  process.exit(1)
}
const { default: lighthouse, desktopConfig } = await import(pathToFileURL(lighthouseMain).href)
const chromeLauncher = await import(pathToFileURL(createRequire(lighthouseMain).resolve('chrome-launcher')).href)
const { startWebApp, launchBrowser } = await import(`${root}packages/test-support/web-testkit/dist/index.js`)

const app = await startWebApp({
  patch:
    noSessionData || noDefer
      ? `- id: frontend-static\n  config:\n${noSessionData ? '    sessionDataBytes: 0\n' : ''}${noDefer ? '    deferHalves: false\n' : ''}`
      : undefined,
  steps: [
    { toolCalls: [{ name: 'bash', arguments: { command: 'ls -1', description: 'List the project files' } }] },
    {
      text:
        'The project holds two files:\n\n| file | what it is |\n| --- | --- |\n| `README.md` | the introduction |\n' +
        '| `main.py` | the entry point |\n\nThe entry point:\n\n```python\nprint("hi")\n```\n',
    },
  ],
})
let chrome
try {
  writeFileSync(`${app.cwd}/README.md`, '# demo\n')
  writeFileSync(`${app.cwd}/main.py`, 'print("hi")\n')
  // One conversation, typed and answered in a browser as a user would.
  const browser = await launchBrowser()
  let url
  try {
    const page = await browser.newPage()
    await page.goto(app.url)
    await page.waitForSelector('html[data-ready="true"]')
    await page.waitForURL(/\/s\//)
    await page.locator('textarea[data-composer]').fill('What is in this project?')
    await page.locator('textarea[data-composer]').press('Enter')
    await page.locator('[data-node="assistant"]', { hasText: 'The entry point' }).waitFor({ timeout: 60_000 })
    url = page.url()
  } finally {
    await browser.close()
  }

  chrome = await chromeLauncher.launch({
    chromePath: CHROMIUM,
    chromeFlags: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  })
  const categories = Object.keys(GOALS)
  const figures = {}
  const presets = [
    ['mobile', undefined],
    ['desktop', desktopConfig],
  ].filter(([preset]) => !only || only === preset)
  for (const [preset, config] of presets.flatMap((p) => Array.from({ length: runs }, () => p))) {
    const run = Object.keys(figures).filter((k) => k.startsWith(preset)).length + 1
    const label = runs > 1 ? `${preset}-${run}` : preset
    const loadBefore = load()
    const started = Date.now()
    const result = await lighthouse(
      url,
      { port: chrome.port, output: 'json', logLevel: 'error', onlyCategories: categories },
      config,
    )
    const lhr = result.lhr
    if (reports) writeFileSync(`${reports}/${label}.json`, result.report)
    if (lhr.runtimeError) throw new Error(`${label}: ${lhr.runtimeError.code}: ${lhr.runtimeError.message}`)
    const scores = Object.fromEntries(categories.map((c) => [c, Math.round((lhr.categories[c]?.score ?? 0) * 100)]))
    const lost = []
    for (const c of categories)
      for (const ref of lhr.categories[c].auditRefs) {
        const audit = lhr.audits[ref.id]
        if (ref.weight > 0 && audit.score !== null && audit.score < 1)
          lost.push(`${c}: ${ref.id} (${Math.round(audit.score * 100)}) ${audit.displayValue ?? ''}`.trim())
      }
    const metrics = [
      'first-contentful-paint',
      'largest-contentful-paint',
      'total-blocking-time',
      'cumulative-layout-shift',
    ]
      .map((id) => `${id} ${lhr.audits[id]?.displayValue ?? '?'}`)
      .join(', ')
    const loadAfter = load()
    figures[label] = { scores, lost, metrics, load: [Number(loadBefore), Number(loadAfter)] }
    console.log(
      `${label}: ${categories
        .map((c) => `${c} ${scores[c]} (goal ${GOALS[c]}: ${scores[c] >= GOALS[c] ? 'met' : 'MISSED'})`)
        .join(', ')} [${((Date.now() - started) / 1000).toFixed(0)} s, load ${loadBefore} -> ${loadAfter}]`,
    )
    console.log(`  ${metrics}`)
    for (const line of lost) console.log(`  - ${line}`)
  }
  const version = JSON.parse(readFileSync(requireRoot.resolve('lighthouse/package.json'), 'utf8')).version
  console.log(
    `lighthouse ${version}, ${CHROMIUM}, ${url.replace(/\/s\/.*/, '/s/<session>')}${noSessionData ? ', no session data in the page' : ''}${noDefer ? ', no deferred halves' : ''}`,
  )
  if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify(figures, null, 2)}\n`)
} finally {
  await chrome?.kill()
  await app.close()
}
