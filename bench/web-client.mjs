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
//   500 turns       first paint of a 500-turn session (navigation to its last answer on screen)
//                   vs a 1-turn session.
//   100,000 chunks  one streamed answer of 100,000 reasoning deltas: the longest main-thread task
//                   while it streams (goal: none over 50 ms) and the time to the final text.
// Whatever conversation view the web bundle mounts is measured (the shell's fallback otherwise).
// RUNS (default 5). ONLY=ready,sessions,history,stream runs only those parts (default: all).
// CHUNKS (default 100000), STREAM_TIMEOUT_S (default 900), SETTLE_MS (default 1000: long tasks are counted this long after the final text shows), PROBE=1 counts stream reads and DOM mutations during the stream, TASK_CPU=1 traces the page's main thread and gives each long task's thread CPU time (a loaded machine deschedules the renderer mid-task) and the TASK_CPU_TOP (default 6) biggest tasks by CPU, TRACE=file.json saves a Chromium trace of the stream part (TRACE_PROFILE=0: without CPU samples, which add their own GC work). Needs `node scripts/build-client.mjs` (done here) and /usr/bin/chromium.
import { execFileSync } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
execFileSync(process.execPath, [root + 'scripts/build.mjs', '--quiet'], { stdio: 'inherit' })
execFileSync(process.execPath, [root + 'scripts/build-client.mjs', '--quiet'], { stdio: 'inherit' })
const { startWebApp, launchBrowser, hasChromium } = await import(
  root + 'packages/test-support/web-testkit/dist/index.js'
)
if (!hasChromium()) {
  console.log('web-client bench: no chromium at /usr/bin/chromium (set DSH_CHROMIUM); skipped')
  process.exit(0)
}
const RUNS = Number(process.env.RUNS ?? 5)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const kb = (n) => `${(n / 1024).toFixed(1)} KB`
const ms = (n) => `${n.toFixed(1)} ms`

const ONLY = new Set((process.env.ONLY ?? 'ready,sessions,history,stream').split(',').map((s) => s.trim()))
const TURNS = Number(process.env.TURNS ?? 500)
const CHUNKS = Number(process.env.CHUNKS ?? 100_000)
// Request N of the mock model is answered by step N: only the parts that run get steps, in the
// order they prompt (history's one-turn and TURNS-turn sessions, then the stream).
const app = await startWebApp({
  steps: [
    ...(ONLY.has('history')
      ? [
          { text: 'The one-turn answer.' },
          ...Array.from({ length: TURNS }, (_, i) => ({ text: `Answer number ${i + 1}.` })),
        ]
      : []),
    ...(ONLY.has('stream')
      ? [{ events: [...Array.from({ length: CHUNKS }, () => ({ reasoning: 'x ' })), { text: 'Done thinking.' }] }]
      : []),
  ],
})
const browser = await launchBrowser()

async function load(url, { waitReady = true } = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  const page = await context.newPage()
  if (process.env.PROBE)
    await page.addInitScript(() => {
      globalThis.__probe = true
    })
  await page.addInitScript(() => {
    globalThis.__longest = 0
    globalThis.__over50 = 0
    globalThis.__tasks = 0
    globalThis.__long = []
    try {
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
          globalThis.__longest = Math.max(globalThis.__longest, entry.duration)
          globalThis.__tasks++
          if (entry.duration > 50)
            globalThis.__over50++, globalThis.__long.push([Math.round(entry.startTime), Math.round(entry.duration)])
        }
      }).observe({ type: 'longtask', buffered: true })
    } catch {}
    // Stream part: when the final text entered the page (page clock), from a MutationObserver that
    // looks only at batches adding nodes (a few dozen over a stream), not from the 500 ms poll.
    addEventListener('DOMContentLoaded', () =>
      new MutationObserver((records) => {
        if (!globalThis.__watchFinal || globalThis.__finalAt !== undefined) return
        if (records.some((r) => r.addedNodes.length > 0) && document.body.textContent.includes(globalThis.__watchFinal))
          globalThis.__finalAt = performance.now()
      }).observe(document.body, { childList: true, subtree: true }),
    )
    // PROBE=1 (stream part): counts stream reads and DOM churn, reported with the figures.
    if (globalThis.__probe) {
      const probe = (globalThis.__probeCounts = { reads: 0, readChars: 0, added: 0, removed: 0, text: 0, attrs: 0 })
      const read = ReadableStreamDefaultReader.prototype.read
      ReadableStreamDefaultReader.prototype.read = function () {
        return read.call(this).then((r) => {
          if (!r.done && r.value != null) probe.reads++, (probe.readChars += r.value.length ?? 0)
          return r
        })
      }
      const count = (node) => 1 + [...node.childNodes].reduce((n, c) => n + count(c), 0)
      addEventListener('DOMContentLoaded', () =>
        new MutationObserver((records) => {
          if (!globalThis.__probeOn) return
          for (const r of records) {
            if (r.type === 'childList') {
              for (const n of r.addedNodes) probe.added += count(n)
              for (const n of r.removedNodes) probe.removed += count(n)
            } else if (r.type === 'characterData') probe.text++
            else probe.attrs++
          }
        }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true }),
      )
    }
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
    const scripts = performance
      .getEntriesByType('resource')
      .filter((r) => r.initiatorType === 'script' || r.name.endsWith('.js'))
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

async function waitIdle(sessionId, turns = 1) {
  for (;;) {
    const row = (await app.call('sessions.list', { limit: 500 })).sessions.find((r) => r.sessionId === sessionId)
    if (row && row.turns >= turns && row.status !== 'running' && row.queued === 0) return
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
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
  if (ONLY.has('ready') || ONLY.has('sessions')) {
    const one = []
    const base = []
    for (let i = 0; i < RUNS; i++) {
      base.push(await baselineMs())
      one.push(await readyFigures(app.url))
    }
    const sizes = one[0]
    console.log(
      `initial JS         ${kb(sizes.transferred)} compressed in ${sizes.files} files (${kb(sizes.decoded)} uncompressed: x${(sizes.transferred / sizes.decoded).toFixed(2)}); goal < 250 KB: ${sizes.transferred < 250 * 1024 ? 'met' : 'MISSED'}`,
    )
    const ready1 = median(one.map((f) => f.ready))
    const baseline = median(base)
    const shell1 = median(one.map((f) => f.shell))
    console.log(
      `shell painted      ${ms(shell1)} median of ${RUNS}; baseline tiny JSON ${ms(baseline)}: x${(shell1 / baseline).toFixed(1)}`,
    )
    console.log(
      `ready (1 session)  ${ms(ready1)} (halves loaded: ${sizes.files} JS files in all): x${(ready1 / baseline).toFixed(1)}`,
    )

    if (ONLY.has('sessions')) {
      // 1,000 sessions.
      const started = Date.now()
      for (let i = 0; i < 999; i += 25) {
        await Promise.all(
          Array.from({ length: Math.min(25, 999 - i) }, (_, j) =>
            app.call('sessions.create', { cwd: app.cwd, title: `bench session ${i + j}` }),
          ),
        )
      }
      const total = (await app.call('sessions.list', { limit: 1 })).total
      console.log(`(created ${total} sessions in ${((Date.now() - started) / 1000).toFixed(1)} s)`)
      const many = []
      for (let i = 0; i < RUNS; i++) many.push(await readyFigures(app.url))
      const readyMany = median(many.map((f) => f.ready))
      console.log(
        `ready (1,000)      ${ms(readyMany)} median of ${RUNS}: x${(readyMany / ready1).toFixed(2)} of the 1-session page`,
      )
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
      console.log(
        `search keystroke   ${ms(keystroke.ms)} over 1,000 sessions -> ${keystroke.rows} rows painted; longest main-thread task ${ms(longest)} (goal: none over 50 ms)`,
      )
      await context.close()
    }
  }

  if (ONLY.has('history')) {
    // History: a 1-turn and a TURNS-turn session; first paint = navigation until the last answer shows.
    const short = (await app.call('sessions.create', { cwd: app.cwd, title: 'one turn' })).session.sessionId
    await app.call('sessions.prompt', { sessionId: short, text: 'one' })
    await waitIdle(short)
    const long = (await app.call('sessions.create', { cwd: app.cwd, title: 'many turns' })).session.sessionId
    const t0 = Date.now()
    for (let i = 0; i < TURNS; i++) await app.call('sessions.prompt', { sessionId: long, text: `question ${i + 1}` })
    await waitIdle(long, TURNS)
    console.log(`(ran ${TURNS} turns in ${((Date.now() - t0) / 1000).toFixed(1)} s)`)
    const paint = async (id, text) => {
      const { page, context } = await load(`${app.url}/s/${encodeURIComponent(id)}`, { waitReady: false })
      await page.waitForFunction((t) => document.body.innerText.includes(t), text, { timeout: 120_000 })
      const t = await page.evaluate(() => performance.now())
      const longest = await page.evaluate(() => globalThis.__longest)
      await context.close()
      return { t, longest }
    }
    const p1 = [],
      pN = []
    for (let i = 0; i < RUNS; i++) {
      p1.push(await paint(short, 'The one-turn answer.'))
      pN.push(await paint(long, `Answer number ${TURNS}.`))
    }
    const m1 = median(p1.map((x) => x.t)),
      mN = median(pN.map((x) => x.t))
    console.log(
      `${TURNS}-turn paint     ${ms(mN)} median of ${RUNS}: x${(mN / m1).toFixed(2)} of a 1-turn session (${ms(m1)}); longest task ${ms(Math.max(...pN.map((x) => x.longest)))} (1-turn page: ${ms(Math.max(...p1.map((x) => x.longest)))})`,
    )
  }

  if (ONLY.has('stream')) {
    // CHUNKS reasoning deltas streamed into an open page. Every wait is bounded and says what it
    // waited for; progress is read from three places (the mock model, the host's session row, the
    // page) so a stall names where it happened.
    const LIMIT_S = Number(process.env.STREAM_TIMEOUT_S ?? 900)
    const stream = (await app.call('sessions.create', { cwd: app.cwd, title: 'stream' })).session.sessionId
    const opened = await load(`${app.url}/s/${encodeURIComponent(stream)}`)
    const { page } = opened
    await page.waitForSelector('.dsh-chat, [role="log"]', { timeout: 120_000 }).catch(() => {
      throw new Error('stream: the conversation view did not mount within 120 s')
    })
    const pageT0 = await page.evaluate(() => {
      globalThis.__probeOn = true
      globalThis.__watchFinal = 'Done thinking.'
      if (globalThis.__probeCounts) for (const k in globalThis.__probeCounts) globalThis.__probeCounts[k] = 0
      globalThis.__longest = 0
      globalThis.__over50 = 0
      globalThis.__tasks = 0
      globalThis.__long = []
      return performance.now()
    })
    // TASK_CPU=1 (or TRACE): a trace of the page's main thread gives each long task's thread CPU
    // time besides its wall time. On a loaded machine a task can last 50 ms while it ran for 5: the
    // renderer was descheduled. The CPU figure is what the page's own work costs.
    const tracePath =
      process.env.TRACE || (process.env.TASK_CPU ? join(tmpdir(), `web-client-${process.pid}.json`) : undefined)
    if (tracePath && !process.env.TRACE)
      await browser.startTracing(page, { path: tracePath, categories: ['disabled-by-default-devtools.timeline'] })
    if (process.env.TRACE)
      await browser.startTracing(page, {
        path: process.env.TRACE,
        categories: [
          'devtools.timeline',
          'disabled-by-default-devtools.timeline',
          'v8.execute',
          ...(process.env.TRACE_PROFILE === '0' ? [] : ['disabled-by-default-v8.cpu_profiler']),
          'v8',
          'blink.user_timing',
          'disabled-by-default-v8.gc',
          'blink_gc',
          'disabled-by-default-blink_gc',
          ...(process.env.TRACE_CATEGORIES ? process.env.TRACE_CATEGORIES.split(',') : []),
        ],
      })
    const servedBefore = app.mock.served
    const s0 = Date.now()
    await app.call('sessions.prompt', { sessionId: stream, text: 'think a lot' })
    const shows = () => page.evaluate(() => document.body.textContent.includes('Done thinking.'))
    let hostDoneAt
    for (;;) {
      // One cheap check every 500 ms (no per-frame polling that would add work to the page's frames).
      if (await shows()) break
      const waited = (Date.now() - s0) / 1000
      if (hostDoneAt === undefined) {
        const row = (await app.call('sessions.list', { limit: 50 })).sessions.find((r) => r.sessionId === stream)
        if (row && row.turns >= 1 && row.status !== 'running') hostDoneAt = Date.now()
      }
      if (waited > LIMIT_S) {
        const served = app.mock.served - servedBefore
        throw new Error(
          `stream: waited ${LIMIT_S} s for the page to show the final text 'Done thinking.'; mock model requests served in this part: ${served}; host turn finished: ${hostDoneAt ? `yes, ${((hostDoneAt - s0) / 1000).toFixed(1)} s after the prompt` : 'no'}`,
        )
      }
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
    const streamMs = Date.now() - s0
    // The stream's garbage is collected after its end (a major GC's finalizer pass, a Blink heap
    // sweep), and the longtask observer delivers entries a task later: count the SETTLE_MS (default
    // 1000) after the final text showed too.
    await new Promise((resolve) => setTimeout(resolve, Number(process.env.SETTLE_MS ?? 1000)))
    const { longest, over50, long, shownAt, probe, finalAt } = await page.evaluate(() => ({
      longest: globalThis.__longest,
      over50: globalThis.__over50,
      long: globalThis.__long,
      shownAt: performance.now(),
      probe: globalThis.__probeCounts,
      finalAt: globalThis.__finalAt,
    }))
    if (tracePath) await browser.stopTracing()
    console.log(
      `${CHUNKS.toLocaleString()} chunks  final text after ${ms(streamMs)}${hostDoneAt ? ` (host turn done after ${ms(hostDoneAt - s0)})` : ''}; longest main-thread task while streaming (and SETTLE_MS after) ${ms(longest)}, ${over50} task${over50 === 1 ? '' : 's'} over 50 ms (goal: none): ${longest <= 50 ? 'met' : 'MISSED'}`,
    )
    // Where the long tasks fell: ms after the prompt call, with the page's clock (the last check is ~500 ms after the text showed).
    if (finalAt !== undefined)
      console.log(`  final text entered the page +${Math.round(finalAt - pageT0)} ms after the prompt (page clock)`)
    if (long.length)
      console.log(
        `  tasks over 50 ms at (ms after the prompt, duration): ${long.map(([at, d]) => `+${Math.round(at - pageT0)}:${d}`).join(', ')}; final text seen by +${Math.round(shownAt - pageT0 - Number(process.env.SETTLE_MS ?? 1000))}`,
      )
    if (tracePath) {
      // Renderer main thread: tasks over 50 ms of wall time, with their thread CPU time.
      const events = JSON.parse(readFileSync(tracePath, 'utf8')).traceEvents
      const main = events.find((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain')
      const tasks = events.filter(
        (e) => main && e.pid === main.pid && e.tid === main.tid && e.name === 'RunTask' && e.ph === 'X',
      )
      const long = tasks.filter((e) => e.dur > 50_000)
      const cpu = (e) => (e.tdur ?? e.dur) / 1000
      const maxCpu = Math.max(0, ...tasks.map(cpu))
      console.log(
        `  trace: ${long.length} task${long.length === 1 ? '' : 's'} over 50 ms wall (${long.map((e) => `${Math.round(e.dur / 1000)} ms wall / ${Math.round(cpu(e))} ms CPU`).join(', ') || 'none'}); longest task by CPU ${ms(maxCpu)}, ${tasks.filter((e) => cpu(e) > 50).length} over 50 ms of CPU`,
      )
      // The biggest tasks by CPU (the trace's first task also holds the tracing's own start-up: skipped),
      // placed after the prompt with the trace clock (the prompt call is ~the first traced task).
      const t0 = tasks.length ? Math.min(...tasks.map((e) => e.ts)) : 0
      const top = tasks
        .filter((e) => e.ts !== t0)
        .sort((a, b) => cpu(b) - cpu(a))
        .slice(0, Number(process.env.TASK_CPU_TOP ?? 6))
      const over = (n) => tasks.filter((e) => e.ts !== t0 && cpu(e) > n).length
      console.log(
        `  trace: biggest tasks by CPU (ms after tracing began: CPU / wall): ${top.map((e) => `+${Math.round((e.ts - t0) / 1000)}: ${cpu(e).toFixed(1)} / ${(e.dur / 1000).toFixed(1)}`).join(', ')}; tasks over 8 / 12 / 16 ms of CPU: ${over(8)} / ${over(12)} / ${over(16)}`,
      )
      if (!process.env.TRACE) rmSync(tracePath, { force: true })
    }
    if (probe)
      console.log(
        `  probe: ${probe.reads} stream reads (${probe.readChars} chars/bytes), DOM nodes added ${probe.added}, removed ${probe.removed}, text changes ${probe.text}, attribute changes ${probe.attrs}`,
      )
    await opened.context.close()
  }
} finally {
  await browser.close()
  await app.close()
}
